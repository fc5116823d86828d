"""The parity hook for DeepSpeed scripts: ``from parity_hooks.deepspeed import Parity``.

A DeepSpeed script speaks the harness's trainer contract (README, "The trainer contract") with
three calls: full-precision metrics, ``saved``/``loaded``/``snapshot`` events with digests of the
*logical* (unsharded, topology-independent) state, the checkpoint locations the harness chose,
and the resume state DeepSpeed does not checkpoint itself (RNG, data position)::

    from parity_hooks.deepspeed import Parity
    parity = Parity.from_env()                            # reads the PARITY_* variables
    engine, *_ = deepspeed.initialize(...)                # then seed python/numpy/torch identically
    first = parity.resume(engine, data=sampler)           # 1, or loads PARITY_RESUME_FROM: engine,
                                                          # RNG, sampler; a 'loaded' event
    for step in range(first, parity.stop_at + 1):
        loss = ...                                        # one optimizer step (all micro-batches)
        parity.step(step, loss=loss, lr=lr_used, grad_norm=engine.get_global_grad_norm())
        parity.after_step(engine, step, data=sampler)     # 'snapshot' at PARITY_DIGEST_AT; at
                                                          # PARITY_SAVE_AT saves, reports, marks

``data`` is the data sampler (anything with ``state_dict()`` and ``load_state_dict()``), or
``None``. The experiment file names the marker: ``trainer.checkpoint_marker:
parity_checkpoint_complete.json``. ``after_step``'s save is the one recipe of the after-save
digests (``checkpoint_state``: the engine's state with the RNG and data position the saved
``client_state`` holds, not the running ones); docs/deepspeed.md, "Wiring your own DeepSpeed
script", lists its parts in the order a script that needs its own order (``train_moe.py``'s fault
injection) calls them.

Every call here that computes digests or state uses collectives: call it on every rank, in the
same order. Only rank 0 writes. torch and DeepSpeed are imported lazily.

Digest components (each a 16-hex SHA-256 prefix; a failing state check names the component):

``params``          fp32 master weights of every trainable parameter, unsharded
``exp_avg``         Adam first moments, unsharded
``exp_avg_sq``      Adam second moments, unsharded
``module_weights``  the engine module's own parameters as trained (bf16), unsharded; only when their
                    dtype is not fp32 (otherwise they are the fp32 master)
``optimizer_step``  Adam's own step counters (the optimizer state's ``step``, not ``global_steps``),
                    and whether entries share one step tensor (see ``optimizer_step_state``)
``lr_scheduler``    the LR scheduler's ``state_dict()``
``param_groups``    every optimizer param group's hyper-parameters (``lr``, ``betas``, ``eps``,
                    ``weight_decay``, ...; everything but ``params``), in group order, over all ranks
``engine_counters`` ``global_steps``, ``global_samples``, ``skipped_steps`` and the position inside the
                    accumulation window (``micro_steps % gradient_accumulation_steps``: DeepSpeed
                    does not checkpoint ``micro_steps`` itself, see ``engine_counters``)
``loss_scaler``     the fp16 loss scaler (``cur_scale``, ``cur_iter``, ...), only under fp16
``rng``             python ``random``, numpy and torch CPU generator states (a rank's CUDA generator
                    is saved and restored, but not digested: it is per-device state)
``data``            the data sampler's state (position), when the script passes it
``grad_buffers``    (its own ``grads`` event, at the start of the step after ``PARITY_DIGEST_AT`` and of a
                    resume's first step) the gradient buffers the step accumulates onto
                    (``grad_buffer_digests``)

Tensors are hashed one logical parameter at a time (gathered, hashed, dropped), keyed by the
parameter's name, dtype, shape and fp32 bytes, in name order. The same pass gives one digest per
parameter and tensor kind (``params``, ``exp_avg``, ``exp_avg_sq``, ``module``), and per expert
for expert parameters: ``model.layers.0.mlp.experts.w2 · expert 1 · exp_avg`` (the names a failing
state check lists in ``differing_tensors``). Events carry them as ``"tensors"``, or, above 256
entries, in a sidecar JSON file of the run folder named by ``"tensors_file"``. AutoEP expert
parameters (``[E_local, ...]`` on each expert-parallel rank, tagged by DeepSpeed with
``ds_autoep_uc_meta``) are assembled into their logical ``[E, ...]`` form in global expert order,
so a correct change of ``autoep_size`` or of the data-parallel size gives equal digests. The
optimizer moments are read from the optimizer's own state, not through
``safe_get_full_optimizer_state``: after a native ZeRO-1/2 (and bf16 optimizer) ``load_checkpoint``
DeepSpeed links the per-parameter optimizer fragments only inside the first ``step()``, so that
helper raises before it; the digests are available right after loading.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _events, _torch_state
from ._digest import (ABSENT, SEP, ZERO, digest_json, hash_tensor, named_tensors_digest, rng_digest_of_states,
                      tensor_digest)
from ._digest import replicated_rng_digest as _replicated_rng
from ._events import COMPLETE_MARKER, TENSORS_INLINE_MAX
from ._rng import gather_objects, rank_and_world, rng_digest, rng_state, set_rng_state

__all__ = ["Parity", "CLIENT_STATE_KEY", "COMPLETE_MARKER", "DIGEST_COMPONENTS", "TENSORS_INLINE_MAX", "SEP",
           "logical_state", "tensor_entries", "param_groups_state", "engine_counters", "loss_scaler_state",
           "optimizer_step_state", "rng_state", "set_rng_state", "rng_digest", "ABSENT", "grad_buffer_digests",
           # engine internals that the repository's own DeepSpeed tools (process_state.py) read too
           "base_optimizer", "expert_layout", "flat_states_by_storage", "fp16_optimizer_slices", "full_hp"]

#: Key under which ``client_state`` carries what DeepSpeed does not checkpoint itself.
CLIENT_STATE_KEY = "parity"

DIGEST_COMPONENTS = ("params", "exp_avg", "exp_avg_sq", "module_weights", "optimizer_step", "lr_scheduler",
                     "param_groups", "engine_counters", "loss_scaler", "rng", "data")

#: Tensor kinds of the per-tensor digests, and the component each is part of.
TENSOR_KINDS = (("params", "params", None), ("exp_avg", "exp_avg", "exp_avg"),
                ("exp_avg_sq", "exp_avg_sq", "exp_avg_sq"))


#: The ``framework`` field of every event this hook writes.
FRAMEWORK = "deepspeed"


class Parity(_events.Parity):
    """The core :class:`parity_hooks.Parity` (metrics, events, marker) plus a DeepSpeed engine's
    checkpoint locations, resume state and logical-state digests."""

    def _event(self, event: str, step: int, digests: Optional[Mapping[str, str]],
               tensors: Optional[Mapping[str, str]], extra: Mapping[str, Any]) -> None:
        # Every event says DeepSpeed wrote it: the harness then names components in DeepSpeed's
        # words (``params``: the fp32 master; ``module_weights``: the bf16/fp16 module weights).
        super()._event(event, step, digests, tensors, {"framework": FRAMEWORK, **extra})

    # -- the one-line hooks --------------------------------------------------------------------------

    def resume(self, engine: Any, data: Any = None, **load_kwargs: Any) -> int:
        """On a resume phase: loads ``PARITY_RESUME_FROM`` into ``engine`` (``load_kwargs`` go to
        ``engine.load_checkpoint``), restores this rank's RNG and the sampler ``data`` (its
        ``load_state_dict``), reports the ``loaded`` digests, and returns the first step to run.
        Elsewhere returns 1. Call on every rank."""
        if not self.resume_from:
            return 1
        load_dir, tag = self.load_location()
        path, client = engine.load_checkpoint(load_dir, tag=tag, **load_kwargs)
        if path is None:
            raise RuntimeError(f"engine.load_checkpoint found nothing at {load_dir} tag {tag}")
        saved_data = self.restore_client_state(client)
        if data is not None and saved_data is not None:
            data.load_state_dict(saved_data)
        step = self.saved_step(client)
        step = int(engine.global_steps) if step is None else step
        digests, tensors = self.engine_state(engine, data=_data_state(data))
        self.loaded(step, digests, tensors, kind=self.resume_kind, engine_global_steps=int(engine.global_steps))
        self.grads(step + 1, *grad_buffer_digests(engine))
        return step + 1

    def after_step(self, engine: Any, step: int, data: Any = None, **info: Any) -> Optional[str]:
        """After optimizer step ``step``: the ``snapshot`` at ``PARITY_DIGEST_AT``; at
        ``PARITY_SAVE_AT`` the save into ``<PARITY_CHECKPOINT_DIR>/global_step<step>`` with the RNG
        and data position in ``client_state``, the ``saved`` digests of what it holds, and the
        completion marker (and, in a fused split's baseline, which trains on, the ``after_save``
        digests of the state it continues with). Returns the tag folder when it saved. Call on every rank."""
        if self.should_snapshot(step):
            self.snapshot(step, *self.engine_state(engine, data=_data_state(data)))
        if self.should_digest_grads(step + 1):
            # DeepSpeed zeroes its gradient buffers inside engine.step(), at the end of the step:
            # what they hold now is what step + 1's first backward accumulates onto.
            self.grads(step + 1, *grad_buffer_digests(engine))
        if not self.should_save(step):
            return None
        tag_dir = self.contract.tag_dir(step)
        client = self.client_state(_data_state(data), step=step)
        engine.save_checkpoint(self.checkpoint_dir, tag=os.path.basename(tag_dir), client_state=client)
        digests, tensors = self.checkpoint_state(engine, client)
        # save_checkpoint ends with a barrier: every rank's files are written once it returned.
        self.mark_complete(tag_dir, step)
        self.saved(step, digests, tensors, micro_step=int(engine.micro_steps),
                   grad_accum=int(engine.gradient_accumulation_steps()), **info)
        if self.reports_after_save(step):
            # A fused split's baseline trains on: the state it continues with after the save.
            self.after_save(step, *self.engine_state(engine, data=_data_state(data)))
        return tag_dir

    # -- checkpoint locations ------------------------------------------------------------------------

    def load_location(self) -> Tuple[str, str]:
        """``(load_dir, tag)`` for ``engine.load_checkpoint`` from the folder the harness names
        (a native tag folder ``<dir>/global_step<N>`` or a universal folder)."""
        if not self.resume_from:
            raise ValueError("this phase does not resume (PARITY_RESUME_FROM is empty)")
        path = os.path.abspath(self.resume_from.rstrip("/"))
        return os.path.dirname(path), os.path.basename(path)

    def first_step(self, engine: Any = None) -> int:
        """First optimizer step to run: 1, one past the step :meth:`loaded` reported, or with an
        ``engine`` on a resume phase one past its restored ``global_steps``."""
        if engine is not None and self.resume_from:
            return int(getattr(engine, "global_steps", 0) or 0) + 1
        return super().first_step()

    def mark_complete(self, tag_dir: str, step: int, **info: Any) -> Optional[str]:
        """The core marker (:meth:`parity_hooks.Parity.mark_complete`). Call it on every rank right
        after ``engine.save_checkpoint`` returned: DeepSpeed's own ``latest`` file is written by rank
        0 *before* the final barrier of ``save_checkpoint`` (other ranks may still be writing their
        shards) and without an atomic rename, and nothing inside the tag folder marks completion.
        ``save_checkpoint`` ends with a barrier, so once it returned on rank 0 every rank's files
        are written."""
        return super().mark_complete(tag_dir, step, **info)

    # -- resume state DeepSpeed does not checkpoint ---------------------------------------------------

    def client_state(self, data_state: Optional[Mapping[str, Any]] = None, step: Optional[int] = None
                     ) -> Dict[str, Any]:
        """``client_state`` for ``save_checkpoint``: every rank's RNG states (gathered: DeepSpeed writes
        ``client_state`` once, from rank 0), the data sampler's state and the optimizer step of the
        save. Call on every rank."""
        return {CLIENT_STATE_KEY: {"rng": gather_objects(rng_state()),
                                   "data": dict(data_state) if data_state is not None else None,
                                   "step": step}}

    @staticmethod
    def saved_step(client_state: Optional[Mapping[str, Any]]) -> Optional[int]:
        """The optimizer step recorded by :meth:`client_state` (``None`` when absent). Unlike
        ``engine.global_steps`` it survives ``load_checkpoint(load_module_only=True)``, which does not
        restore the engine's counters."""
        saved = (client_state or {}).get(CLIENT_STATE_KEY) or {}
        step = saved.get("step")
        return int(step) if step is not None else None

    def restore_client_state(self, client_state: Optional[Mapping[str, Any]], restore_rng: bool = True
                             ) -> Optional[Dict[str, Any]]:
        """Restores this rank's RNG states from a ``client_state`` written by :meth:`client_state` and
        returns the saved data-sampler state (``None`` when absent). With another world size the
        RNG can only be restored when every saved rank held the same state (replicated RNG);
        otherwise this raises instead of silently reseeding."""
        saved = (client_state or {}).get(CLIENT_STATE_KEY)
        if not saved:
            raise KeyError(f"checkpoint client_state has no '{CLIENT_STATE_KEY}' entry "
                           "(saved without Parity.client_state?)")
        if restore_rng:
            states: List[Any] = saved["rng"]
            rank, world = rank_and_world()
            if len(states) == world:
                mine = states[rank]
            elif all(_replicated_rng(s) == _replicated_rng(states[0]) for s in states):
                mine = states[0]
            else:
                raise RuntimeError(f"RNG states of {len(states)} ranks differ and cannot be mapped onto "
                                   f"{world} ranks")
            set_rng_state(mine)
        return saved.get("data")

    # -- digests ---------------------------------------------------------------------------------------

    @staticmethod
    def tensor_digest(tensors: Any) -> str:
        """Digest of named tensors in name order, as fp32 (so ranks and layouts agree)."""
        return named_tensors_digest((name, t if t is ABSENT else t.float()) for name, t in tensors)

    def engine_state(self, engine: Any, data: Optional[Mapping[str, Any]] = None, rng: bool = True,
                     saved_rng: Optional[List[Any]] = None) -> Tuple[Dict[str, str], Dict[str, str]]:
        """``(digests, tensors)`` of a DeepSpeed engine's logical state: the component digests and the
        per-tensor map the events carry, from one streaming pass (call on every rank). ``saved_rng``
        (every rank's RNG states, as :meth:`client_state` gathers them) is hashed instead of the
        running generators."""
        digests, tensors = logical_state(engine)
        if rng:
            digests["rng"] = rng_digest() if saved_rng is None else rng_digest_of_states(saved_rng)
        if data is not None:
            digests["data"] = digest_json(dict(data))
        return digests, tensors

    def checkpoint_state(self, engine: Any, client_state: Mapping[str, Any]
                         ) -> Tuple[Dict[str, str], Dict[str, str]]:
        """:meth:`engine_state` of what a save wrote: the engine's state with the RNG states and the
        data position taken from the ``client_state`` passed to ``save_checkpoint`` (not from the
        running process), so a save that recorded them wrongly shows in the ``saved`` digests."""
        saved = client_state[CLIENT_STATE_KEY]
        return self.engine_state(engine, data=saved.get("data"), saved_rng=saved["rng"])


