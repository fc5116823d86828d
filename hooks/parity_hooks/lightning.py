"""The parity hook for Lightning: one ``Callback`` gives a ``LightningModule`` the trainer contract.

::

    from parity_hooks.lightning import ParityCallback
    parity = ParityCallback()                          # reads the PARITY_* environment
    seed_everything(parity.seed)                       # python, numpy and torch: all are digested
    trainer = Trainer(callbacks=[parity], **parity.trainer_kwargs())   # max_steps=PARITY_STEPS, ...
    trainer.fit(model, datamodule, ckpt_path=parity.ckpt_path)       # None, or the checkpoint to resume

What the callback does, per optimizer step (``trainer.global_step``; with gradient accumulation a
step is the whole window):

- **metrics**: the step's loss (the mean over its micro-batches of what ``training_step``
  returned, at full precision) and the LR it used (``lr``, the first param group's, read before
  the step), one JSONL record per optimizer step;
- **stop**: at ``PARITY_STOP_AT``, while ``max_steps`` stays ``PARITY_STEPS``, so an LR schedule
  built from ``trainer.max_steps`` or ``trainer.estimated_stepping_batches`` spans the full run
  (it sets the fit loop's own limit at ``on_fit_start``, after ``configure_optimizers``);
- **save**: after ``PARITY_SAVE_AT``, ``trainer.save_checkpoint`` into
  ``<PARITY_CHECKPOINT_DIR>/global_step<N>/checkpoint.ckpt`` (Lightning's own checkpoint: model,
  optimizers, schedulers, loops, callbacks' state), with the RNG states (python, numpy, torch,
  CUDA) that Lightning does not save, then the ``saved`` event and the completion marker
  (``trainer.checkpoint_marker: parity_checkpoint_complete.json``). Save on an epoch boundary,
  or give the trainer a resumable dataloader (``state_dict`` / ``load_state_dict``, e.g.
  torchdata's ``StatefulDataLoader``): Lightning restarts a plain dataloader's epoch from its
  first batch (the callback warns);
- **resume**: ``ckpt_path`` is ``<PARITY_RESUME_FROM>/checkpoint.ckpt`` on a resume phase; Lightning
  restores the rest, the callback the RNG states (at ``on_fit_start``, the last hook before the
  dataloader's iterator draws its shuffle seed), and it reports the ``loaded`` digests at
  ``on_train_start``, once Lightning restored the optimizers (the ``rng`` digest is of the state
  it restored);
- **snapshot**: the baseline's digests after ``PARITY_DIGEST_AT`` (hashing only);
- **grads**: the gradient buffers (``grad_buffers``) at ``on_before_backward`` of the step after
  ``PARITY_DIGEST_AT`` (the baseline) and of a resume's first step: after Lightning's own
  ``zero_grad`` for that step, before its first backward accumulates.

Digests (``parity_hooks._torch_state``): ``params``, ``exp_avg``/``exp_avg_sq`` (or the optimizer's
own state names), ``optimizer_step``, ``param_groups``, ``lr_scheduler``, ``rng``, ``trainer_state``
(``global_step``), and ``data`` when the callback is given the datamodule or
sampler whose ``state_dict()`` is the data position. One optimizer and at most one LR scheduler
are digested (the first of each). Only global rank 0 writes.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Dict, List, Optional, Tuple

from ._events import Parity
from ._rng import rng_state, set_rng_state
from ._torch_state import grad_buffer_digests, state_digests

if "pytorch_lightning" in sys.modules and "lightning" not in sys.modules:
    import pytorch_lightning as pl  # the program uses the standalone package
else:
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl

__all__ = ["ParityCallback", "CHECKPOINT_FILE", "STATE_KEY"]

#: The file Lightning's checkpoint is written to inside the tag folder.
CHECKPOINT_FILE = "checkpoint.ckpt"

#: Key of the callback's own entry in Lightning's checkpoint (the RNG states).
STATE_KEY = "parity"


class ParityCallback(pl.Callback):
    """The trainer contract for ``Trainer.fit``: metrics, stop, save, resume, digests."""

    def __init__(self, parity: Optional[Parity] = None, data: Any = None) -> None:
        """``parity``: the writer (default ``Parity.from_env()``); ``data``: what the data
        position is read from (its ``state_dict()``), e.g. a resumable datamodule or sampler."""
        super().__init__()
        self.parity = parity if parity is not None else Parity.from_env()
        self.data = data
        self._losses: List[float] = []
        self._lr: Optional[float] = None
        self._step_reported = 0
        self._saved_rng: Optional[Dict[str, Any]] = None
        self._rng_at_save: Optional[Dict[str, Any]] = None
        self._grads_reported = 0

    # -- what the program passes to Lightning -----------------------------------------------------

    @property
    def contract(self) -> Any:
        return self.parity.contract

    @property
    def steps(self) -> int:
        """The full schedule length (``PARITY_STEPS``)."""
        return self.parity.steps

    @property
    def seed(self) -> Optional[int]:
        return self.parity.seed

    @property
    def ckpt_path(self) -> Optional[str]:
        """``trainer.fit(..., ckpt_path=)``: the checkpoint a resume phase loads, else None."""
        if not self.parity.resume_from:
            return None
        return os.path.join(self.parity.resume_from, CHECKPOINT_FILE)

    def trainer_kwargs(self) -> Dict[str, Any]:
        """``Trainer`` arguments the contract asks for: ``max_steps`` = ``PARITY_STEPS`` (the
        callback stops at ``PARITY_STOP_AT``), files under ``PARITY_RUN_DIR``, and none of
        Lightning's own checkpoints or logs there (the harness keeps its own)."""
        kwargs: Dict[str, Any] = {"max_steps": self.steps, "logger": False, "enable_checkpointing": False,
                                  "enable_progress_bar": False, "enable_model_summary": False}
        if self.parity.run_dir:
            kwargs["default_root_dir"] = self.parity.run_dir
        return kwargs

    # -- digests ------------------------------------------------------------------------------------

    def state(self, trainer: Any, pl_module: Any, rng: Any = True) -> Tuple[Dict[str, str], Dict[str, str]]:
        """``(digests, tensors)`` of the training state now (``rng``: as ``state_digests``)."""
        optimizer = trainer.optimizers[0] if trainer.optimizers else None
        scheduler = trainer.lr_scheduler_configs[0].scheduler if trainer.lr_scheduler_configs else None
        data = self.data.state_dict() if self.data is not None else None
        # Not current_epoch: a save on an epoch's last batch says 0, its resume already 1.
        extra = {"trainer_state": {"global_step": int(trainer.global_step)}}
        return state_digests(model=pl_module, optimizer=optimizer, scheduler=scheduler, data=data, extra=extra,
                             rng=rng)

    # -- Lightning hooks ----------------------------------------------------------------------------

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        # After configure_optimizers (which may size the schedule by max_steps), before the data.
        stop_at = self.parity.stop_at
        if stop_at and stop_at != trainer.max_steps:
            trainer.fit_loop.epoch_loop.max_steps = stop_at
        self.parity.rank = int(trainer.global_rank)
        self._step_reported = int(trainer.global_step)
        if self._saved_rng is not None:
            # The last hook before the fit loop creates the dataloader's iterator (a shuffling
            # sampler draws its seed from the torch RNG there), and after everything that may draw
            # while the trainer is set up: the RNG continues where the saved run's did.
            set_rng_state(self._saved_rng)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        # Optimizers, schedulers and loops are restored by now (after on_fit_start). The RNG is
        # hashed as restored: the iterator of the first resumed epoch has drawn from it since.
        self._step_reported = int(trainer.global_step)
        if self._saved_rng is not None:
            self.parity.loaded(int(trainer.global_step), *self.state(trainer, pl_module, rng=self._saved_rng))

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if not self._losses:  # the first micro-batch of an optimizer step: the LR it will use
            self._lr = float(trainer.optimizers[0].param_groups[0]["lr"]) if trainer.optimizers else None

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        # Lightning zeroes the gradients between training_step and backward (on the first
        # micro-batch of an accumulation window only): here the buffers are what this backward
        # accumulates onto. The step about to run is global_step + 1.
        step = int(trainer.global_step) + 1
        if step != self._grads_reported and self.parity.should_digest_grads(step):
            self._grads_reported = step
            optimizer = trainer.optimizers[0] if trainer.optimizers else None
            self.parity.grads(step, *grad_buffer_digests(pl_module, optimizer))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        if loss is not None:
            self._losses.append(float(loss.detach().double().item() if hasattr(loss, "detach") else loss))
        step = int(trainer.global_step)
        if step == self._step_reported:
            return  # inside an accumulation window: the optimizer has not stepped yet
        self._step_reported = step
        losses, self._losses = self._losses, []
        self.parity.step(step, sum(losses) / len(losses) if losses else float("nan"), lr=self._lr)
        if self.parity.should_snapshot(step):
            self.parity.snapshot(step, *self.state(trainer, pl_module))
        if self.parity.should_save(step):
            self._save(trainer, pl_module, step, batch_idx)

    def _save(self, trainer: Any, pl_module: Any, step: int, batch_idx: int) -> None:
        if batch_idx + 1 < trainer.num_training_batches and not _resumable(trainer):
            warnings.warn(f"parity_hooks: saving after step {step}, in the middle of an epoch, with a dataloader "
                          "Lightning cannot resume (no state_dict/load_state_dict): the resume restarts the epoch",
                          stacklevel=2)
        tag = self.parity.contract.tag_dir(step)
        os.makedirs(tag, exist_ok=True)
        # One capture: the checkpoint holds it (on_save_checkpoint) and the 'saved' digests hash it.
        self._rng_at_save = rng = rng_state()
        try:
            trainer.save_checkpoint(os.path.join(tag, CHECKPOINT_FILE))
        finally:
            self._rng_at_save = None
        self.parity.saved(step, *self.state(trainer, pl_module, rng=rng))
        self.parity.mark_complete(tag, step)

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Dict[str, Any]) -> None:
        # Any save (this callback's, or the program's own ModelCheckpoint) carries the RNG.
        checkpoint[STATE_KEY] = {"rng": self._rng_at_save or rng_state()}

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: Dict[str, Any]) -> None:
        saved = checkpoint.get(STATE_KEY)
        if not saved:
            raise KeyError(f"the checkpoint has no '{STATE_KEY}' entry: it was not saved with ParityCallback")
        self._saved_rng = saved["rng"]


def _resumable(trainer: Any) -> bool:
    """Whether every training dataloader can be resumed mid-epoch (Lightning's ``_Stateful``)."""
    loaders = trainer.train_dataloader
    loaders = loaders if isinstance(loaders, (list, tuple)) else [loaders]
    return all(callable(getattr(x, "state_dict", None)) and callable(getattr(x, "load_state_dict", None))
               for x in loaders)
