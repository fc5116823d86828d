"""Resume-parity adapter for DeepSpeed training scripts.

A handful of calls make a DeepSpeed script speak the harness's trainer contract (README, "The
trainer contract"): full-precision JSONL metrics, ``saved``/``loaded`` events with digests of the
*logical* (unsharded, topology-independent) state, the checkpoint locations the harness chose, and
the resume state DeepSpeed does not checkpoint itself (RNG, data position)::

    from parity_adapter import Parity
    parity = Parity.from_env()                          # reads PARITY_* variables
    first = 1
    if parity.resume_from:                              # resume phases
        load_dir, tag = parity.load_location()
        _, client = engine.load_checkpoint(load_dir, tag=tag)
        sampler.load_state_dict(parity.restore_client_state(client))   # RNG + data position
        first = parity.saved_step(client) + 1
        parity.loaded(first - 1, digests=parity.engine_digests(engine, data=sampler.state_dict()))
    for step in range(first, parity.stop_at + 1):
        loss = ...                                      # one optimizer step (all micro-batches)
        parity.step(step, loss=loss, lr=lr_used, grad_norm=engine.get_global_grad_norm())
        if step == parity.save_at:                      # split phase only
            engine.save_checkpoint(parity.checkpoint_dir, tag=f"global_step{step}",
                                   client_state=parity.client_state(sampler.state_dict(), step=step))
            digests = parity.engine_digests(engine, data=sampler.state_dict())
            parity.mark_complete(f"{parity.checkpoint_dir}/global_step{step}", step)
            parity.saved(step, digests=digests,
                         micro_step=engine.micro_steps, grad_accum=engine.gradient_accumulation_steps())

Only the standard library is needed to write metrics (``Parity``, ``step``, ``saved``, ``loaded``,
``digest_bytes``); everything touching torch or DeepSpeed imports them lazily. ``engine_digests``,
``client_state`` and ``restore_client_state`` use collectives: call them on every rank, in the same
order. Only rank 0 writes. Numbers are written with ``repr``-exact precision: a float32 loss widened
to float64 is exact, so the harness's exact lane can compare bits.

Digest components (each a 16-hex SHA-256 prefix; a failing state check names the component):

``params``          fp32 master weights of every trainable parameter, unsharded
``exp_avg``         Adam first moments, unsharded
``exp_avg_sq``      Adam second moments, unsharded
``optimizer_step``  Adam's own step counters (the optimizer state's ``step``, not ``global_steps``),
                    and whether entries share one step tensor (see ``optimizer_step_state``)
``lr_scheduler``    the LR scheduler's ``state_dict()``
``rng``             python ``random``, numpy and torch CPU generator states (a rank's CUDA generator
                    is saved and restored, but not digested: it is per-device state)
``data``            the data sampler's state (position), when the script passes it

Tensors are hashed one logical parameter at a time (gathered, hashed, dropped), keyed by the
parameter's name, shape and fp32 bytes, in name order. AutoEP expert parameters (``[E_local, ...]``
on each expert-parallel rank, tagged by DeepSpeed with ``ds_autoep_uc_meta``) are assembled into
their logical ``[E, ...]`` form in global expert order, so a correct change of ``autoep_size`` or of
the data-parallel size gives equal digests. The optimizer moments are read from the optimizer's
own state, not through ``safe_get_full_optimizer_state``: after a native ZeRO-1/2 (and bf16
optimizer) ``load_checkpoint`` DeepSpeed links the per-parameter optimizer fragments only inside the
first ``step()``, so that helper raises before it; the digests are available right after loading.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

#: Key under which ``client_state`` carries what DeepSpeed does not checkpoint itself.
CLIENT_STATE_KEY = "parity"

#: Completion marker written into the tag folder after ``save_checkpoint`` returned (``mark_complete``).
COMPLETE_MARKER = "parity_checkpoint_complete.json"

DIGEST_COMPONENTS = ("params", "exp_avg", "exp_avg_sq", "optimizer_step", "lr_scheduler", "rng", "data")


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


def digest_json(value: Any) -> str:
    """Digest of a JSON-able value (keys sorted; tensors and other objects through ``repr``)."""
    return digest_bytes([json.dumps(value, sort_keys=True, default=_json_default).encode()])


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)


class Parity:
    """Writes the trainer contract's metrics for one phase and computes its state digests."""

    def __init__(self, metrics_file: Optional[str], phase: str, steps: int, stop_at: int,
                 save_at: Optional[int], seed: Optional[int], checkpoint_dir: Optional[str],
                 resume_from: Optional[str], resume_kind: Optional[str], rank: int = 0,
                 run_dir: Optional[str] = None) -> None:
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
        self.run_dir = run_dir

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "Parity":
        """Reads the ``PARITY_*`` variables the harness sets (``RANK`` decides who writes)."""
        steps = int(env.get("PARITY_STEPS", "0") or 0)
        stop_at = int(env.get("PARITY_STOP_AT", "") or steps)
        get = lambda k: env.get(k, "") or None  # noqa: E731
        save_at = get("PARITY_SAVE_AT")
        seed = get("PARITY_SEED")
        return cls(get("PARITY_METRICS_FILE"), env.get("PARITY_PHASE", ""), steps, stop_at,
                   int(save_at) if save_at else None, int(seed) if seed else None,
                   get("PARITY_CHECKPOINT_DIR"), get("PARITY_RESUME_FROM"), get("PARITY_RESUME_KIND"),
                   int(env.get("RANK", "0") or 0), get("PARITY_RUN_DIR"))

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

    def snapshot(self, step: int, digests: Optional[Mapping[str, str]] = None) -> None:
        """The ``snapshot`` event: the digests of the state after ``step`` of a run that does not save
        (the baseline at ``PARITY_DIGEST_AT``), which the split's ``saved`` digests must equal."""
        self._write({"event": "snapshot", "step": int(step), "digests": dict(digests or {})})

    def loaded(self, step: int, digests: Optional[Mapping[str, str]] = None, **extra: Any) -> None:
        """The ``loaded`` event after restoring a checkpoint."""
        self._write({"event": "loaded", "step": int(step), "digests": dict(digests or {}), **extra})

    # -- checkpoint locations ------------------------------------------------------------------------

    def load_location(self) -> Tuple[str, str]:
        """``(load_dir, tag)`` for ``engine.load_checkpoint`` from the folder the harness names
        (a native tag folder ``<dir>/global_step<N>`` or a universal folder)."""
        if not self.resume_from:
            raise ValueError("this phase does not resume (PARITY_RESUME_FROM is empty)")
        path = os.path.abspath(self.resume_from.rstrip("/"))
        return os.path.dirname(path), os.path.basename(path)

    def first_step(self, engine: Any = None) -> int:
        """First optimizer step to run: 1, or one past the restored ``global_steps``."""
        return int(getattr(engine, "global_steps", 0) or 0) + 1 if self.resume_from else 1

    def mark_complete(self, tag_dir: str, step: int, **info: Any) -> Optional[str]:
        """Writes ``<tag_dir>/parity_checkpoint_complete.json`` atomically (rank 0 only). Call it on
        every rank right after ``engine.save_checkpoint`` returned: DeepSpeed's own ``latest`` file is
        written by rank 0 *before* the final barrier of ``save_checkpoint`` (other ranks may still be
        writing their shards) and without an atomic rename, and nothing inside the tag folder marks
        completion. ``save_checkpoint`` ends with a barrier, so once it returned on rank 0 every rank's
        files are written. Use ``trainer.checkpoint_marker: parity_checkpoint_complete.json``."""
        if self.rank != 0:
            return None
        path = os.path.join(tag_dir, COMPLETE_MARKER)
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"step": int(step), **info}, f, sort_keys=True, default=_json_default)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    # -- resume state DeepSpeed does not checkpoint ---------------------------------------------------

    def client_state(self, data_state: Optional[Mapping[str, Any]] = None, step: Optional[int] = None
                     ) -> Dict[str, Any]:
        """``client_state`` for ``save_checkpoint``: every rank's RNG states (gathered: DeepSpeed writes
        ``client_state`` once, from rank 0), the data sampler's state and the optimizer step of the
        save. Call on every rank."""
        return {CLIENT_STATE_KEY: {"rng": _gather_objects(rng_state()),
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
            rank, world = _rank_and_world()
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
    def tensor_digest(tensors: Iterable[Tuple[str, Any]]) -> str:
        """Digest of named tensors in name order (CPU fp32 bytes, so ranks and layouts agree)."""
        h = hashlib.sha256()
        for name, tensor in sorted(tensors, key=lambda item: item[0]):
            _hash_tensor(h, name, tensor)
        return h.hexdigest()[:16]

    def engine_digests(self, engine: Any, data: Optional[Mapping[str, Any]] = None,
                       rng: bool = True) -> Dict[str, str]:
        """Digests of the logical state of a DeepSpeed engine (call on every rank)."""
        digests = logical_state_digests(engine)
        if rng:
            digests["rng"] = rng_digest()
        if data is not None:
            digests["data"] = digest_json(dict(data))
        return digests


# -- helpers needing torch / DeepSpeed (imported lazily) ------------------------------------------------


def _rank_and_world() -> Tuple[int, int]:
    import torch.distributed as tdist
    if tdist.is_available() and tdist.is_initialized():
        return tdist.get_rank(), tdist.get_world_size()
    return 0, 1


def _gather_objects(obj: Any) -> List[Any]:
    import torch.distributed as tdist
    if not (tdist.is_available() and tdist.is_initialized()):
        return [obj]
    out: List[Any] = [None] * tdist.get_world_size()
    tdist.all_gather_object(out, obj)
    return out


def rng_state() -> Dict[str, Any]:
    """This process's RNG states: python ``random``, numpy, torch CPU, and the current CUDA device's
    generator when CUDA is present (one device per rank: the other visible devices' generators are
    not this rank's, and differ with the world size)."""
    import random
    import torch
    state: Dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy
        state["numpy"] = numpy.random.get_state()
    except ImportError:  # pragma: no cover
        pass
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    import random
    import torch
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy
        numpy.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def rng_digest() -> str:
    """Digest of the RNG states of every rank: of one state when all ranks agree (replicated RNG,
    so the digest is topology-independent), else of the per-rank list. Call on every rank."""
    mine = _replicated_rng(rng_state())
    every = _gather_objects(mine)
    return mine if len(set(every)) == 1 else digest_json(every)


def _replicated_rng(state: Mapping[str, Any]) -> str:
    """Digest of the generators that can be replicated across ranks (all but CUDA's)."""
    return digest_json(_rng_for_digest(state))


def _rng_for_digest(state: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in state.items():
        if key == "cuda":  # per device, so per rank: restored, never part of the digest
            continue
        if key == "numpy":
            name, keys, pos, has_gauss, cached = value
            out[key] = [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]
        elif key in ("torch",):
            out[key] = hashlib.sha256(value.numpy().tobytes()).hexdigest()
        else:
            out[key] = value
    return out


def _hash_tensor(h: "hashlib._Hash", name: str, tensor: Any) -> None:
    if tensor is ABSENT:
        h.update(name.encode())
        h.update(b"<absent>")
        return
    t = tensor.detach().float().cpu().contiguous()
    h.update(name.encode())
    h.update(repr(tuple(t.shape)).encode())
    h.update(t.numpy().tobytes())


def _comm_device() -> Any:
    """Where tensors of a collective must live: the current CUDA device under NCCL, else the CPU."""
    import torch
    import torch.distributed as tdist
    if tdist.is_available() and tdist.is_initialized() and tdist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _base_optimizer(engine: Any) -> Any:
    """The torch optimizer holding the fp32 state (below ZeRO / bf16 wrappers)."""
    opt = engine.optimizer
    while hasattr(opt, "optimizer") and not isinstance(getattr(opt, "state", None), dict):
        opt = opt.optimizer
    inner = getattr(opt, "optimizer", None)
    if inner is not None and hasattr(inner, "state") and hasattr(inner, "param_groups"):
        return inner
    return opt


def _flat_states_by_storage(base_opt: Any) -> Dict[int, Tuple[Any, Dict[str, Any]]]:
    """Optimizer state of flat fp32 partitions, keyed by the partition's storage pointer."""
    out = {}
    for key, state in base_opt.state.items():
        out[key.untyped_storage().data_ptr()] = (key, state)
    return out


class _Absent:
    """An optimizer state that does not exist (yet): a fresh optimizer before its first step, e.g.
    after ``load_checkpoint(load_optimizer_states=False)``. Hashed as a marker, never as zeros."""


ABSENT = _Absent()


def _fp16_optimizer_slices(engine: Any) -> Dict[int, Tuple[Any, int]]:
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


def _full_hp(param: Any, key: Optional[str], engine: Any, flat_states: Dict[int, Any],
             fp16_slices: Dict[int, Tuple[Any, int]]) -> Any:
    """The full fp32 tensor (``key=None``: master weight; else an optimizer state) of ``param``
    over its ZeRO data-parallel group, shaped like the *local* parameter, or ``ABSENT``."""
    import torch
    import deepspeed.comm as dist

    if hasattr(param, "ds_id"):  # ZeRO-3: reads the optimizer's flat fp32 partition directly
        if key is not None and not _base_optimizer(engine).state:
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
            state = _state_of(_base_optimizer(engine), flat)
            if key not in state:
                return ABSENT
            source = state[key]
        return source.detach().reshape(-1).narrow(0, offset, param.numel()).float().view(param.shape)
    # No wrapper (stage 0, fp32): the module parameter is the master weight.
    if key is None:
        return param.detach().float()
    state = _base_optimizer(engine).state.get(param, {})
    if key not in state:
        return ABSENT
    return state[key].float()


def _expert_layout(param: Any) -> Optional[Dict[str, Any]]:
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

    meta = _expert_layout(param)
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
    """``params``, ``exp_avg``, ``exp_avg_sq``, ``optimizer_step`` and ``lr_scheduler`` digests of a
    DeepSpeed engine's logical state (call on every rank; streams one parameter at a time)."""
    base = _base_optimizer(engine)
    flat_states = _flat_states_by_storage(base)
    fp16_slices = _fp16_optimizer_slices(engine)
    named = sorted(((n, p) for n, p in engine.module.named_parameters() if p.requires_grad),
                   key=lambda item: item[0])
    digests: Dict[str, str] = {}
    for component, key in (("params", None), ("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq")):
        h = hashlib.sha256()
        for name, param in named:
            _hash_tensor(h, name, _logical(param, _full_hp(param, key, engine, flat_states, fp16_slices)))
        digests[component] = h.hexdigest()[:16]
    digests["optimizer_step"] = digest_json(optimizer_step_state(engine))
    scheduler = getattr(engine, "lr_scheduler", None)
    if scheduler is not None:
        digests["lr_scheduler"] = digest_json(scheduler.state_dict())
    return digests


def optimizer_steps(engine: Any) -> List[int]:
    """Adam's own step counters (distinct values over every state entry on every rank, sorted)."""
    return optimizer_step_state(engine)["steps"]


def optimizer_step_state(engine: Any) -> Dict[str, Any]:
    """What the ``optimizer_step`` digest hashes: the distinct values of Adam's step counters over
    every state entry on every rank, and whether two entries share one step *tensor*. torch's Adam
    increments ``state["step"]`` in place once per ``optimizer.step()`` call, so a counter shared by
    entries that are stepped separately (ZeRO-3 steps each sub-group on its own) advances several
    times per optimizer step: equal values now, wrong bias correction from the next step on."""
    base = _base_optimizer(engine)
    steps = set()
    seen: Dict[int, int] = {}
    shared = False
    for state in base.state.values():
        if "step" in state:
            step = state["step"]
            steps.add(int(_number(step)))
            if hasattr(step, "data_ptr"):
                shared = shared or id(step) in seen
                seen[id(step)] = 1
    every = _gather_objects([sorted(steps), shared])
    return {"steps": sorted({s for rank_steps, _ in every for s in rank_steps}),
            "shared_step_tensors": any(flag for _, flag in every)}