def grad_buffer_digests(engine: Any) -> Tuple[Dict[str, str], Dict[str, str]]:
    """``({"grad_buffers": digest}, tensors)`` of the gradient buffers a DeepSpeed engine
    accumulates into across micro-steps: every module parameter's ``.grad`` (ZeRO-0/1, and ZeRO-2,
    whose ``.grad`` is a view into its partition buffer) and the bf16 optimizer's fp32 gradient
    accumulators (``fp32_groups_gradients_flat``, named only when not empty, so engines of any ZeRO
    stage, precision or layout whose buffers are all empty digest alike). ``None`` and all-zero
    digest alike (``_torch_state.grad_buffer``). Buffers DeepSpeed overwrites on a window's first micro-step
    (ZeRO-3's ``grad_partitions_flat_buffer``, ZeRO-1's ``averaged_gradients``) carry nothing over
    and are left out. Each rank hashes its own buffers; the digest is the common one when every
    rank's agrees, else that of the per-rank list; ``tensors`` are this rank's. A collective:
    call on every rank."""
    named: List[Tuple[str, Any]] = [(n, _torch_state.grad_buffer(p.grad))
                                    for n, p in engine.module.named_parameters() if p.requires_grad]
    for i, flat in enumerate(getattr(engine.optimizer, "fp32_groups_gradients_flat", None) or []):
        held = _torch_state.grad_buffer(flat)
        if held is not ZERO:  # an empty accumulator is left out: stages and layouts then agree
            named.append((f"fp32_groups_gradients_flat.{i}", held))
    tensors = {f"{n}{SEP}grad": tensor_digest(t) for n, t in named}
    mine = named_tensors_digest(named)
    every = gather_objects(mine)
    return {"grad_buffers": every[0] if len(set(every)) == 1 else digest_json(every)}, tensors


