"""The parity hook for a hand-written PyTorch (or Accelerate) training loop.

A loop keeps its own checkpoint code; the hook reads the contract, writes the metrics and reports
digests of the state by component, so the harness can say which part a resume failed to restore::

    from parity_hooks.torch import from_env, rng_state, set_rng_state
    random.seed(seed); numpy.random.seed(seed); torch.manual_seed(seed)   # every generator digested
    hook = from_env(model=model, optimizer=opt, scheduler=sched, data=position)  # position: state_dict()
    if hook.resume_from:                                       # a resume phase
        ckpt = torch.load(f"{hook.resume_from}/checkpoint.pt", weights_only=False)
        model.load_state_dict(ckpt["model"]); opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"]); position.load_state_dict(ckpt["data"])
        set_rng_state(ckpt["rng"])
        hook.loaded(ckpt["step"])                              # digests of what was restored
    for step in range(hook.first_step(), hook.stop_at + 1):   # optimizer steps; LR over hook.steps
        loss = ...                                             # one optimizer step
        hook.step(step, loss, lr=lr_used)                      # full precision
        if hook.should_snapshot(step):                         # the baseline, at PARITY_DIGEST_AT
            hook.snapshot(step)
        if hook.should_save(step):                             # the split, at PARITY_SAVE_AT
            tag = hook.contract.tag_dir(step)                  # <PARITY_CHECKPOINT_DIR>/global_step<N>
            os.makedirs(tag, exist_ok=True)
            rng = rng_state()
            torch.save({"model": ..., "optimizer": ..., "scheduler": ..., "data": position.state_dict(),
                        "rng": rng, "step": step}, f"{tag}/checkpoint.pt")
            hook.saved(step, rng=rng)                          # digests of what the checkpoint holds
                                                               # (+ 'after_save' in a fused split)
            hook.mark_complete(tag, step)                      # last: the checkpoint is whole

and ``trainer.checkpoint_marker: parity_checkpoint_complete.json`` in the experiment file.

Components: ``params`` (the parameters the optimizer updates, as stored), each per-parameter
optimizer state under its own name (``exp_avg``, ``exp_avg_sq`` for Adam/AdamW, ``momentum_buffer``
for SGD, ...), ``optimizer_step``, ``param_groups``, ``lr_scheduler``, ``rng`` (python, numpy, torch
CPU, CUDA when initialised), ``data`` (what ``data.state_dict()`` returns) and one per key of
``extra``; per tensor ``"<param name> · exp_avg"``. ``grad_buffers`` (the ``grads`` event) digests
the parameters' ``.grad`` as the step after ``snapshot`` (the baseline) or ``loaded`` (a resume)
begins: the hook arranges it itself, at that step's first backward, before autograd accumulates
(so after the loop's ``zero_grad``, wherever it sits in the step); ``None`` and zeros alike.
``saved(step, rng=state)`` hashes the RNG state the checkpoint holds rather than the running one
(they differ when the save itself draws, a save-side bug the harness then blames on the save).
The digests are this process's: in a data-parallel loop call them on rank 0 (only rank 0 writes
anyway).

Accelerate: pass what the loop steps (``accelerator.prepare`` returns wrappers whose ``state`` and
``param_groups`` are the optimizer's), and save and load through ``accelerator.save_state`` /
``load_state`` or your own code as above; ``Accelerator`` saves the RNG states itself.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._contract import Contract
from ._events import Parity
from ._rng import rng_state, set_rng_state
from ._torch_state import grad_buffer_digests, named_optimizer_params, state_digests

__all__ = ["TorchParity", "from_env", "rng_state", "set_rng_state", "state_digests"]


def _data_state(data: Any) -> Optional[Dict[str, Any]]:
    if data is None:
        return None
    if callable(getattr(data, "state_dict", None)):
        return dict(data.state_dict())
    if callable(data):
        return dict(data())
    return dict(data)


class TorchParity(Parity):
    """:class:`parity_hooks.Parity` that knows the loop's model, optimizer, scheduler and data
    position, so ``saved``, ``loaded`` and ``snapshot`` compute their digests themselves."""

    def __init__(self, contract: Optional[Contract] = None, rank: Optional[int] = None, *, model: Any = None,
                 optimizer: Any = None, scheduler: Any = None, data: Any = None,
                 extra: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(contract, rank)
        self.model: Any = model
        self.optimizer: Any = optimizer
        self.scheduler: Any = scheduler
        self.data: Any = data
        self.extra: Optional[Mapping[str, Any]] = extra
        self._grad_hooks: List[Any] = []

    _TRACKED = ("model", "optimizer", "scheduler", "data", "extra")

    def track(self, **objects: Any) -> "TorchParity":
        """Sets (or replaces, e.g. after ``accelerator.prepare``) what the digests read:
        ``model``, ``optimizer``, ``scheduler``, ``data`` (its ``state_dict()``, a callable
        returning a mapping, or a mapping) and ``extra`` (name -> JSON-able value or callable).
        Objects not named stay as they are."""
        unknown = sorted(set(objects) - set(self._TRACKED))
        if unknown:
            raise TypeError(f"track() takes {', '.join(self._TRACKED)}; not {', '.join(unknown)}")
        for name, value in objects.items():
            setattr(self, name, value)
        return self

    def state(self, rng: Any = True) -> Tuple[Dict[str, str], Dict[str, str]]:
        """``(digests, tensors)`` of the tracked state now; ``rng``: True for the running
        generators, a state from :func:`rng_state` for that one, False to leave it out."""
        extra = {k: (v() if callable(v) else v) for k, v in (self.extra or {}).items()}
        return state_digests(model=self.model, optimizer=self.optimizer, scheduler=self.scheduler,
                             data=_data_state(self.data), extra=extra, rng=rng)

    def saved(self, step: int, digests: Optional[Mapping[str, str]] = None,
              tensors: Optional[Mapping[str, str]] = None, *, rng: Any = True, **extra: Any) -> None:
        """The ``saved`` event; without ``digests``, those of the tracked state with ``rng`` the
        RNG state the checkpoint holds (pass it; True hashes the running generators)."""
        if digests is None:
            digests, tensors = self.state(rng=rng)
        super().saved(step, digests, tensors, **extra)
        if self.reports_after_save(step):
            # A fused split's baseline trains on: what it continues with, running RNG included.
            self.after_save(step)

    def after_save(self, step: int, digests: Optional[Mapping[str, str]] = None,
                   tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``after_save`` event (a fused split's baseline, sent by :meth:`saved`); without
        ``digests``, those of the tracked state with the running generators."""
        if digests is None:
            digests, tensors = self.state()
        super().after_save(step, digests, tensors, **extra)

    def loaded(self, step: int, digests: Optional[Mapping[str, str]] = None,
               tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``loaded`` event after everything is restored (the RNG too); without ``digests``,
        those of the tracked state. :meth:`first_step` then returns ``step + 1``."""
        if digests is None:
            digests, tensors = self.state()
        super().loaded(step, digests, tensors, **extra)
        self._grads_at_first_backward(int(step) + 1)

    def snapshot(self, step: int, digests: Optional[Mapping[str, str]] = None,
                 tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``snapshot`` event of the baseline at ``PARITY_DIGEST_AT``; without ``digests``,
        those of the tracked state (hashing only: no RNG draw)."""
        if digests is None:
            digests, tensors = self.state()
        super().snapshot(step, digests, tensors, **extra)
        if self.should_digest_grads(int(step) + 1):
            self._grads_at_first_backward(int(step) + 1)

    def grads(self, step: int, digests: Optional[Mapping[str, str]] = None,
              tensors: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``grads`` event; without ``digests``, the ``grad_buffers`` digest of the tracked
        parameters' ``.grad`` now. :meth:`loaded` and :meth:`snapshot` arrange it themselves (see
        :meth:`_grads_at_first_backward`); call it only for a loop without autograd."""
        if digests is None:
            digests, tensors = grad_buffer_digests(self.model, self.optimizer)
        super().grads(step, digests, tensors, **extra)

    def step(self, step: int, loss: Any, **metrics: Any) -> None:
        """The step record (:meth:`parity_hooks.Parity.step`); also drops the gradient hooks of a
        step whose ``grads`` event is written."""
        super().step(step, loss, **metrics)
        self._remove_grad_hooks()

    def _grads_at_first_backward(self, step: int) -> None:
        """Reports the ``grads`` event of ``step`` at its first backward, from a hook on every
        tracked parameter: autograd runs a leaf's hooks before it accumulates into ``.grad``, so
        the first hook to run sees every buffer as the step found it, after whatever zeroing the
        loop does (``zero_grad`` before the forward or between forward and backward), before any
        accumulation. A loop that forgets ``zero_grad`` shows the previous step's gradients."""
        self._remove_grad_hooks()
        if self.model is None and self.optimizer is None:
            return
        params = [p for _, p in named_optimizer_params(self.model, self.optimizer) if p.requires_grad]
        done: List[bool] = []

        def first(grad: Any) -> None:
            if not done:
                done.append(True)
                self.grads(step)  # hooks are removed after the step (not while autograd runs them)
            return None

        self._grad_hooks = [p.register_hook(first) for p in params]

    def _remove_grad_hooks(self) -> None:
        for handle in self._grad_hooks:
            handle.remove()
        self._grad_hooks = []


def from_env(model: Any = None, optimizer: Any = None, scheduler: Any = None, data: Any = None,
             extra: Optional[Mapping[str, Any]] = None, env: Optional[Mapping[str, str]] = None) -> TorchParity:
    """A :class:`TorchParity` for this phase's ``PARITY_*`` environment, tracking these objects."""
    import os

    env = os.environ if env is None else env
    return TorchParity(Contract.from_env(env), int(env.get("RANK", "0") or 0), model=model, optimizer=optimizer,
                       scheduler=scheduler, data=data, extra=extra)
