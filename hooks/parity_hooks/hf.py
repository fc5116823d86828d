"""The trainer contract for an unmodified Hugging Face ``transformers.Trainer`` script.

``python -m parity_hooks.hf SCRIPT [ARGS...]`` runs SCRIPT as ``__main__`` with exactly those
arguments and adds :class:`ParityCallback` to every ``Trainer`` it builds. Per optimizer step the
callback appends one full-precision JSONL record to ``PARITY_METRICS_FILE`` (the step's loss as
the training step computed it, summed over its micro-batches like HF's own ``tr_loss``, not the
rounded running mean HF logs; the LR the optimizer applied; the gradient norm); it stops after
``PARITY_STOP_AT`` while the schedule spans ``PARITY_STEPS`` (``--max_steps``, which it checks),
makes HF save after ``PARITY_SAVE_AT`` and at no other step, and writes the ``saved`` digests of
what that save wrote (:mod:`parity_hooks._hf_state`) and the completion marker after HF's own
save. A resumed process reports ``loaded`` digests right before its first step — after HF has
restored the model, optimizer, scheduler, trainer state and RNG and fast-forwarded the data (at an
epoch's start, the RNG as HF restored it, before the epoch's data iterator draws from it) — and
the baseline a ``snapshot`` at ``PARITY_DIGEST_AT``. Both report a ``grads`` event (the gradient
buffers, ``grad_buffers``) at ``on_step_begin`` of the step after: HF zeroes after each optimizer
step, so they are what that step accumulates onto. Under ``--deepspeed`` the state is the
engine's, gathered (:mod:`parity_hooks.deepspeed`).

The launcher observes, without changing them, four points of ``Trainer``'s loop that a callback
cannot see: ``training_step`` (the loss), ``_get_grad_norm``, ``_run_epoch`` with HF's
``skip_first_batches`` (the data position) and ``_load_rng_state`` (the RNG it restored).
"""

from __future__ import annotations

import copy
import os
import runpy
import sys
from typing import Any, Dict, List, Optional

from ._events import Parity
from ._hf_state import DataPosition, grad_digests, live_digests, saved_digests

try:
    from transformers import TrainerCallback
except ImportError:  # pragma: no cover - the launcher says so below
    TrainerCallback = object  # type: ignore[assignment,misc]

__all__ = ["ParityCallback", "install", "main"]

_INSTALLED = False


def _rank() -> int:
    from ._rng import rank_and_world

    return rank_and_world()[0]


def _all_mean(value: Any) -> float:
    """The mean over ranks of a scalar tensor (one process: the value itself, as a Python float)."""
    import torch
    import torch.distributed as tdist

    t = value.detach().float().reshape(())
    if tdist.is_available() and tdist.is_initialized() and tdist.get_world_size() > 1:
        t = t.clone()
        tdist.all_reduce(t)
        t = t / tdist.get_world_size()
    return float(t.item()) if isinstance(t, torch.Tensor) else float(t)