def _data_state(data: Any) -> Optional[Dict[str, Any]]:
    """A sampler's ``state_dict()``, a state mapping as it is, or None."""
    if data is None:
        return None
    if hasattr(data, "state_dict"):
        return dict(data.state_dict())
    return dict(data)


# -- engine internals (torch / DeepSpeed imported lazily) ---------------------------------------------


def _hash_fp32(h: "hashlib._Hash", name: str, tensor: Any) -> None:
    """A logical tensor as fp32 bytes, so every layout and precision of the same values agrees."""
    hash_tensor(h, name, tensor if tensor is ABSENT else tensor.float())


def _fp32_digest(tensor: Any) -> str:
    return tensor_digest(tensor if tensor is ABSENT else tensor.float())


def _comm_device() -> Any:
    """Where tensors of a collective must live: the current CUDA device under NCCL, else the CPU."""
    import torch
    import torch.distributed as tdist
    if tdist.is_available() and tdist.is_initialized() and tdist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def base_optimizer(engine: Any) -> Any:
    """The torch optimizer holding the fp32 state (below ZeRO / bf16 wrappers)."""
    opt = engine.optimizer
    while hasattr(opt, "optimizer") and not isinstance(getattr(opt, "state", None), dict):
        opt = opt.optimizer
    inner = getattr(opt, "optimizer", None)
    if inner is not None and hasattr(inner, "state") and hasattr(inner, "param_groups"):
        return inner
    return opt


