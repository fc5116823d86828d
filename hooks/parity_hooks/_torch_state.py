"""State digests of a plain torch training loop: model parameters, optimizer state, LR scheduler,
RNG and data position, by component and per tensor.

Component names are the ones the harness's state checks, root-cause cards and the DeepSpeed hook
use (docs/parity.md, "Restored-state checks"): ``params``, ``exp_avg``, ``exp_avg_sq``,
``optimizer_step``, ``param_groups``, ``lr_scheduler``, ``rng``, ``data``, and any other per-parameter
optimizer state under its own key (``momentum_buffer``, ``max_exp_avg_sq``, ...). Per-tensor
entries are ``"<param name> · <kind>"``. Nothing here uses a collective: the digests describe this
process (for data-parallel replicas, rank 0's view is everyone's).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from ._digest import ABSENT, SEP, ZERO, digest_json, hash_tensor, json_default, tensor_digest
from ._rng import rng_digest

__all__ = ["state_digests", "grad_buffer", "grad_buffer_digests", "optimizer_step_state", "param_groups_state",
           "named_optimizer_params", "optimizer_state_keys"]

Gather = Callable[[Any], List[Any]]


def _local(obj: Any) -> List[Any]:
    return [obj]


#: Per-parameter state keys an optimizer has after its first step, so that a fresh (or not
#: restored) optimizer still reports the component, as absent, rather than leaving it out.
_DEFAULT_STATE_KEYS: Dict[str, Tuple[str, ...]] = {
    "Adam": ("exp_avg", "exp_avg_sq"),
    "AdamW": ("exp_avg", "exp_avg_sq"),
    "NAdam": ("exp_avg", "exp_avg_sq"),
    "RAdam": ("exp_avg", "exp_avg_sq"),
    "Adamax": ("exp_avg", "exp_inf"),
    "Adagrad": ("sum",),
    "RMSprop": ("square_avg",),
}


def named_optimizer_params(model: Any, optimizer: Any) -> List[Tuple[str, Any]]:
    """``(name, parameter)`` of every parameter the optimizer updates (or, without one, every
    trainable parameter of the model), named as ``model.named_parameters()`` names them, in name
    order. A parameter the model does not know is named ``param_groups.<g>.<i>``."""
    names = {id(p): n for n, p in model.named_parameters()} if model is not None else {}
    if optimizer is None:
        return sorted(((n, p) for n, p in model.named_parameters() if p.requires_grad),
                      key=lambda item: item[0])
    out = []
    for g, group in enumerate(optimizer.param_groups):
        for i, p in enumerate(group["params"]):
            out.append((names.get(id(p), f"param_groups.{g}.{i}"), p))
    return sorted(out, key=lambda item: item[0])


def _optimizer_class(optimizer: Any) -> str:
    """The class name of the optimizer doing the update, below wrappers that keep it as
    ``.optimizer`` (Accelerate's ``AcceleratedOptimizer``, DeepSpeed's and Lightning's wrappers)."""
    seen = 0
    while type(optimizer).__name__ not in _DEFAULT_STATE_KEYS and hasattr(optimizer, "optimizer") and seen < 8:
        optimizer, seen = optimizer.optimizer, seen + 1
    return type(optimizer).__name__


def optimizer_state_keys(optimizer: Any) -> List[str]:
    """The per-parameter tensor state keys of ``optimizer`` (every key any parameter's state has,
    plus the keys its class always creates), ``step`` excluded, sorted."""
    kind = _optimizer_class(optimizer)
    keys = set(_DEFAULT_STATE_KEYS.get(kind, ()))
    if kind == "SGD" and any(g.get("momentum", 0) for g in optimizer.param_groups):
        keys.add("momentum_buffer")
    if any(g.get("amsgrad") for g in optimizer.param_groups):
        keys.add("max_exp_avg_sq")
    for state in optimizer.state.values():
        for key, value in state.items():
            if key != "step" and hasattr(value, "shape") and value.dim() > 0:
                keys.add(key)
    return sorted(keys)


def optimizer_step_state(optimizer: Any, gather: Gather = _local) -> Dict[str, Any]:
    """What the ``optimizer_step`` digest hashes: the distinct values of the optimizer's own step
    counters (``state["step"]``) over every state entry (on every rank, through ``gather``), and
    whether two entries share one step *tensor*. torch's Adam increments ``state["step"]`` in place
    once per ``step()`` call, so a counter shared by entries stepped separately advances several
    times per optimizer step: equal values now, wrong bias correction from the next step on."""
    steps = set()
    seen: Dict[int, int] = {}
    shared = False
    for state in optimizer.state.values():
        if "step" in state:
            step = state["step"]
            steps.add(int(step.item() if hasattr(step, "item") else step))
            if hasattr(step, "data_ptr"):
                shared = shared or id(step) in seen
                seen[id(step)] = 1
    every = gather([sorted(steps), shared])
    return {"steps": sorted({s for rank_steps, _ in every for s in rank_steps}),
            "shared_step_tensors": any(flag for _, flag in every)}


def param_groups_state(optimizer: Any, gather: Gather = _local) -> Any:
    """What the ``param_groups`` digest hashes: each param group's hyper-parameters (everything but
    ``params``), in group order; the list when every rank holds the same (through ``gather``),
    else ``{"per_rank": [...]}``."""
    groups = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    plain = json.loads(json.dumps(groups, sort_keys=True, default=json_default))
    every = gather(plain)
    return plain if all(other == plain for other in every) else {"per_rank": every}


def _component(named: Iterable[Tuple[str, Any]], kind: str, tensors: Dict[str, str]) -> str:
    h = hashlib.sha256()
    for name, tensor in named:
        hash_tensor(h, name, tensor)
        tensors[f"{name}{SEP}{kind}"] = tensor_digest(tensor)
    return h.hexdigest()[:16]


def state_digests(model: Any = None, optimizer: Any = None, scheduler: Any = None,
                  data: Optional[Mapping[str, Any]] = None, extra: Optional[Mapping[str, Any]] = None,
                  rng: Any = True) -> Tuple[Dict[str, str], Dict[str, str]]:
    """``(digests, tensors)`` of a plain torch training state.

    ``params`` hashes the parameters the optimizer updates (by name, in name order, dtype and bytes
    as stored); each per-parameter optimizer state key is a component of its own (``exp_avg``,
    ``exp_avg_sq``, ``momentum_buffer``, ...; a parameter without it is hashed as absent, never as
    zeros); ``optimizer_step`` the step counters, ``param_groups`` the hyper-parameters,
    ``lr_scheduler`` the scheduler's ``state_dict()``, ``rng`` this process's generators (``rng=True``:
    the running ones; a state dict from ``_rng.rng_state()``: that one, e.g. what a checkpoint
    saved; ``False``: left out), ``data`` the data position the caller passes, and one component
    per key of ``extra`` (its JSON digest). ``tensors`` maps ``"<name> · <kind>"`` to a digest."""
    from ._digest import replicated_rng_digest

    digests: Dict[str, str] = {}
    tensors: Dict[str, str] = {}
    named = named_optimizer_params(model, optimizer) if (model is not None or optimizer is not None) else []
    if named:
        digests["params"] = _component(((n, p) for n, p in named), "params", tensors)
    if optimizer is not None:
        for key in optimizer_state_keys(optimizer):
            states = ((n, optimizer.state.get(p, {}).get(key, ABSENT)) for n, p in named)
            digests[key] = _component(states, key, tensors)
        digests["optimizer_step"] = digest_json(optimizer_step_state(optimizer))
        digests["param_groups"] = digest_json(param_groups_state(optimizer))
    if scheduler is not None:
        digests["lr_scheduler"] = digest_json(scheduler.state_dict())
    if rng is True:
        digests["rng"] = rng_digest(include_cuda=True, gather=False)
    elif rng is not False and rng is not None:
        digests["rng"] = replicated_rng_digest(rng, include_cuda=True)
    if data is not None:
        digests["data"] = digest_json(dict(data))
    for key, value in (extra or {}).items():
        digests[key] = digest_json(value)
    return digests, tensors


def grad_buffer(tensor: Any) -> Any:
    """What a gradient buffer holds for the next backward to accumulate onto: the tensor, or
    :data:`ZERO` for ``None`` and an all-zero tensor (backward writes the same gradient into
    either; ``zero_grad(set_to_none=False)`` and a fresh process then digest alike)."""
    if tensor is None:
        return ZERO
    t = tensor.detach()
    if t.is_sparse:
        t = t.to_dense()
    return ZERO if not bool(t.any()) else t


def grad_buffer_digests(model: Any = None, optimizer: Any = None) -> Tuple[Dict[str, str], Dict[str, str]]:
    """``({"grad_buffers": digest}, tensors)`` of the ``.grad`` of every parameter the optimizer
    updates (as :func:`named_optimizer_params` names them), each as :func:`grad_buffer` (``None``
    and zeros alike), per tensor ``"<name> · grad"``. Taken as a step begins, before its first
    backward, it says whether the step starts from gradients an earlier step left behind."""
    tensors: Dict[str, str] = {}
    named = named_optimizer_params(model, optimizer)
    digest = _component(((n, grad_buffer(p.grad)) for n, p in named), "grad", tensors)
    return {"grad_buffers": digest}, tensors
