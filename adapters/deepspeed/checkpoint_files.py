"""What a DeepSpeed checkpoint's files hold, digested by the names of the ``saved`` event.

The ``saved`` digests of ``parity_hooks.deepspeed`` hash the live engine right after
``save_checkpoint``: a save that wrote no optimizer state (DeepSpeed 0.18.0–0.18.4 under bf16 with
ZeRO-0, PR #7786) still reports the engine's optimizer state. This reader runs as a separate
process in the trainer's venv, with no engine, reads the folder as written and digests the
logical state by the same component and per-tensor names and the same canonical hashing
(``parity_hooks._digest``), so equal state gives equal digests and the harness can compare the
three: the baseline's snapshot, the engine's ``saved`` digests, and these::

    python adapters/deepspeed/checkpoint_files.py <checkpoint_dir>/global_step5
    python adapters/deepspeed/checkpoint_files.py <universal folder>

prints one JSON object: ``digests`` (component -> digest), ``tensors`` (``<name> · <kind>``, or
``<name> · expert <e> · <kind>`` -> digest), ``absent`` (components the files do not hold: the fp32
master and Adam's state when ``optimizer`` is ``None`` and no ZeRO file exists), ``not_read``
(component -> why the files cannot give it: never reported as equal) and ``layout``.

Read (the shard readers are ``zero_shards.py``, shared with ``plan_executor.py``):

- native tag folders, ZeRO 0, 1, 2 and 3, bf16 or fp32, any data-parallel size: the model-states
  file (module weights at stages 0-2, the stage-0 optimizer, the LR scheduler, the client state's
  RNG and data position) and every rank's ``(bf16_)zero_pp_rank_<r>_mp_rank_00_optim_states.pt``
  (fp32 partitions, Adam's moments and steps, the optimizer's param groups);
- AutoEP (``ds_autoep_layers``): expert parameters assembled into their logical ``[E, ...]`` form
  in global expert order from the placement DeepSpeed recorded — module weights from the
  per-expert files ``layer_<L>_expert_<E>_mp_rank_00_model_states.pt``, optimizer state from the
  expert-data-parallel group of each expert-parallel rank (the ``ep_size_<P>`` group);
- universal folders (``ds_to_universal``'s output): ``zero/<param>/{fp32,exp_avg,exp_avg_sq,step}.pt``
  (logical tensors), ``zero/optimizer_state.pt`` (param groups) and the model-states file.

Not readable from files, so ``not_read``: ``engine_counters`` (DeepSpeed saves no accumulation-
window position); ``module_weights`` under ZeRO-3 (the files hold empty module tensors: a load
rebuilds them from the fp32 master) and in a universal folder (its load rebuilds them from
``fp32.pt``); ``loss_scaler`` (fp16 only, not read).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_hooks._digest import ABSENT, SEP, digest_json, hash_tensor, rng_digest_of_states, tensor_digest  # noqa: E402
from process_maps import expert_data_parallel_group  # noqa: E402
from zero_shards import fragments_of, load, model_states_file, optimizer_files, zero3_parameters  # noqa: E402

#: The client-state key ``parity_hooks.deepspeed`` saves RNG states and the data position under.
CLIENT_STATE_KEY = "parity"

#: Optimizer-held components: ``absent`` when the files hold no optimizer state at all.
OPTIMIZER_COMPONENTS = ("params", "exp_avg", "exp_avg_sq", "optimizer_step", "param_groups")

#: Tensor kinds of the per-tensor digests that the optimizer holds (``params``: the fp32 master).
TENSOR_KINDS = ("params", "exp_avg", "exp_avg_sq")

#: Components no layout's files give, and why.
NOT_IN_ANY_FILES = {
    "engine_counters": "DeepSpeed does not save the accumulation-window position (micro_steps)",
}

# A parameter's state as read: kind -> logical fp32 tensor (or ABSENT), plus "step" values.
State = Dict[str, Dict[str, Any]]


class UnreadableCheckpoint(Exception):
    """The folder holds a layout this reader does not read (exit 3, one line)."""


def _fp32(tensor: Any) -> Any:
    return tensor if tensor is ABSENT else tensor.float()


def _step_value(step: Any) -> int:
    return int(step.item() if hasattr(step, "item") else step)


class _Experts:
    """The AutoEP expert parameters a checkpoint records (``ds_autoep_layers``): per parameter its
    logical ``[E, ...]`` shape, moe layer, and the placement (EP rank -> global experts)."""

    def __init__(self, layers: Sequence[Dict[str, Any]]) -> None:
        self.params: Dict[str, Dict[str, Any]] = {}
        self.ep_size = 1
        self.edp_size = 1
        for meta in layers:
            placement = meta.get("expert_placement") or {}
            ranks = {int(r["rank"]): [int(e) for e in r["experts"]] for r in placement.get("ranks") or []}
            self.ep_size = int(meta.get("ep_size") or 1)
            self.edp_size = int(meta.get("expert_data_parallel_world_size") or 1)
            for name, pm in ((meta.get("affine_maps") or {}).get("params") or {}).items():
                self.params[name] = {"logical_shape": [int(d) for d in pm["logical_shape"]],
                                     "layer": int(meta["moe_layer_id"]), "ranks": ranks}

    def count(self, name: str) -> Optional[int]:
        """E of an expert parameter; None for other parameters."""
        param = self.params.get(name)
        return None if param is None else param["logical_shape"][0]

    def assemble(self, name: str, local: Dict[int, Any]) -> Any:
        """The logical ``[E, ...]`` tensor from each EP rank's local ``[E_local, ...]`` tensor."""
        import torch
        param = self.params[name]
        if any(t is ABSENT for t in local.values()):
            return ABSENT
        out = torch.full(param["logical_shape"], float("nan"), dtype=torch.float32)
        for ep_rank, experts in param["ranks"].items():
            for i, expert in enumerate(experts):
                out[expert].copy_(local[ep_rank].reshape(len(experts), *param["logical_shape"][1:])[i])
        return out