def flat_states_by_storage(base_opt: Any) -> Dict[int, Tuple[Any, Dict[str, Any]]]:
    """Optimizer state of flat fp32 partitions, keyed by the partition's storage pointer."""
    out = {}
    for key, state in base_opt.state.items():
        out[key.untyped_storage().data_ptr()] = (key, state)
    return out


def fp16_optimizer_slices(engine: Any) -> Dict[int, Tuple[Any, int]]:
    """Stage 0 with bf16/fp16 (DeepSpeed's FP16_Optimizer): the fp32 master of each module
    parameter is a slice of ``fp32_groups_flat[i]`` (params concatenated in ``fp16_groups[i]``
    order, no padding), and the base optimizer's state is keyed by that flat tensor."""
    opt = engine.optimizer
    out: Dict[int, Tuple[Any, int]] = {}
    if hasattr(opt, "fp16_groups") and isinstance(getattr(opt, "fp32_groups", None), list):
        # FP16_UnfusedOptimizer (stage 0 with bf16): one fp32 master tensor per parameter, in
        # fp16_groups order; the base optimizer's state is keyed by each of them.
        for group, masters in zip(opt.fp16_groups, opt.fp32_groups):
            trainable = [p for p in group if p.requires_grad]
            assert len(trainable) == len(masters), (len(trainable), len(masters))
            for p, master in zip(trainable, masters):
                assert p.shape == master.shape, (p.shape, master.shape)
                out[id(p)] = (master, 0)
        return out
    if hasattr(opt, "fp16_groups") and hasattr(opt, "fp32_groups_flat"):
        for group, flat in zip(opt.fp16_groups, opt.fp32_groups_flat):
            offset = 0
            for p in group:
                out[id(p)] = (flat, offset)
                offset += p.numel()
            assert offset == flat.numel(), (offset, flat.numel())
    return out


