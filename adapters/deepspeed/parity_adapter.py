"""Resume-parity adapter for DeepSpeed training scripts.

Three lines in a training loop make a DeepSpeed script speak the harness's trainer contract
(see the README): full-precision JSONL metrics, ``saved``/``loaded`` events with digests of the
logical (unsharded) state, and the checkpoint locations the harness chose::

    from parity_adapter import Parity
    parity = Parity.from_env()                      # reads PARITY_* variables
    if parity.resume_from:                          # resume phases
        load_dir, tag = parity.load_location()
        engine.load_checkpoint(load_dir, tag=tag)
        parity.loaded(engine.global_steps, digests=parity.engine_digests(engine))
    for step in range(parity.first_step(engine), parity.stop_at + 1):
        loss = ...                                  # one optimizer step (all micro-batches)
        parity.step(step, loss=loss, lr=engine.get_lr()[0])
        if step == parity.save_at:                  # split phase only
            engine.save_checkpoint(parity.checkpoint_dir, tag=f"global_step{step}")
            parity.saved(step, digests=parity.engine_digests(engine),
                         micro_step=engine.micro_steps, grad_accum=engine.gradient_accumulation_steps())

Only the standard library is needed to write metrics; ``engine_digests`` imports torch and
DeepSpeed's ``safe_get_full_*`` helpers and must run on every rank (they gather), while only rank 0
writes. Numbers are written with ``repr``-exact precision: a float32 loss widened to float64 is
exact, so the harness's exact lane can compare bits.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else None


def _number(value: Any) -> float:
    """A Python float of a number, tensor or numpy scalar (``.item()`` widens float32 exactly)."""
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


def digest_bytes(chunks: Iterable[bytes]) -> str:
    """SHA-256 (first 16 hex digits) of byte chunks, in order."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()[:16]


class Parity:
    """Writes the trainer contract's metrics for one phase."""

    def __init__(self, metrics_file: Optional[str], phase: str, steps: int, stop_at: int,
                 save_at: Optional[int], seed: Optional[int], checkpoint_dir: Optional[str],
                 resume_from: Optional[str], resume_kind: Optional[str], rank: int = 0) -> None:
        self.metrics_file = metrics_file
        self.phase = phase
        self.steps = steps
        self.stop_at = stop_at
        self.save_at = save_at
        self.seed = seed
        self.checkpoint_dir = checkpoint_dir
        self.resume_from = resume_from
        self.resume_kind = resume_kind
        self.rank = rank

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "Parity":
        """Reads the ``PARITY_*`` variables the harness sets (RANK decides who writes)."""
        steps = int(env.get("PARITY_STEPS", "0") or 0)
        stop_at = int(env.get("PARITY_STOP_AT", "") or steps)
        get = lambda k: env.get(k, "") or None  # noqa: E731
        save_at = get("PARITY_SAVE_AT")
        seed = get("PARITY_SEED")
        return cls(get("PARITY_METRICS_FILE"), env.get("PARITY_PHASE", ""), steps, stop_at,
                   int(save_at) if save_at else None, int(seed) if seed else None,
                   get("PARITY_CHECKPOINT_DIR"), get("PARITY_RESUME_FROM"), get("PARITY_RESUME_KIND"),
                   int(env.get("RANK", "0") or 0))

    # -- writing -----------------------------------------------------------------------------------

    def _write(self, record: Dict[str, Any]) -> None:
        if self.rank != 0 or not self.metrics_file:
            return
        for key, value in record.items():
            if isinstance(value, float) and not math.isfinite(value):
                # JSON has no NaN: write a string the harness diagnoses instead of invalid JSON.
                record[key] = repr(value)
        os.makedirs(os.path.dirname(os.path.abspath(self.metrics_file)), exist_ok=True)
        with open(self.metrics_file, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, allow_nan=False) + "\n")
            f.flush()

    def step(self, step: int, loss: Any, **metrics: Any) -> None:
        """One optimizer step's record: ``loss`` and any other scalar metrics, full precision."""
        record: Dict[str, Any] = {"step": int(step), "loss": _number(loss)}
        for name, value in metrics.items():
            if value is not None:
                record[name] = _number(value)
        self._write(record)

    def saved(self, step: int, digests: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``saved`` event after a checkpoint (pass ``micro_step`` and ``grad_accum`` too)."""
        self._write({"event": "saved", "step": int(step), "digests": dict(digests or {}), **extra})

    def loaded(self, step: int, digests: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``loaded`` event after restoring a checkpoint."""
        self._write({"event": "loaded", "step": int(step), "digests": dict(digests or {}), **extra})

    # -- checkpoint locations ------------------------------------------------------------------------

    def load_location(self) -> Tuple[str, str]:
        """``(load_dir, tag)`` for ``engine.load_checkpoint`` from the tag folder the harness names."""
        if not self.resume_from:
            raise ValueError("this phase does not resume (PARITY_RESUME_FROM is empty)")
        path = os.path.abspath(self.resume_from.rstrip("/"))
        return os.path.dirname(path), os.path.basename(path)

    def first_step(self, engine: Any = None) -> int:
        """First optimizer step to run: 1, or one past the restored ``global_steps``."""
        return int(getattr(engine, "global_steps", 0) or 0) + 1 if self.resume_from else 1

    # -- digests ---------------------------------------------------------------------------------------

    @staticmethod
    def tensor_digest(tensors: Iterable[Tuple[str, Any]]) -> str:
        """Digest of named tensors in name order (CPU fp32 bytes, so ranks and layouts agree)."""
        def chunks():
            for name, tensor in sorted(tensors, key=lambda item: item[0]):
                yield name.encode()
                yield tensor.detach().float().cpu().contiguous().numpy().tobytes()
        return digest_bytes(chunks())

    def engine_digests(self, engine: Any) -> Dict[str, str]:
        """Digests of the logical state of a DeepSpeed engine (call on every rank)."""
        from deepspeed.utils import safe_get_full_fp32_param, safe_get_full_optimizer_state
        import torch

        named = [(n, p) for n, p in engine.module.named_parameters() if p.requires_grad]
        digests = {
            "params": self.tensor_digest((n, safe_get_full_fp32_param(p)) for n, p in named),
            "exp_avg": self.tensor_digest(
                (n, safe_get_full_optimizer_state(p, "exp_avg")) for n, p in named),
            "exp_avg_sq": self.tensor_digest(
                (n, safe_get_full_optimizer_state(p, "exp_avg_sq")) for n, p in named),
            "optimizer_step": digest_bytes([str(int(engine.global_steps)).encode()]),
            "rng": digest_bytes([torch.get_rng_state().numpy().tobytes()]),
        }
        scheduler = getattr(engine, "lr_scheduler", None)
        if scheduler is not None:
            digests["lr_scheduler"] = digest_bytes(
                [json.dumps(scheduler.state_dict(), sort_keys=True, default=str).encode()])
        return digests
