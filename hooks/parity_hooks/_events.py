"""The metrics side of the contract: JSONL step records and ``saved``/``loaded``/``snapshot``/``grads``
events at full precision, the per-tensor sidecar, and the atomic completion marker.

Standard library only: a trainer without torch can still write metrics. Only rank 0 (the ``RANK``
variable of torchrun and the DeepSpeed launcher) writes; every other rank's calls are no-ops, so a
script may call them on every rank.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, Mapping, Optional, Tuple

from ._contract import Contract
from ._digest import json_default

__all__ = ["Parity", "COMPLETE_MARKER", "TENSORS_INLINE_MAX", "write_json_atomic"]

#: The completion marker :meth:`Parity.mark_complete` writes into the tag folder
#: (``trainer.checkpoint_marker: parity_checkpoint_complete.json``).
COMPLETE_MARKER = "parity_checkpoint_complete.json"

#: Per-tensor entries an event carries inline; a larger map goes to a sidecar file (``tensors_file``).
TENSORS_INLINE_MAX = 256


def write_json_atomic(path: str, value: Any) -> None:
    """Writes ``value`` as JSON to ``path`` through a temporary file, fsync and a rename, so a reader
    sees the whole file or none."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f, sort_keys=True, default=json_default)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _number(value: Any) -> float:
    """A Python float of a number, tensor or numpy scalar (``.item()`` widens float32 exactly)."""
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