def _state_of(base: Any, tensor: Any) -> Dict[str, Any]:
    """The optimizer state of ``tensor`` or of the tensor it is a view of."""
    if tensor in base.state:
        return base.state[tensor]
    for key, state in base.state.items():
        if key.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr() and key.numel() == tensor.numel():
            return state
    return {}


def full_hp(param: Any, key: Optional[str], engine: Any, flat_states: Dict[int, Any],
             fp16_slices: Dict[int, Tuple[Any, int]]) -> Any:
    """The full fp32 tensor (``key=None``: master weight; else an optimizer state) of ``param``
    over its ZeRO data-parallel group, shaped like the *local* parameter, or ``ABSENT``."""
    import torch
    import deepspeed.comm as dist

    if hasattr(param, "ds_id"):  # ZeRO-3: reads the optimizer's flat fp32 partition directly
        if key is not None and not base_optimizer(engine).state:
            return ABSENT
        return param._z3_optimizer.get_full_hp_param(param, key).float().view(param.ds_shape)
    mapping = getattr(param, "_hp_mapping", None)
    if hasattr(param, "_hp_mapping"):  # ZeRO-1/2 and the bf16 optimizer
        buf = torch.zeros(param.numel(), dtype=torch.float32, device=_comm_device())
        absent = torch.zeros(1, device=buf.device)
        if mapping is not None:
            frag = mapping.hp_fragment
            if key is not None:
                ptr = frag.untyped_storage().data_ptr()
                flat, state = flat_states.get(ptr, (None, {}))
                if key not in state:
                    absent.fill_(1)
                else:
                    offset = frag.storage_offset() - flat.storage_offset()
                    assert offset == mapping.hp_fragment_address.start, (offset, mapping.hp_fragment_address)
                    frag = state[key].narrow(0, offset, mapping.hp_fragment_address.numel)
            if not absent.item():
                lp = mapping.lp_fragment_address
                buf.narrow(0, lp.start, lp.numel).copy_(frag.data.float())
        dist.all_reduce(buf, group=param._dp_group)
        dist.all_reduce(absent, group=param._dp_group)  # every rank agrees (collectives stay matched)
        return ABSENT if absent.item() else buf.view(param.shape)
    if id(param) in fp16_slices:  # stage 0, bf16/fp16: FP16_(Unfused)Optimizer's fp32 masters
        flat, offset = fp16_slices[id(param)]
        if key is None:
            source = flat
        else:
            state = _state_of(base_optimizer(engine), flat)
            if key not in state:
                return ABSENT
            source = state[key]
        return source.detach().reshape(-1).narrow(0, offset, param.numel()).float().view(param.shape)
    # No wrapper (stage 0, fp32): the module parameter is the master weight.
    if key is None:
        return param.detach().float()
    state = base_optimizer(engine).state.get(param, {})
    if key not in state:
        return ABSENT
    return state[key].float()


