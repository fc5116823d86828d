"""What each process holds of every AutoEP expert parameter, one digest per expert slot.

The logical digests of ``parity_hooks.deepspeed`` prove that a reshard restored the *whole* state; they
cannot say which process holds a wrong expert. This module records, per process, the expert
parameters exactly as that process holds them after a load: for each parameter its local experts
in packed order, and one digest per local expert slot of the module weight (its own dtype) and of
the fp32 master and Adam moments (unsharded over the expert-data-parallel group, as the process
uses them). ``plan_executor.py`` writes the same document for the shards a plan builds out of
the saved bytes, so the harness can compare the two process by process and tensor by tensor::

    {"schema_version": 1, "source": "resume", "world_size": 2, "ep_size": 1, "processes": {
       "0": {"ep_rank": 0, "params": {"model.layers.0.mlp.experts.w1": {
              "experts": [0, 1, 2, 3], "shape": [4, 32, 32],
              "module": {"dtype": "bfloat16", "slots": ["<16 hex>", ...]},
              "fp32": {...}, "exp_avg": {...}, "exp_avg_sq": {...}}}}}}

Kinds a process does not hold (no optimizer state yet) are left out, never digested as zeros.
Call :func:`write_process_state` on every rank (it uses collectives); rank 0 writes the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional

#: File name under the phase folder (``PARITY_RUN_DIR``).
PROCESS_STATE_FILE = "process_state.json"

#: Tensor kinds digested per expert slot, in this order.
KINDS = ("module", "fp32", "exp_avg", "exp_avg_sq")

_OPTIMIZER_KEYS = {"fp32": None, "exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}


def slot_digest(tensor: Any) -> str:
    """SHA-256 (16 hex) of one expert slot: dtype, shape and raw bytes, so bf16 stays bf16."""
    import torch

    t = tensor.detach().cpu().contiguous()
    h = hashlib.sha256()
    h.update(str(t.dtype).replace("torch.", "").encode())
    h.update(repr(tuple(t.shape)).encode())
    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def slot_digests(tensor: Any) -> Dict[str, Any]:
    """``{"dtype", "slots": [digest of tensor[i] for each local expert i]}``."""
    return {"dtype": str(tensor.dtype).replace("torch.", ""),
            "slots": [slot_digest(tensor[i]) for i in range(tensor.shape[0])]}


def _module_weight(param: Any) -> Any:
    """The module weight as this process holds it: ZeRO-3 gathers its partitions first."""
    if hasattr(param, "ds_id"):
        import deepspeed

        with deepspeed.zero.GatheredParameters([param]):
            return param.data.detach().clone()
    return param.data.detach().clone()


def local_process_state(engine: Any) -> Dict[str, Any]:
    """This process's entry (collectives over each parameter's data-parallel group: call on
    every rank, same order)."""
    from parity_hooks.deepspeed import (ABSENT, base_optimizer, expert_layout, flat_states_by_storage,
                                        fp16_optimizer_slices, full_hp)

    base = base_optimizer(engine)
    flat_states = flat_states_by_storage(base)
    fp16_slices = fp16_optimizer_slices(engine)
    params: Dict[str, Any] = {}
    ep_rank: Optional[int] = None
    ep_size: Optional[int] = None
    for name, param in sorted(engine.module.named_parameters(), key=lambda item: item[0]):
        meta = expert_layout(param)
        if meta is None or not param.requires_grad:
            continue
        ep_rank = int(meta["ep_rank"])
        ep_size = int(meta["expert_placement"]["ep_size"])
        module = _module_weight(param)
        entry: Dict[str, Any] = {"experts": [int(e) for e in meta["local_experts"]],
                                 "shape": list(module.shape), "module": slot_digests(module)}
        for kind, key in _OPTIMIZER_KEYS.items():
            full = full_hp(param, key, engine, flat_states, fp16_slices)
            if full is not ABSENT:
                entry[kind] = slot_digests(full.reshape(module.shape))
        params[name] = entry
    return {"ep_rank": ep_rank, "ep_size": ep_size, "params": params}


def process_state_document(engine: Any, source: str) -> Optional[Dict[str, Any]]:
    """Every process's entry, gathered; the document on rank 0, None elsewhere."""
    import torch.distributed as tdist

    mine = local_process_state(engine)
    if tdist.is_available() and tdist.is_initialized():
        rank, world = tdist.get_rank(), tdist.get_world_size()
        every: List[Any] = [None] * world
        tdist.all_gather_object(every, mine)
    else:
        rank, world, every = 0, 1, [mine]
    if rank != 0:
        return None
    return {"schema_version": 1, "source": source, "world_size": world,
            "ep_size": mine["ep_size"], "processes": {str(p): entry for p, entry in enumerate(every)}}


def write_document(path: str, document: Dict[str, Any]) -> None:
    """Writes ``document`` atomically (temp file + rename)."""
    temp = f"{path}.tmp-{os.getpid()}"
    with open(temp, "w", encoding="utf-8") as f:
        json.dump(document, f, sort_keys=True)
        f.write("\n")
    os.replace(temp, path)


def write_process_state(engine: Any, run_dir: Optional[str], source: str = "resume") -> None:
    """Writes ``<run_dir>/process_state.json`` (call on every rank; rank 0 writes)."""
    document = process_state_document(engine, source)
    if document is not None and run_dir:
        write_document(os.path.join(run_dir, PROCESS_STATE_FILE), document)