class CheckpointFiles:
    """The logical state of one native tag folder or universal folder, as its files hold it."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        main = model_states_file(folder)
        if main is None:
            raise UnreadableCheckpoint(f"{folder}: no mp_rank_00_model_states.pt or "
                                       "zero_pp_rank_0_mp_rank_00_model_states.pt")
        self.model_states = load(main)
        self.universal = os.path.isdir(os.path.join(folder, "zero"))
        config = self.model_states.get("ds_config") or {}
        self.zero_stage = int((config.get("zero_optimization") or {}).get("stage") or 0)
        self.experts = _Experts(self.model_states.get("ds_autoep_layers") or [])
        buffers = set(self.model_states.get("buffer_names") or [])
        self.module = {n: t for n, t in (self.model_states.get("module") or {}).items() if n not in buffers}
        # The trainable parameters by the names the engine's optimizer holds them (an alias of a
        # shared parameter is in ``module`` twice but in ``param_shapes`` once).
        groups = self.model_states.get("param_shapes") or []
        if isinstance(groups, dict):
            groups = [groups]
        self.param_groups: List[List[Tuple[str, List[int]]]] = [
            [(n, [int(d) for d in shape]) for n, shape in group.items()] for group in groups]
        named = [n for group in self.param_groups for n, _ in group]
        self.names = sorted(named) if named else sorted(self.module)
        self.optim_files = [path for _, path in sorted(optimizer_files(folder).items())]

    # -- the fp32 master and the optimizer state ------------------------------------------------------

    def optimizer_state(self) -> Optional[State]:
        """``{name: {"params": fp32 master, "exp_avg": ..., "exp_avg_sq": ..., "step": [...]}}`` as
        the files hold them (logical, unsharded), or None when they hold no optimizer state."""
        if self.universal:
            return self._universal()
        if self.optim_files:
            if self.zero_stage == 3:
                return self._zero3()
            # ZeRO 1/2, and stage 0 under bf16 before 0.17.6 (BF16_Optimizer writes the same
            # partitioned file: single_partition_of_fp32_groups, base_optimizer_state, mappings).
            return self._zero12()
        opt = self.model_states.get("optimizer")
        if self.zero_stage == 0 and isinstance(opt, dict):
            return self._stage0(opt)
        return None

    def _stage0(self, opt: Dict[str, Any]) -> State:
        """Stage 0: a bf16/fp16 wrapper's state (``fp32_groups`` masters, one per parameter in the
        module's parameter order, and ``optimizer_state_dict``), or a torch optimizer's own."""
        names = list(self.module)  # module order = the order the engine passed to the optimizer
        inner = opt.get("optimizer_state_dict", opt)
        masters: Optional[List[Any]] = None
        if "fp32_groups" in opt:
            masters = [t for group in opt["fp32_groups"] for t in group]
        elif "fp32_groups_flat" in opt:
            masters = []
            flat_groups = list(opt["fp32_groups_flat"])
            offset, flat = 0, flat_groups.pop(0)
            for name in names:
                n = self.module[name].numel()
                if offset + n > flat.numel() and flat_groups:
                    offset, flat = 0, flat_groups.pop(0)
                masters.append(flat.narrow(0, offset, n).view(self.module[name].shape))
                offset += n
        indices = [i for group in inner["param_groups"] for i in group["params"]]
        if len(indices) != len(names):
            raise UnreadableCheckpoint(f"{self.folder}: the optimizer has {len(indices)} parameters, "
                                       f"the module {len(names)}")
        out: State = {}
        for k, (index, name) in enumerate(zip(indices, names)):
            state = dict(inner["state"].get(index, {}))
            master = masters[k] if masters is not None else self.module[name]
            steps = [_step_value(state.pop("step"))] if "step" in state else []
            out[name] = {"params": master, **state, "step": steps}
        self._groups = [inner["param_groups"]]
        return out

    def _zero12(self) -> State:
        """ZeRO 1/2 (and BF16_Optimizer at stage 0): each rank's file holds its partition of every
        group's flat fp32 master and of the base optimizer's moments, with ``param_slice_mappings``
        naming each parameter's slice. An AutoEP expert group is partitioned over the expert-data-
        parallel group of each EP rank, and holds that rank's local experts."""
        osds = [load(path)["optimizer_state_dict"] for path in self.optim_files]
        self._groups = [osd["base_optimizer_state"]["param_groups"] for osd in osds]
        out: State = {}
        for gi, group in enumerate(self._groups[0]):
            if self._is_expert_group(group):
                for ep_rank in range(self.experts.ep_size):
                    ranks = expert_data_parallel_group(ep_rank, len(osds), self.experts.ep_size)
                    self._zero12_group(out, [osds[r] for r in ranks], gi, ep_rank)
            else:
                self._zero12_group(out, osds, gi, None)
        return self._assembled(out)

    def _is_expert_group(self, group: Dict[str, Any]) -> bool:
        return bool(self.experts.params) and str(group.get("name", "")).startswith("ep_size_")

    def _zero12_group(self, out: State, osds: List[Any], gi: int, ep_rank: Optional[int]) -> None:
        """One group's parameters over the ranks ``osds`` partition it on (``ep_rank``: an expert
        group, whose tensors are that EP rank's local experts, collected for :meth:`_assembled`)."""
        mappings = [osd["param_slice_mappings"][gi] for osd in osds]
        kinds = {"params": [osd["single_partition_of_fp32_groups"][gi] for osd in osds]}
        states = [osd["base_optimizer_state"]["state"].get(gi, {}) for osd in osds]
        for key in ("exp_avg", "exp_avg_sq"):
            if all(key in state for state in states):
                kinds[key] = [state[key] for state in states]
        steps = [_step_value(state["step"]) for state in states if "step" in state]
        for name in {n for mapping in mappings for n in mapping}:
            entry = out.setdefault(name, {"step": []})
            entry["step"].extend(steps)
            for kind in TENSOR_KINDS:
                flat = fragments_of(kinds[kind], mappings, name) if kind in kinds else None
                value = ABSENT if flat is None else flat
                if ep_rank is None:
                    entry[kind] = value if value is ABSENT else value.view(self._shape(name))
                else:
                    entry.setdefault(kind, {})[ep_rank] = value

    def _zero3(self) -> State:
        """ZeRO-3: each rank's file holds, per sub-group, its partition of every parameter (the
        ``fp32_flat_groups`` and the optimizer state's flat moments); ``ds_zero_partition_groups``
        (AutoEP) says which ranks a sub-group is partitioned over, else every rank."""
        files = [load(path)["optimizer_state_dict"] for path in self.optim_files]
        self._groups = [osd["optimizer_state_dict"]["param_groups"] for osd in files]
        world = len(files)
        out: State = {}
        for sub, params in enumerate(self.param_groups):
            expert = bool(params) and params[0][0] in self.experts.params
            owners: List[Tuple[Optional[int], List[int]]]
            if expert:
                owners = [(ep, expert_data_parallel_group(ep, world, self.experts.ep_size))
                          for ep in range(self.experts.ep_size)]
            else:
                owners = [(None, list(range(world)))]
            for ep_rank, ranks in owners:
                osds = [files[r] for r in ranks]
                for osd in osds:
                    if len(osd["fp32_flat_groups"]) != len(self.param_groups):
                        raise UnreadableCheckpoint(
                            f"{self.folder}: {len(osd['fp32_flat_groups'])} ZeRO-3 sub-groups for "
                            f"{len(self.param_groups)} parameter groups (sub_group_size splits a group)")
                states = [osd["optimizer_state_dict"]["state"].get(sub, {}) for osd in osds]
                kinds = {"params": [osd["fp32_flat_groups"][sub] for osd in osds]}
                for key in ("exp_avg", "exp_avg_sq"):
                    if all(key in state for state in states):
                        kinds[key] = [state[key] for state in states]
                steps = [_step_value(state["step"]) for state in states if "step" in state]
                for kind in TENSOR_KINDS:
                    if kind not in kinds:
                        for name, _ in params:
                            entry = out.setdefault(name, {"step": []})
                            if ep_rank is None:
                                entry[kind] = ABSENT
                            else:
                                entry.setdefault(kind, {})[ep_rank] = ABSENT
                        continue
                    for name, full in zero3_parameters(kinds[kind], params):
                        entry = out.setdefault(name, {"step": []})
                        if ep_rank is None:
                            entry[kind] = full
                        else:
                            entry.setdefault(kind, {})[ep_rank] = full
                for name, _ in params:
                    out.setdefault(name, {"step": []})["step"].extend(steps)
        return self._assembled(out)

    def _universal(self) -> State:
        """A universal folder: ``zero/<param>/<kind>.pt`` hold each parameter's logical tensor
        (``{"param": tensor, ...}``; expert parameters already ``[E, ...]``) and ``step.pt``."""
        out: State = {}
        root = os.path.join(self.folder, "zero")
        files = {"params": "fp32.pt", "exp_avg": "exp_avg.pt", "exp_avg_sq": "exp_avg_sq.pt"}
        for name in self.names:
            folder = os.path.join(root, name)
            if not os.path.isdir(folder):
                raise UnreadableCheckpoint(f"{folder}: missing (a universal folder holds one per parameter)")
            entry: Dict[str, Any] = {"step": []}
            for kind, file in files.items():
                path = os.path.join(folder, file)
                if not os.path.exists(path):
                    entry[kind] = ABSENT
                    continue
                value = load(path)
                entry[kind] = self._logical(name, value["param"] if isinstance(value, dict) else value, path)
            step_path = os.path.join(folder, "step.pt")
            if os.path.exists(step_path):
                step = load(step_path)
                entry["step"].append(_step_value(step["param"] if isinstance(step, dict) else step))
            out[name] = entry
        optimizer = os.path.join(root, "optimizer_state.pt")
        common = load(optimizer) if os.path.exists(optimizer) else {}
        self._groups = [common["param_groups"]] if "param_groups" in common else []
        # ZeRO-3's converter writes no step.pt: the step is the saved optimizer state's (the one
        # every sub-group gets on a universal load).
        inner = (common.get("optimizer_state_dict") or {}).get("state") or {}
        shared = [_step_value(state["step"]) for state in inner.values() if "step" in state]
        for entry in out.values():
            if not entry["step"]:
                entry["step"].extend(shared)
        return out

    def _logical(self, name: str, tensor: Any, path: str) -> Any:
        """A universal file's tensor in the parameter's logical shape (ZeRO-3's are flat)."""
        shape = (self.experts.params[name]["logical_shape"] if name in self.experts.params
                 else self._shape(name))
        numel = 1
        for dim in shape:
            numel *= dim
        if tensor.numel() != numel:
            raise UnreadableCheckpoint(f"{path}: {tensor.numel()} elements, the parameter has {numel} {shape}")
        return tensor.float().reshape(shape)

    def _assembled(self, out: State) -> State:
        """Expert parameters' per-EP-rank local tensors put together into their logical form."""
        for name, entry in out.items():
            for kind in TENSOR_KINDS:
                if isinstance(entry.get(kind), dict):
                    entry[kind] = self.experts.assemble(name, entry[kind])
        return out

    def _shape(self, name: str) -> List[int]:
        for group in self.param_groups:
            for other, shape in group:
                if other == name:
                    return shape
        return list(self.module[name].shape)

    # -- module weights --------------------------------------------------------------------------------

    def module_weights(self) -> Optional[Dict[str, Any]]:
        """``{name: logical module weight}`` at ZeRO 0-2 (expert parameters stacked from the
        per-expert files in global expert order), or None when the files hold none."""
        import torch
        if self.universal or self.zero_stage == 3:
            return None
        out: Dict[str, Any] = {}
        for name in self.names:
            if name not in self.experts.params:
                out[name] = self.module[name]
                continue
            param = self.experts.params[name]
            rows = []
            for expert in range(param["logical_shape"][0]):
                path = os.path.join(self.folder, f"layer_{param['layer']}_expert_{expert}_mp_rank_00_model_states.pt")
                if not os.path.exists(path):
                    raise UnreadableCheckpoint(f"{path}: missing (ZeRO-{self.zero_stage} keeps one file per expert)")
                state = self._expert_file(path)
                key = f"{name}.{expert}"
                if key not in state:
                    raise UnreadableCheckpoint(f"{path}: no tensor {key}")
                rows.append(state[key])
            out[name] = torch.stack(rows)
        return out

    def _expert_file(self, path: str) -> Any:
        cache = self.__dict__.setdefault("_expert_files", {})
        if path not in cache:
            cache[path] = load(path)
        return cache[path]

    def _module_dtypes_fp32(self) -> bool:
        import torch
        return all(t.dtype == torch.float32 for t in self.module.values())

    # -- the digests -----------------------------------------------------------------------------------

    def _entries(self, name: str, kind: str, value: Any) -> Dict[str, str]:
        experts = self.experts.count(name)
        if experts is None:
            return {f"{name}{SEP}{kind}": tensor_digest(_fp32(value))}
        return {f"{name}{SEP}expert {e}{SEP}{kind}": tensor_digest(value if value is ABSENT else value[e].float())
                for e in range(experts)}

    def digests(self) -> Dict[str, Any]:
        """The JSON document described in the module docstring."""
        digests: Dict[str, str] = {}
        tensors: Dict[str, str] = {}
        absent: List[str] = []
        not_read = dict(NOT_IN_ANY_FILES)
        self._groups: List[Any] = []
        state = self.optimizer_state()
        if state is None:
            absent.extend(OPTIMIZER_COMPONENTS)
        else:
            for component in TENSOR_KINDS:
                h = hashlib.sha256()
                for name in self.names:
                    value = _fp32(state.get(name, {}).get(component, ABSENT))
                    hash_tensor(h, name, value)
                    tensors.update(self._entries(name, component, value))
                digests[component] = h.hexdigest()[:16]
            steps = {s for entry in state.values() for s in entry.get("step", [])}
            # Whether entries shared one step tensor cannot be seen in files (each was saved on its own).
            digests["optimizer_step"] = digest_json({"steps": sorted(steps), "shared_step_tensors": False})
            groups = self._param_groups_state()
            if groups is None:
                not_read["param_groups"] = "the files hold no optimizer param groups"
            else:
                digests["param_groups"] = digest_json(groups)
        self._module_digest(digests, tensors, not_read)
        scheduler = self.model_states.get("lr_scheduler")
        if scheduler is not None:
            digests["lr_scheduler"] = digest_json(scheduler)
        client = self.model_states.get(CLIENT_STATE_KEY)
        if isinstance(client, dict):
            if client.get("rng") is not None:
                digests["rng"] = rng_digest_of_states(client["rng"])
            if client.get("data") is not None:
                digests["data"] = digest_json(dict(client["data"]))
        config = self.model_states.get("ds_config") or {}
        if (config.get("fp16") or {}).get("enabled"):
            not_read["loss_scaler"] = "the fp16 loss scaler is not read from the files"
        return {"digests": digests, "tensors": tensors, "absent": absent, "not_read": not_read,
                "layout": {"zero_stage": self.zero_stage, "optimizer_files": len(self.optim_files),
                           "universal": self.universal, "autoep": bool(self.experts.params),
                           "ds_version": self.model_states.get("ds_version")}}

    def _module_digest(self, digests: Dict[str, str], tensors: Dict[str, str], not_read: Dict[str, str]) -> None:
        """``module_weights`` (only when the module is not fp32, as the hook reports it)."""
        if self._module_dtypes_fp32():
            return
        weights = self.module_weights()
        if weights is None:
            not_read["module_weights"] = (
                "a universal folder holds no module weights (its load rebuilds them from fp32.pt)"
                if self.universal else
                "ZeRO-3 saves no module weights (a load rebuilds them from the fp32 master)")
            return
        h = hashlib.sha256()
        for name in self.names:
            value = weights[name].float()
            hash_tensor(h, name, value)
            tensors.update(self._entries(name, "module", value))
        digests["module_weights"] = h.hexdigest()[:16]

    def _param_groups_state(self) -> Any:
        """What the hook's ``param_groups`` digest hashes (every group's hyper-parameters but
        ``params``; the list when every rank's file holds the same), or None without groups."""
        if not self._groups:
            return None
        every = [json.loads(json.dumps([{k: v for k, v in g.items() if k != "params"} for g in groups],
                                       sort_keys=True, default=repr)) for groups in self._groups]
        return every[0] if all(other == every[0] for other in every) else {"per_rank": every}


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: checkpoint_files.py <tag folder or universal folder>", file=sys.stderr)
        return 2
    try:
        document = CheckpointFiles(argv[0]).digests()
    except UnreadableCheckpoint as e:
        print(f"checkpoint_files: {e}", file=sys.stderr)
        return 3
    print(json.dumps(document, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