def expert_layout(param: Any) -> Optional[Dict[str, Any]]:
    try:
        from deepspeed.checkpoint.constants import DS_AUTOEP_UC_META
    except ImportError:  # DeepSpeed before 0.19.8
        return _legacy_expert_layout(param)
    return getattr(param, DS_AUTOEP_UC_META, None)


def _legacy_expert_layout(param: Any) -> Optional[Dict[str, Any]]:
    """The placement of an expert parameter when DeepSpeed attaches none (0.19.7 has no
    ``ds_autoep_uc_meta``): an expert-parallel parameter (``allreduce=False`` with a ``group_name``)
    whose local experts are placed uniformly and contiguously — EP rank r holds experts
    ``r*L .. r*L+L-1`` — which is also what 0.19.8 assumes when it loads such a checkpoint. Without
    it the digests of a 0.19.7 phase would hash each rank's local shard, not the logical tensor, and
    never match a 0.19.8 phase's."""
    if getattr(param, "allreduce", True) or not hasattr(param, "group_name"):
        return None
    import torch.distributed as tdist
    group = _ep_group(param)
    ep_size, ep_rank = tdist.get_world_size(group=group), tdist.get_rank(group=group)
    shape = list(getattr(param, "ds_shape", None) or param.shape)
    local = shape[0]
    # The keys of 0.19.8's metadata that the adapter and process_state.py read.
    return {"local_experts": list(range(ep_rank * local, (ep_rank + 1) * local)),
            "logical_shape": [local * ep_size, *shape[1:]], "ep_rank": ep_rank,
            "expert_placement": {"ep_size": ep_size}}


def _ep_group(param: Any) -> Any:
    from deepspeed.utils import groups
    return groups._get_expert_parallel_group(param.group_name)


