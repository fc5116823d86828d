"""What a Hugging Face ``Trainer`` holds, as the state digests of the trainer contract.

Three views of one logical state, so that the harness can compare them component by component:

* :func:`live_digests` — the running process (the baseline's ``snapshot``, a resume's ``loaded``);
* :func:`saved_digests` — what HF's save wrote at that step: the RNG states from the checkpoint's
  ``rng_state.pth``, the trainer state from its ``trainer_state.json``, the data position HF will
  derive from that file on resume; parameters, optimizer and scheduler from the objects HF has
  just written with ``torch.save`` (under DeepSpeed, the engine's state, gathered).

The data position is ``{epoch, batches, sampler_seed}``: the epoch the run is in and the
micro-batches of that epoch already consumed (an epoch's end counts as the next epoch's start).
Live, it is observed (the epoch ``Trainer`` runs and the batches it fetched or skipped); saved,
it is HF's own resume rule applied to the saved ``global_step``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = ["DataPosition", "live_digests", "saved_digests", "trainer_state_view"]

#: Fields of ``TrainerState`` that decide how training continues (logs, FLOP counts and timing
#: are bookkeeping: a resume that lost them trains identically).
TRAINER_STATE_FIELDS = ("global_step", "epoch", "max_steps", "num_train_epochs", "train_batch_size")


class DataPosition:
    """Where the running ``Trainer`` is in its data, observed from the training loop."""

    def __init__(self) -> None:
        self.epoch: Optional[int] = None
        self.batches = 0
        self.batches_per_epoch: Optional[int] = None
        self.updates_per_epoch: Optional[int] = None

    def start_epoch(self, epoch: int, batches_per_epoch: int, updates_per_epoch: int) -> None:
        """``Trainer._run_epoch`` began ``epoch`` (nothing consumed yet)."""
        self.epoch = epoch
        self.batches = 0
        self.batches_per_epoch = batches_per_epoch
        self.updates_per_epoch = updates_per_epoch

    def skipped(self, batches: int) -> None:
        """HF fast-forwarded the epoch past ``batches`` micro-batches (``skip_first_batches``)."""
        self.batches += batches

    def consumed(self, batches: int = 1) -> None:
        """One micro-batch was trained on."""
        self.batches += batches

    def view(self, sampler_seed: int) -> Dict[str, int]:
        """The position as the digest hashes it."""
        epoch, batches = self.epoch or 0, self.batches
        if self.batches_per_epoch and batches >= self.batches_per_epoch:
            epoch, batches = epoch + 1, 0
        return {"epoch": epoch, "batches": batches, "sampler_seed": sampler_seed}


def sampler_seed(args: Any) -> int:
    """The seed of the training sampler's order (``data_seed``, else ``seed``), as HF seeds it."""
    data_seed = getattr(args, "data_seed", None)
    return int(data_seed if data_seed is not None else args.seed)


def trainer_state_view(state: Any) -> Dict[str, Any]:
    """The fields of a ``TrainerState`` (object or its JSON) that the ``trainer_state`` digest covers."""
    get = state.get if isinstance(state, Mapping) else (lambda k: getattr(state, k, None))
    return {key: get(key) for key in TRAINER_STATE_FIELDS}


def _deepspeed_engine(trainer: Any) -> Any:
    return getattr(trainer, "model_wrapped", None) if getattr(
        trainer, "is_deepspeed_enabled", False) else None


def _model_digests(trainer: Any) -> Tuple[Dict[str, str], Dict[str, str]]:
    """Parameters, optimizer, scheduler and param groups (no RNG, data or trainer state)."""
    engine = _deepspeed_engine(trainer)
    if engine is not None:
        from ._digest import digest_json
        from .deepspeed import logical_state

        digests, tensors = logical_state(engine)
        # HF steps its own scheduler when the DeepSpeed config names none: the engine has no
        # scheduler then, and HF saves and restores the one it made (scheduler.pt).
        if "lr_scheduler" not in digests and trainer.lr_scheduler is not None:
            digests["lr_scheduler"] = digest_json(trainer.lr_scheduler.state_dict())
        return digests, tensors
    from ._torch_state import state_digests

    return state_digests(model=trainer.model, optimizer=trainer.optimizer,
                         scheduler=trainer.lr_scheduler, rng=False)


def grad_digests(trainer: Any) -> Tuple[Dict[str, str], Dict[str, str]]:
    """The ``grad_buffers`` digest of what the next backward accumulates onto: the DeepSpeed
    engine's buffers under ``--deepspeed`` (a collective), else the model's ``.grad``."""
    engine = _deepspeed_engine(trainer)
    if engine is not None:
        from .deepspeed import grad_buffer_digests as engine_grads

        return engine_grads(engine)
    from ._torch_state import grad_buffer_digests

    return grad_buffer_digests(model=trainer.model, optimizer=trainer.optimizer)


def _with_common(digests: Dict[str, str], rng: Mapping[str, Any],
                 data: Mapping[str, Any], state: Mapping[str, Any]) -> Dict[str, str]:
    from ._digest import combine_rng_digests, digest_json, replicated_rng_digest
    from ._rng import gather_objects

    out = dict(digests)
    out["rng"] = combine_rng_digests(gather_objects(replicated_rng_digest(rng)))
    out["data"] = digest_json(dict(data))
    out["trainer_state"] = digest_json(dict(state))
    return out


def live_digests(trainer: Any, position: DataPosition,
                 rng: Optional[Mapping[str, Any]] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """Digests of the running process's state (call on every rank: it may gather); ``rng``: RNG
    states captured earlier, instead of the running generators."""
    from ._rng import rng_state

    digests, tensors = _model_digests(trainer)
    data = position.view(sampler_seed(trainer.args))
    return _with_common(digests, rng if rng is not None else rng_state(), data,
                        trainer_state_view(trainer.state)), tensors


def _hf_rng_file(tag_dir: str, args: Any) -> str:
    if getattr(args, "world_size", 1) > 1:
        return os.path.join(tag_dir, f"rng_state_{args.process_index}.pth")
    return os.path.join(tag_dir, "rng_state.pth")


def saved_digests(trainer: Any, tag_dir: str,
                  position: DataPosition) -> Tuple[Dict[str, str], Dict[str, str]]:
    """Digests of what HF's save wrote into ``tag_dir`` (call on every rank, right after the save)."""
    import torch

    digests, tensors = _model_digests(trainer)
    hf_rng = torch.load(_hf_rng_file(tag_dir, trainer.args), weights_only=False)
    rng = {"python": hf_rng["python"], "torch": hf_rng["cpu"]}
    if "numpy" in hf_rng:
        rng["numpy"] = hf_rng["numpy"]
    with open(os.path.join(tag_dir, "trainer_state.json"), encoding="utf-8") as f:
        state = json.load(f)
    # HF's resume rule (Trainer._init_training_state): the epoch and the batches to skip, from the
    # saved global_step alone.
    per_epoch = position.updates_per_epoch or 1
    accumulation = int(getattr(trainer.args, "gradient_accumulation_steps", 1))
    step = int(state["global_step"])
    data = {"epoch": step // per_epoch, "batches": (step % per_epoch) * accumulation,
            "sampler_seed": sampler_seed(trainer.args)}
    return _with_common(digests, rng, data, trainer_state_view(state)), tensors
