"""Executes a plan file on the bytes a native DeepSpeed checkpoint actually holds.

    .venv-deepspeed/bin/python adapters/deepspeed/plan_executor.py --source-checkpoint <tag folder> \\
        --plan plan.json --out process_state.json

The ``deepspeed`` preset's plan executor (docs/plan-sync.md, "Plans executed on real bytes"). For
every expert parameter of the plan and every kind of tensor DeepSpeed keeps for it -- the module
weight (bf16 or fp32), the fp32 master and both Adam moments -- it

1. builds each *source* process's shard from the checkpoint files alone, never from the plan's
   maps: module weights from the per-expert files (``layer_<L>_expert_<E>_mp_rank_00_model_states.pt``)
   stacked in the order of the placement DeepSpeed recorded; fp32 masters and moments from the
   optimizer files of the process's expert-data-parallel group (ZeRO-1/2: the flat partitions of
   the ``ep_size_<P>`` parameter group, concatenated, sliced by ``param_slice_mappings``; ZeRO-3: the
   ``fp32_flat_groups`` partitions, sliced in ``param_shapes`` order);
2. copies every segment with ``torch.as_strided`` on flat, contiguous shards (offsets are absolute
   in the storage, so a view would read the wrong bytes);
3. writes, per target process, one digest per local expert slot (``process_state.py``), with the
   experts the plan's target map says each slot holds.

The harness compares this document with the one the universal resume on the target topology
writes right after its load. A plan whose maps do not describe the bytes (a lying source map)
passes the verifier and fails here. Exit 1 with one line on an unsupported or unreadable
checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from autoep_layout import layout  # noqa: E402
from process_maps import ep_rank_of, expert_data_parallel_group, slot_experts  # noqa: E402
from process_state import KINDS, slot_digests, write_document  # noqa: E402
from zero_shards import fragments_of, load, optimizer_files, zero3_parameter  # noqa: E402


class ExecutionError(Exception):
    """A one-line refusal (exit 1)."""


class CheckpointTensors:
    """The logical tensors of one EP rank, read from a native checkpoint's files."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.saved = layout(folder)
        self.layers = self.saved["layers"]
        if not self.layers:
            raise ExecutionError(f"{folder}: no AutoEP layer recorded")
        self.ep_size = int(self.layers[0]["ep_size"])
        self.world = self.ep_size * int(self.layers[0]["expert_data_parallel_world_size"])
        self.zero_stage = int(self.saved.get("zero_stage") or 0)
        self._files: Dict[str, Any] = {}  # each file is read once, whatever asks for it
        self._optim_files = optimizer_files(folder)
        self._param_layer = {p["name"]: layer for layer in self.layers for p in layer["params"]}

    # -- module weights ----------------------------------------------------------------------

    def module(self, name: str, ep_rank: int) -> Any:
        import torch
        layer = self._param_layer[name]
        experts = next(r["experts"] for r in layer["ranks"] if r["rank"] == ep_rank)
        if self.zero_stage == 3:
            return self._zero3(name, ep_rank, "module")
        rows = []
        for expert in experts:
            path = os.path.join(self.folder, f"layer_{layer['moe_layer_id']}_expert_{expert}_mp_rank_00_model_states.pt")
            if not os.path.exists(path):
                raise ExecutionError(f"{path}: missing (ZeRO-{self.zero_stage} keeps one file per expert)")
            key = f"{name}.{expert}"
            state = self._file(path)
            if key not in state:
                raise ExecutionError(f"{path}: no tensor {key}")
            rows.append(state[key])
        return torch.stack(rows)

    # -- optimizer state -----------------------------------------------------------------------

    def optimizer(self, name: str, ep_rank: int, kind: str) -> Optional[Any]:
        """fp32 master (``kind='fp32'``) or a moment of ``name`` on ``ep_rank``, shaped like the
        local parameter; None when the checkpoint has no such state."""
        if self.zero_stage == 3:
            return self._zero3(name, ep_rank, kind)
        if self.zero_stage not in (1, 2):
            raise ExecutionError(f"ZeRO stage {self.zero_stage} is not supported by the plan executor "
                                 "(ZeRO 1, 2 and 3 are)")
        group = expert_data_parallel_group(ep_rank, self.world, self.ep_size)
        partitions, mappings = [], []
        for process in group:
            osd = self._optimizer_file(process)["optimizer_state_dict"]
            gi = self._expert_group_index(osd)
            partition = osd["single_partition_of_fp32_groups"][gi]
            if kind != "fp32":
                state = osd["base_optimizer_state"]["state"].get(gi, {})
                if kind not in state:
                    return None
                partition = state[kind]
            partitions.append(partition)
            mappings.append(osd["param_slice_mappings"][gi])
        flat = fragments_of(partitions, mappings, name)
        if flat is None:
            raise ExecutionError(f"{name}: in no optimizer partition of EP rank {ep_rank}")
        return flat.view(self._local_shape(name))

    def _local_shape(self, name: str) -> List[int]:
        layer = self._param_layer[name]
        param = next(p for p in layer["params"] if p["name"] == name)
        logical = list(param["logical_shape"])
        return [logical[0] // self.ep_size, *logical[1:]]

    def _file(self, path: str) -> Any:
        if path not in self._files:
            self._files[path] = load(path)
        return self._files[path]

    def _model_states(self) -> Any:
        return self._file(os.path.join(self.folder, self.saved["model_states_file"]))

    def _optimizer_file(self, process: int) -> Any:
        if process not in self._optim_files:
            raise ExecutionError(f"{self.folder}: no optimizer file of process {process}")
        return self._file(self._optim_files[process])

    def _expert_group_index(self, osd: Any) -> int:
        names = [g.get("name") for g in osd["base_optimizer_state"]["param_groups"]]
        wanted = f"ep_size_{self.ep_size}"
        if wanted not in names:
            raise ExecutionError(f"no optimizer parameter group {wanted} (groups: {names})")
        return names.index(wanted)

    def _zero3(self, name: str, ep_rank: int, kind: str) -> Optional[Any]:
        """ZeRO-3: every parameter is partitioned on its own over the expert-data-parallel group
        (partition ``k`` of a parameter is elements ``[k·ps, (k+1)·ps)``, ``ps = ceil(numel / p)``),
        and a sub-group's flat fp32 tensor concatenates its parameters' partitions in
        ``param_shapes`` order. ZeRO-3 saves no module weights: a load rebuilds them from the fp32
        master, so the module weight here is that master rounded to the module's dtype."""
        import torch
        if kind == "module":
            master = self._zero3(name, ep_rank, "fp32")
            dtype = torch.bfloat16 if self._precision() == "bf16" else torch.float32
            return None if master is None else master.to(dtype)
        group = expert_data_parallel_group(ep_rank, self.world, self.ep_size)
        wanted = f"ep_size_{self.ep_size}"
        parts = []
        for process in group:
            osd = self._optimizer_file(process)["optimizer_state_dict"]
            subs = [g for g in osd["ds_zero_partition_groups"] if wanted in g.get("group_names", [])]
            if len(subs) != 1:
                raise ExecutionError(f"ZeRO-3: expected one sub-group for {wanted}, found {len(subs)}")
            sub = subs[0]["sub_group"]
            if kind == "fp32":
                flat = osd["fp32_flat_groups"][sub]
            else:
                state = osd["optimizer_state_dict"]["state"].get(sub, {})
                if kind not in state:
                    return None
                flat = state[kind]
            parts.append(flat)
        names, shapes = self._zero3_group_params(wanted)
        full = zero3_parameter(parts, list(zip(names, shapes)), name)
        if full is None:
            raise ExecutionError(f"ZeRO-3: {name} is not in the {wanted} sub-group")
        return full

    def _zero3_group_params(self, group_name: str) -> Tuple[List[str], List[Any]]:
        for shapes in self._model_states()["param_shapes"]:
            names = list(shapes)
            if names and all(n in self._param_layer for n in names):
                return names, [list(shapes[n]) for n in names]
        raise ExecutionError(f"ZeRO-3: no parameter group of {group_name} in param_shapes")

    def _precision(self) -> str:
        config = self._model_states().get("ds_config") or {}
        return "bf16" if (config.get("bf16") or {}).get("enabled") else "fp32"


def _as_flat(tensor: Any) -> Any:
    # A fresh contiguous tensor: as_strided offsets count from the start of the storage.
    return tensor.detach().contiguous().clone().reshape(-1)


def execute_parameter(entry: Dict[str, Any], sources: Dict[int, Any], dtype: Any) -> Dict[int, Any]:
    """Target shards of one parameter: every segment copied from ``sources`` (location → tensor)."""
    import torch
    shards = {}
    for location, shard in entry["target_map"]["ranks"].items():
        shards[int(location)] = torch.zeros(int(torch.tensor(shard["shard_shape"]).prod()), dtype=dtype)
    flats = {loc: _as_flat(t) for loc, t in sources.items()}
    for i, seg in enumerate(entry["segments"]):
        s_loc, s_off, s_str = seg["source"]
        t_loc, t_off, t_str = seg["target"]
        if s_loc not in flats or t_loc not in shards:
            raise ExecutionError(f"segments[{i}]: location {s_loc} -> {t_loc} is not in the maps")
        source = torch.as_strided(flats[s_loc], seg["shape"], s_str, s_off)
        torch.as_strided(shards[t_loc], seg["shape"], t_str, t_off).copy_(source)
    return {loc: flat.view(entry["target_map"]["ranks"][str(loc)]["shard_shape"]) for loc, flat in shards.items()}


def execute(folder: str, plan: Dict[str, Any]) -> Dict[str, Any]:
    """The process-state document of the shards the plan builds from ``folder``'s bytes."""
    tensors = CheckpointTensors(folder)
    target = plan.get("layout", {}).get("target", {})
    processes: Dict[str, Any] = {}
    for name in sorted(plan["parameters"]):
        entry = plan["parameters"][name]
        if name not in tensors._param_layer:
            raise ExecutionError(f"{name}: not an expert parameter of {folder}")
        source_locations = [int(loc) for loc in entry["source_map"]["ranks"]]
        for kind in KINDS:
            by_ep: Dict[int, Any] = {}
            for location in source_locations:
                ep = ep_rank_of(location, tensors.ep_size)
                if ep not in by_ep:
                    by_ep[ep] = tensors.module(name, ep) if kind == "module" else tensors.optimizer(name, ep, kind)
            if any(t is None for t in by_ep.values()):
                continue
            dtype = next(iter(by_ep.values())).dtype
            sources = {loc: by_ep[ep_rank_of(loc, tensors.ep_size)] for loc in source_locations}
            for location, shard in execute_parameter(entry, sources, dtype).items():
                proc = processes.setdefault(str(location), {
                    "ep_rank": ep_rank_of(location, int(target.get("ep_size", 1))), "params": {}})
                param = proc["params"].setdefault(name, {
                    "experts": slot_experts(entry["target_map"], location), "shape": list(shard.shape)})
                param[kind] = slot_digests(shard)
    return {"schema_version": 1, "source": "plan-execute", "world_size": len(processes),
            "ep_size": target.get("ep_size"), "processes": processes}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="plan_executor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-checkpoint", required=True, help="native tag folder the plan reads")
    parser.add_argument("--plan", required=True, help="plan file (schema 1, with a layout record)")
    parser.add_argument("--out", required=True, help="process-state document to write")
    a = parser.parse_args(argv)
    try:
        with open(a.plan, encoding="utf-8") as f:
            plan = json.load(f)
        document = execute(a.source_checkpoint, plan)
    except (ExecutionError, OSError, ValueError, KeyError, RuntimeError, SystemExit) as e:
        print(f"plan_executor: {e}", file=sys.stderr)
        return 1
    document["plan_policy"] = plan.get("policy")
    write_document(a.out, document)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