def _logical(param: Any, local_full: Any) -> Any:
    """Assembles an AutoEP expert parameter's logical ``[E, ...]`` tensor from every EP rank's local
    experts (placement recorded by DeepSpeed); other parameters are returned as they are."""
    import torch
    import torch.distributed as tdist

    meta = expert_layout(param)
    if meta is None or local_full is ABSENT:
        return local_full
    group = _ep_group(param)
    ep_size = tdist.get_world_size(group=group)
    logical_shape = list(meta["logical_shape"])
    if ep_size == 1:
        assert list(local_full.shape) == logical_shape, (local_full.shape, logical_shape)
        return local_full
    experts: List[Any] = [None] * ep_size
    tdist.all_gather_object(experts, list(meta["local_experts"]), group=group)
    counts = [len(e) for e in experts]
    width = max(counts)
    padded = torch.zeros([width, *logical_shape[1:]], dtype=torch.float32, device=_comm_device())
    padded[:local_full.shape[0]].copy_(local_full)
    pieces = [torch.empty_like(padded) for _ in range(ep_size)]
    tdist.all_gather(pieces, padded, group=group)
    pieces = [piece.cpu() for piece in pieces]
    out = torch.full(logical_shape, float("nan"), dtype=torch.float32)
    for rank_experts, piece in zip(experts, pieces):
        for i, e in enumerate(rank_experts):
            out[e].copy_(piece[i])
    if torch.isnan(out).any() and not torch.isnan(torch.cat(pieces)).any():
        raise RuntimeError(f"expert placement does not cover all {logical_shape[0]} experts: {experts}")
    return out


def logical_state_digests(engine: Any) -> Dict[str, str]:
    """The component digests of :func:`logical_state` (call on every rank)."""
    return logical_state(engine)[0]


def logical_state(engine: Any) -> Tuple[Dict[str, str], Dict[str, str]]:
    """``(digests, tensors)`` of a DeepSpeed engine's logical state: ``params``, ``exp_avg``,
    ``exp_avg_sq``, ``module_weights`` (bf16 modules), ``optimizer_step``, ``lr_scheduler``,
    ``param_groups``, ``engine_counters`` and ``loss_scaler`` (fp16), and one digest per tensor
    (:func:`tensor_entries`). Streams one logical parameter at a time: each is gathered once,
    hashed into its component and into its per-tensor entries, and dropped. Call on every rank."""
    base = base_optimizer(engine)
    flat_states = flat_states_by_storage(base)
    fp16_slices = fp16_optimizer_slices(engine)
    named = sorted(((n, p) for n, p in engine.module.named_parameters() if p.requires_grad),
                   key=lambda item: item[0])
    digests: Dict[str, str] = {}
    tensors: Dict[str, str] = {}
    for component, kind, key in TENSOR_KINDS:
        h = hashlib.sha256()
        for name, param in named:
            full = _logical(param, full_hp(param, key, engine, flat_states, fp16_slices))
            _hash_fp32(h, name, full)
            tensors.update(tensor_entries(name, kind, full, _expert_count(param)))
        digests[component] = h.hexdigest()[:16]
    module = _module_weights_digest(named, tensors)
    if module is not None:
        digests["module_weights"] = module
    digests["optimizer_step"] = digest_json(optimizer_step_state(engine))
    scheduler = getattr(engine, "lr_scheduler", None)
    if scheduler is not None:
        digests["lr_scheduler"] = digest_json(scheduler.state_dict())
    digests["param_groups"] = digest_json(param_groups_state(engine))
    digests["engine_counters"] = digest_json(engine_counters(engine))
    scaler = loss_scaler_state(engine)
    if scaler is not None:
        digests["loss_scaler"] = digest_json(scaler)
    return digests, tensors


def tensor_entries(name: str, kind: str, full: Any, experts: Optional[int]) -> Dict[str, str]:
    """The per-tensor digests of one logical tensor: ``{"<name> · <kind>": digest}``, or for an
    expert parameter (``experts`` = E of its logical ``[E, ...]``) one entry per expert,
    ``"<name> · expert <e> · <kind>"`` (an absent state gives the absent marker's digest)."""
    if experts is None:
        return {f"{name}{SEP}{kind}": _fp32_digest(full)}
    return {f"{name}{SEP}expert {e}{SEP}{kind}": _fp32_digest(full if full is ABSENT else full[e])
            for e in range(experts)}


