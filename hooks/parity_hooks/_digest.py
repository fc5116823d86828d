"""Canonical hashing: byte chunks, JSON values, tensors and RNG states, as 16-hex SHA-256 prefixes.

The standard library suffices for bytes and JSON; tensor hashing takes what torch hands it (a
tensor is only touched through its own methods, so this module never imports torch itself), and
the numpy state of an RNG is normalised through ``tolist``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, Iterable, List, Mapping, Tuple

__all__ = ["ABSENT", "ZERO", "SEP", "digest_bytes", "digest_json", "hash_tensor", "tensor_digest",
           "named_tensors_digest", "json_default", "rng_digest_of_states", "replicated_rng_digest",
           "combine_rng_digests"]

#: How a per-tensor digest is named: ``<param> · <kind>``, ``<param> · expert <e> · <kind>``.
SEP = " \u00b7 "


class _Absent:
    """An optimizer state that does not exist (yet): a fresh optimizer before its first step, e.g.
    after loading without optimizer states. Hashed as a marker, never as zeros."""

    def __repr__(self) -> str:
        return "ABSENT"


#: The marker an absent tensor is hashed as.
ABSENT = _Absent()


class _Zero:
    """A gradient buffer that holds nothing to accumulate onto: ``None`` or all zeros. The next
    backward writes the same gradient into either, so both hash as this one marker."""

    def __repr__(self) -> str:
        return "ZERO"


#: The marker an empty (``None`` or all-zero) gradient buffer is hashed as.
ZERO = _Zero()


def digest_bytes(chunks: Iterable[bytes]) -> str:
    """SHA-256 (first 16 hex digits) of byte chunks, in order."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()[:16]


def json_default(value: Any) -> Any:
    """JSON form of what ``json`` cannot write: tensors and arrays through ``tolist``, the rest
    through ``repr``."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)


def digest_json(value: Any) -> str:
    """Digest of a JSON-able value (keys sorted; tensors and other objects as :func:`json_default`)."""
    return digest_bytes([json.dumps(value, sort_keys=True, default=json_default).encode()])


def hash_tensor(h: "hashlib._Hash", name: str, tensor: Any) -> None:
    """Feeds ``name``, the tensor's dtype, shape and contiguous CPU bytes into ``h`` (``ABSENT``,
    ``ZERO``: the name and a marker). Bytes are taken as stored (bf16 as bf16), so a precision
    change shows."""
    h.update(name.encode())
    if tensor is ABSENT or tensor is ZERO:
        h.update(b"<absent>" if tensor is ABSENT else b"<zero>")
        return
    t = tensor.detach().cpu().contiguous()
    h.update(str(t.dtype).encode())
    h.update(repr(tuple(t.shape)).encode())
    h.update(_tensor_bytes(t))


def _tensor_bytes(t: Any) -> bytes:
    try:
        return t.numpy().tobytes()
    except TypeError:  # dtypes numpy lacks (bfloat16, float8): their raw bytes
        import torch

        return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_digest(tensor: Any) -> str:
    """The digest of one tensor (a per-tensor entry)."""
    h = hashlib.sha256()
    hash_tensor(h, "", tensor)
    return h.hexdigest()[:16]


def named_tensors_digest(tensors: Iterable[Tuple[str, Any]]) -> str:
    """Digest of named tensors in name order, so it does not depend on iteration order."""
    h = hashlib.sha256()
    for name, tensor in sorted(tensors, key=lambda item: item[0]):
        hash_tensor(h, name, tensor)
    return h.hexdigest()[:16]


def _rng_for_digest(state: Mapping[str, Any], include_cuda: bool) -> Mapping[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in state.items():
        if key == "cuda" and not include_cuda:
            continue
        if key == "numpy":
            name, keys, pos, has_gauss, cached = value
            out[key] = [name, keys.tolist() if hasattr(keys, "tolist") else list(keys), int(pos), int(has_gauss),
                        float(cached)]
        elif hasattr(value, "numpy"):  # torch generator states (CPU, CUDA): uint8 tensors
            out[key] = hashlib.sha256(value.cpu().numpy().tobytes()).hexdigest()
        elif key == "cuda" and isinstance(value, (list, tuple)):
            out[key] = [hashlib.sha256(v.cpu().numpy().tobytes()).hexdigest() for v in value]
        else:
            out[key] = value
    return out


def replicated_rng_digest(state: Mapping[str, Any], include_cuda: bool = False) -> str:
    """Digest of one process's RNG states (``_rng.rng_state``). CUDA's generators are per device,
    so per rank: left out unless ``include_cuda``."""
    return digest_json(_rng_for_digest(state, include_cuda))


def rng_digest_of_states(states: List[Mapping[str, Any]], include_cuda: bool = False) -> str:
    """The ``rng`` digest of every rank's RNG states: of one state when all ranks agree (replicated
    RNG, so the digest is topology-independent), else of the per-rank list."""
    return combine_rng_digests([replicated_rng_digest(state, include_cuda) for state in states])


def combine_rng_digests(every: List[str]) -> str:
    """One ``rng`` digest from every rank's :func:`replicated_rng_digest`: the common one when all
    agree, else the digest of the per-rank list."""
    return every[0] if len(set(every)) == 1 else digest_json(every)