class ParityCallback(TrainerCallback):  # type: ignore[misc,valid-type]
    """Adds the trainer contract to one ``Trainer`` (:func:`install` attaches it to every one)."""

    def __init__(self, parity: Optional[Parity] = None) -> None:
        self.parity = parity if parity is not None else Parity.from_env()
        self.contract = self.parity.contract
        self.trainer: Any = None
        self.position = DataPosition()
        self._loss: Any = None
        self._grad_norm: Optional[float] = None
        self._lr: Optional[float] = None
        self._first = True
        self._scaled: Optional[List[float]] = None
        self._restored_rng: Optional[Dict[str, Any]] = None

    # -- observation points, attached to the trainer's own methods --------------------------------

    def attach(self, trainer: Any) -> None:
        """Observes ``trainer``'s loss, gradient norm and data position (wrapping, not changing)."""
        self.trainer = trainer
        step_fn, norm_fn, epoch_fn = trainer.training_step, trainer._get_grad_norm, trainer._run_epoch
        load_rng_fn = trainer._load_rng_state

        def training_step(*args: Any, **kwargs: Any) -> Any:
            loss = step_fn(*args, **kwargs)
            self._loss = loss.detach() if self._loss is None else self._loss + loss.detach()
            self.position.consumed()
            return loss

        def get_grad_norm(*args: Any, **kwargs: Any) -> Any:
            norm = norm_fn(*args, **kwargs)
            self._grad_norm = None if norm is None else float(norm)
            return norm

        def run_epoch(*args: Any, **kwargs: Any) -> Any:
            self.position.start_epoch(int(kwargs["epoch"]), int(kwargs["steps_in_epoch"]),
                                      int(kwargs["num_update_steps_per_epoch"]))
            return epoch_fn(*args, **kwargs)

        def load_rng_state(*args: Any, **kwargs: Any) -> Any:
            out = load_rng_fn(*args, **kwargs)
            if self.position.batches == 0:
                # Resuming at an epoch's start, HF restores the RNG before the epoch's data
                # iterator draws its base seed from it, as the uninterrupted run draws after its
                # save: the state that corresponds to the save is this one, not the one at the
                # first step. (Mid-epoch, HF restores after fetching the first batch.)
                from ._rng import rng_state

                self._restored_rng = copy.deepcopy(rng_state())
            return out

        trainer.training_step = training_step
        trainer._load_rng_state = load_rng_state
        trainer._get_grad_norm = get_grad_norm
        trainer._run_epoch = run_epoch
        trainer.add_callback(self)

    def skipped(self, batches: int) -> None:
        """HF's ``skip_first_batches`` fast-forwards the resumed epoch (see :func:`install`)."""
        self.position.skipped(batches)

    # -- callback events ---------------------------------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        steps = self.contract.steps
        if steps and state.max_steps != steps and _rank() == 0:
            # Said, not refused: the harness judges what such a split does (its save check and
            # `lr-schedule-mismatch` catch a schedule cut short).
            print(f"parity_hooks.hf: warning: the schedule spans {state.max_steps} optimizer "
                  f"steps but PARITY_STEPS={steps}; pass --max_steps {steps} so every phase's LR "
                  "schedule spans the full run", file=sys.stderr)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        first_resumed = self._first and bool(self.contract.resume_from)
        self._first = False
        if first_resumed:
            # HF has restored everything and fetched (and, mid-epoch, skipped to) the first batch.
            digests, tensors = live_digests(self.trainer, self.position, self._restored_rng)
            if _rank() == 0:
                self.parity.loaded(state.global_step, digests, tensors)
        step = int(state.global_step) + 1
        if first_resumed or self.parity.should_digest_grads(step):  # every rank: it may gather
            # Before the window's first micro-batch: HF zeroes the gradients after each optimizer
            # step (model.zero_grad()), so these are what this step's backward accumulates onto.
            digests, tensors = grad_digests(self.trainer)
            if _rank() == 0:
                self.parity.grads(step, digests, tensors)

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        scale = self.contract.lr_scale
        if scale is not None and self.contract.resume_from:
            groups = self.trainer.optimizer.param_groups
            self._scaled = [g["lr"] for g in groups]
            for group in groups:
                group["lr"] = group["lr"] * scale

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        groups = self.trainer.optimizer.param_groups
        self._lr = float(groups[0]["lr"])  # the LR this step applied (the scheduler steps next)
        if self._scaled is not None:
            for group, lr in zip(groups, self._scaled):
                group["lr"] = lr
            self._scaled = None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        step = int(state.global_step)
        loss = _all_mean(self._loss) if self._loss is not None else float("nan")
        self._loss = None
        metrics: Dict[str, float] = {}
        if self._lr is not None:
            metrics["lr"] = self._lr
        if self._grad_norm is not None:
            metrics["grad_norm"] = self._grad_norm
        if _rank() == 0:
            self.parity.step(step, loss, **metrics)
        if self.parity.should_snapshot(step):
            digests, tensors = live_digests(self.trainer, self.position)
            if _rank() == 0:
                self.parity.snapshot(step, digests, tensors)
        # HF saves where the contract says, and nowhere else (its save_steps and end-of-run save
        # would write checkpoints no phase reads).
        control.should_save = self.parity.should_save(step)
        if self.parity.should_stop(step):
            control.should_training_stop = True
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = int(state.global_step)
        if not self.parity.should_save(step):
            return
        import torch.distributed as tdist

        distributed = tdist.is_available() and tdist.is_initialized()
        if distributed:
            tdist.barrier()  # rank 0 writes trainer_state.json: read it once it is there
        tag_dir = os.path.join(args.output_dir, f"checkpoint-{step}")
        digests, tensors = saved_digests(self.trainer, tag_dir, self.position)
        if distributed:
            tdist.barrier()  # every rank's files are written before the marker says so
        if _rank() == 0:
            self.parity.saved(step, digests, tensors)
            self.parity.mark_complete(tag_dir, step)


def install(parity: Optional[Parity] = None) -> None:
    """Makes every ``transformers.Trainer`` built from now on carry a :class:`ParityCallback`."""
    global _INSTALLED
    if _INSTALLED:
        return
    import transformers
    import transformers.trainer as hf_trainer

    init = transformers.Trainer.__init__
    callbacks: List[ParityCallback] = []

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        callback = ParityCallback(parity)
        callback.attach(self)
        callbacks.append(callback)

    skip = hf_trainer.skip_first_batches

    def skip_first_batches(dataloader: Any, num_batches: int = 0) -> Any:
        for callback in callbacks:
            callback.skipped(int(num_batches))
        return skip(dataloader, num_batches)

    transformers.Trainer.__init__ = __init__  # type: ignore[method-assign]
    hf_trainer.skip_first_batches = skip_first_batches
    _INSTALLED = True


def main(argv: Optional[List[str]] = None) -> None:
    """``python -m parity_hooks.hf SCRIPT [ARGS...]``: runs SCRIPT with the contract installed."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m parity_hooks.hf SCRIPT [ARGS...]\n"
              "Runs an unmodified transformers.Trainer script under the parity trainer contract.",
              file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(2 if not argv else 0)
    script = argv[0]
    if not os.path.isfile(script):
        print(f"parity_hooks.hf: {script}: no such script", file=sys.stderr)
        raise SystemExit(2)
    if TrainerCallback is object:
        print("parity_hooks.hf: transformers is not installed in this Python", file=sys.stderr)
        raise SystemExit(2)
    install()
    sys.argv = [script, *argv[1:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    _end_process_group()


def _end_process_group() -> None:
    """Ends a process group the script left open: exiting with gloo's threads still running can
    abort the process (``terminate called without an active exception``) after a clean run."""
    if "torch.distributed" not in sys.modules:
        return
    import torch.distributed as tdist

    if tdist.is_available() and tdist.is_initialized():
        tdist.barrier()
        tdist.destroy_process_group()


if __name__ == "__main__":
    main()