def _expert_count(param: Any) -> Optional[int]:
    """E of an AutoEP expert parameter's logical ``[E, ...]`` shape; None for other parameters."""
    meta = expert_layout(param)
    return None if meta is None else int(meta["logical_shape"][0])


def _module_weights_digest(named: List[Tuple[str, Any]], tensors: Dict[str, str]) -> Optional[str]:
    """``module_weights``: the module's own parameters as trained (bf16 when the fp32 master is a
    separate copy), logical and unsharded, hashed in name order; per-tensor entries of kind
    ``module`` go into ``tensors``. None when every module parameter is fp32 (then it is the
    master itself, which ``params`` hashes)."""
    import torch

    if all(param.dtype == torch.float32 for _, param in named):
        return None
    h = hashlib.sha256()
    for name, param in named:
        full = _logical(param, _module_weight(param))
        _hash_fp32(h, name, full)
        tensors.update(tensor_entries(name, "module", full, _expert_count(param)))
    return h.hexdigest()[:16]


def _module_weight(param: Any) -> Any:
    """A module parameter's local full tensor as fp32 (exact for bf16): ZeRO-3 gathers its
    partitions over the parameter's group first (a collective)."""
    if hasattr(param, "ds_id"):
        import deepspeed

        with deepspeed.zero.GatheredParameters([param]):
            return param.data.detach().float().cpu().clone().view(param.ds_shape)
    return param.detach().float().cpu()


def param_groups_state(engine: Any) -> Any:
    """What the ``param_groups`` digest hashes: each param group's hyper-parameters (everything but
    ``params``) of the optimizer that applies the update, in group order; the list when every rank
    holds the same, else ``{"per_rank": [...]}`` (call on every rank)."""
    return _torch_state.param_groups_state(base_optimizer(engine), gather_objects)


def engine_counters(engine: Any) -> Dict[str, int]:
    """What the ``engine_counters`` digest hashes: ``global_steps``, ``global_samples``,
    ``skipped_steps``, and ``window_micro_steps``, the micro-steps inside the unfinished
    accumulation window (``micro_steps % gradient_accumulation_steps``, 0 on a boundary).
    DeepSpeed 0.19.8 does not checkpoint ``micro_steps`` (``_load_checkpoint`` restores the other
    three; a resumed engine counts micro-steps from 0), and the only use of it in the training step
    is the accumulation boundary, ``(micro_steps + 1) % gas``: the window position is the state a
    resume must restore (docs/deepspeed.md, "Digests")."""
    gas = int(engine.gradient_accumulation_steps())
    return {"global_steps": int(engine.global_steps), "global_samples": int(engine.global_samples),
            "skipped_steps": int(engine.skipped_steps), "window_micro_steps": int(engine.micro_steps) % gas}


#: Loss-scaler attributes ``loss_scaler`` hashes (those a scaler has).
LOSS_SCALER_KEYS = ("cur_scale", "cur_iter", "last_overflow_iter", "scale_factor", "scale_window", "min_scale",
                    "delayed_shift", "cur_hysteresis", "consecutive_hysteresis", "dynamic")


def loss_scaler_state(engine: Any) -> Optional[Dict[str, Any]]:
    """The fp16 loss scaler's state (``LOSS_SCALER_KEYS``), or None without fp16 or a scaler."""
    fp16 = getattr(engine, "fp16_enabled", None)
    if fp16 is None or not fp16():
        return None
    scaler = getattr(engine.optimizer, "loss_scaler", None)
    if scaler is None:
        return None
    return {key: getattr(scaler, key) for key in LOSS_SCALER_KEYS if hasattr(scaler, key)}



def optimizer_step_state(engine: Any) -> Dict[str, Any]:
    """What the ``optimizer_step`` digest hashes (``parity_hooks._torch_state.optimizer_step_state``)
    of the torch optimizer below the ZeRO / bf16 wrappers, over every rank (call on every rank)."""
    return _torch_state.optimizer_step_state(base_optimizer(engine), gather_objects)


def optimizer_steps(engine: Any) -> List[int]:
    """Adam's own step counters (distinct values over every state entry on every rank, sorted)."""
    return optimizer_step_state(engine)["steps"]