class Parity:
    """Writes one phase's metrics and events (README, "The trainer contract")."""

    def __init__(self, contract: Optional[Contract] = None, rank: Optional[int] = None) -> None:
        self.contract = contract if contract is not None else Contract()
        self.rank = int(os.environ.get("RANK", "0") or 0) if rank is None else int(rank)
        self._resumed_step: Optional[int] = None

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> "Parity":
        """``Parity(Contract.from_env(env))``; ``RANK`` decides who writes. Without
        ``PARITY_METRICS_FILE`` every write is a no-op (a run outside the harness)."""
        env = os.environ if env is None else env
        return cls(Contract.from_env(env), int(env.get("RANK", "0") or 0))

    # -- the contract, for convenience -------------------------------------------------------------

    @property
    def phase(self) -> str:
        return self.contract.phase

    @property
    def steps(self) -> int:
        return self.contract.steps

    @property
    def stop_at(self) -> int:
        return self.contract.stop_at

    @property
    def save_at(self) -> Optional[int]:
        return self.contract.save_at

    @property
    def digest_at(self) -> Optional[int]:
        return self.contract.digest_at

    @property
    def lr_scale(self) -> Optional[float]:
        return self.contract.lr_scale

    @property
    def seed(self) -> Optional[int]:
        return self.contract.seed

    @property
    def checkpoint_dir(self) -> Optional[str]:
        return self.contract.checkpoint_dir

    @property
    def resume_from(self) -> Optional[str]:
        return self.contract.resume_from

    @property
    def resume_kind(self) -> Optional[str]:
        return self.contract.resume_kind

    @property
    def metrics_file(self) -> Optional[str]:
        return self.contract.metrics_file

    @property
    def run_dir(self) -> Optional[str]:
        return self.contract.run_dir

    # -- when ---------------------------------------------------------------------------------------

    def should_snapshot(self, step: int) -> bool:
        """Whether to report a ``snapshot`` after ``step`` (the baseline at each ``PARITY_DIGEST_AT``)."""
        return int(step) in self._digest_steps()

    def should_save(self, step: int) -> bool:
        """Whether to save after ``step`` (the split at each step of ``PARITY_SAVE_AT``)."""
        return int(step) in self._save_steps()

    def _save_steps(self) -> Tuple[int, ...]:
        # A Contract built by hand may set save_at alone.
        c = self.contract
        return c.save_steps or ((c.save_at,) if c.save_at is not None else ())

    def _digest_steps(self) -> Tuple[int, ...]:
        c = self.contract
        return c.digest_steps or ((c.digest_at,) if c.digest_at is not None else ())

    def should_stop(self, step: int) -> bool:
        """Whether ``step`` is this phase's last (``PARITY_STOP_AT``)."""
        return int(step) >= self.contract.stop_at

    def should_digest_grads(self, step: int) -> bool:
        """Whether to report the gradient buffers at the start of ``step`` (:meth:`grads`): the
        baseline's step after ``PARITY_DIGEST_AT``, and a resume's first step (after :meth:`loaded`)."""
        step = int(step)
        digest_at, resumed = self.contract.digest_at, self._resumed_step
        return (digest_at is not None and step == digest_at + 1) or (resumed is not None and step == resumed + 1)

    def first_step(self) -> int:
        """The first step this phase runs: 1, or one past the step :meth:`loaded` reported."""
        return 1 if self._resumed_step is None else self._resumed_step + 1

    # -- writing ------------------------------------------------------------------------------------

    def _write(self, record: Dict[str, Any]) -> None:
        path = self.contract.metrics_file
        if self.rank != 0 or not path:
            return
        for key, value in record.items():
            if isinstance(value, float) and not math.isfinite(value):
                # JSON has no NaN: write a string the harness diagnoses instead of invalid JSON.
                record[key] = repr(value)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, allow_nan=False, default=json_default) + "\n")

    def step(self, step: int, loss: Any, **metrics: Any) -> None:
        """One optimizer step's record: ``loss`` and any other scalar metrics (``lr``,
        ``grad_norm``, ...; ``None`` values are left out), written with round-trip precision."""
        record: Dict[str, Any] = {"step": int(step), "loss": _number(loss)}
        for name, value in metrics.items():
            if value is not None:
                record[name] = _number(value)
        self._write(record)

    def saved(self, step: int, digests: Optional[Mapping[str, str]] = None,
              tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``saved`` event: the digests of what the checkpoint after ``step`` holds."""
        self._event("saved", step, digests, tensors, extra)

    def loaded(self, step: int, digests: Optional[Mapping[str, str]] = None,
               tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``loaded`` event after restoring the step-``step`` checkpoint; :meth:`first_step`
        then returns ``step + 1``."""
        self._resumed_step = int(step)
        self._event("loaded", step, digests, tensors, extra)

    def snapshot(self, step: int, digests: Optional[Mapping[str, str]] = None,
                 tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``snapshot`` event: the digests of the state after ``step`` of a run that does not
        save (the baseline at ``PARITY_DIGEST_AT``), which the split's ``saved`` digests must equal.
        Hash only: drawing from an RNG here would change the run."""
        self._event("snapshot", step, digests, tensors, extra)

    def reports_after_save(self, step: int) -> bool:
        """Whether the process saves after ``step`` and trains on: the baseline of a fused split
        (``schedule.split: fused``: ``PARITY_SAVE_AT`` = ``PARITY_DIGEST_AT`` = ``step``)."""
        return self.should_save(step) and self.should_snapshot(step)

    def after_save(self, step: int, digests: Optional[Mapping[str, str]] = None,
                   tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``after_save`` event of a fused split's baseline: the digests of the state it trains
        on right after its save at ``step``, which must equal its ``snapshot`` just before (a save
        that draws from the RNG or moves the data cursor is reported as perturbing the run)."""
        self._event("after_save", step, digests, tensors, extra)

    def grads(self, step: int, digests: Optional[Mapping[str, str]] = None,
              tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``grads`` event: the ``grad_buffers`` digest of the gradient buffers as step ``step``
        begins, what its first backward accumulates onto (after the framework's own zeroing for
        that step, if it zeroes there). The baseline reports it for the step after
        ``PARITY_DIGEST_AT``, a resume for its first step; the harness compares the two, so a run
        that carries gradients from one step into the next, which a fresh process cannot have,
        fails as ``grad_buffers``. A ``None`` and an all-zero buffer digest alike."""
        self._event("grads", step, digests, tensors, extra)

    def _event(self, event: str, step: int, digests: Optional[Mapping[str, str]],
               tensors: Optional[Mapping[str, str]], extra: Mapping[str, Any]) -> None:
        record: Dict[str, Any] = {"event": event, "step": int(step), "digests": dict(digests or {})}
        if tensors:
            record.update(self._tensor_fields(event, step, tensors))
        self._write({**record, **extra})

    def _tensor_fields(self, event: str, step: int, tensors: Mapping[str, str]) -> Dict[str, Any]:
        """``{"tensors": {...}}``, or for more than ``TENSORS_INLINE_MAX`` entries the sidecar
        ``{"tensors_file": "tensors-<event>-<step>.json"}`` (relative to the metrics file's folder,
        which the harness resolves; written on rank 0 only, atomically)."""
        metrics_file = self.contract.metrics_file
        if len(tensors) <= TENSORS_INLINE_MAX or not metrics_file:
            return {"tensors": dict(tensors)}
        if self.rank != 0:
            return {}
        metrics_dir = os.path.dirname(os.path.abspath(metrics_file))
        run_dir = self.contract.run_dir
        folder = os.path.abspath(run_dir) if run_dir else metrics_dir
        if os.path.relpath(folder, metrics_dir).startswith(os.pardir):
            folder = metrics_dir  # the harness only reads sidecars inside the metrics file's folder
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"tensors-{event}-{int(step)}.json")
        write_json_atomic(path, dict(tensors))
        return {"tensors_file": os.path.relpath(path, metrics_dir).replace(os.sep, "/")}

    def mark_complete(self, tag_dir: str, step: int, **info: Any) -> Optional[str]:
        """Writes ``<tag_dir>/parity_checkpoint_complete.json`` atomically (rank 0 only) and returns
        its path. Call it after every file of the checkpoint is written (on every rank, after the
        save's final barrier), as the very last thing of the save: the harness takes the marker as
        proof that the checkpoint is whole (``trainer.checkpoint_marker``)."""
        if self.rank != 0:
            return None
        os.makedirs(tag_dir, exist_ok=True)
        path = os.path.join(tag_dir, COMPLETE_MARKER)
        write_json_atomic(path, {"step": int(step), **info})
        return path
