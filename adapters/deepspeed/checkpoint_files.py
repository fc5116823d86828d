"""What a DeepSpeed checkpoint's files hold, digested by the names of the ``saved`` event.

The ``saved`` digests of ``parity_hooks.deepspeed`` hash the live engine right after
``save_checkpoint``: a save that wrote no optimizer state (DeepSpeed 0.18.0–0.18.4 under bf16 with
ZeRO-0, PR #7786) still reports the engine's optimizer state. This reader runs as a separate
process in the trainer's venv, with no engine, reads the tag folder as written and digests the
logical state by the same component and per-tensor names, so the harness can compare the three:
the baseline's snapshot, the engine's ``saved`` digests, and these::

    python adapters/deepspeed/checkpoint_files.py <checkpoint_dir>/global_step5

prints one JSON object: ``digests`` (component -> digest), ``tensors`` (``<name> · <kind>`` ->
digest), ``absent`` (components the files do not hold: for example the fp32 master and Adam's
state when ``optimizer`` is ``None`` and no ZeRO file exists), ``not_read`` (components this reader
does not reproduce from files: ``engine_counters``, whose accumulation-window position DeepSpeed
does not save, and ``param_groups``) and ``layout`` (what was found).

Read: dense models (no AutoEP) under ZeRO 0, 1 and 2, bf16 or fp32, any data-parallel size —
``mp_rank_00_model_states.pt`` (module weights, the stage-0 optimizer, the LR scheduler, the
client state's RNG and data position) and ``(bf16_)zero_pp_rank_<r>_mp_rank_00_optim_states.pt``
(fp32 partitions and Adam's moments, assembled with the shard mapping of ``plan_executor.py``'s
``fragments_of``). Not read yet: ZeRO-3, AutoEP expert files and universal folders (the reader
exits 3 naming what it cannot read; the harness then has no ``files`` event to judge).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from parity_hooks._digest import ABSENT, SEP, digest_json, hash_tensor, rng_digest_of_states, tensor_digest

#: The client-state key ``parity_hooks.deepspeed`` saves RNG states and the data position under.
CLIENT_STATE_KEY = "parity"

_OPTIM_FILE = re.compile(r"(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_00_optim_states\.pt$")

#: Optimizer-held components: ``absent`` when the files hold no optimizer state at all.
OPTIMIZER_COMPONENTS = ("params", "exp_avg", "exp_avg_sq", "optimizer_step")

#: Components the engine reports that this reader does not reproduce from the files.
NOT_READ = ("engine_counters", "param_groups")


class UnreadableCheckpoint(Exception):
    """The folder holds a layout this reader does not read (exit 3, one line)."""


def _load(path: str) -> Any:
    import torch
    return torch.load(path, map_location="cpu", weights_only=False)


def _fp32(tensor: Any) -> Any:
    return tensor if tensor is ABSENT else tensor.float()


def fragments_of(partitions: List[Any], mappings: List[Dict[str, Any]], name: str) -> Optional[Any]:
    """The flat fp32 tensor of parameter ``name`` assembled from a ZeRO-1/2 group's per-rank
    partitions (rank order) and their ``param_slice_mappings`` (name -> fragment with ``start`` and
    ``numel`` inside that rank's partition); None when no partition holds it."""
    import torch
    pieces: List[Tuple[int, Any]] = []
    for rank, (partition, mapping) in enumerate(zip(partitions, mappings)):
        if name in mapping:
            fragment = mapping[name]
            pieces.append((rank * partition.numel() + fragment.start,
                           partition.narrow(0, fragment.start, fragment.numel)))
    if not pieces:
        return None
    pieces.sort(key=lambda item: item[0])
    return torch.cat([t.float() for _, t in pieces])


class CheckpointFiles:
    """The logical state of one native tag folder, as its files hold it."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        main = os.path.join(folder, "mp_rank_00_model_states.pt")
        if not os.path.exists(main):
            experts = glob.glob(os.path.join(folder, "layer_*_expert_*_model_states.pt"))
            hint = " (AutoEP expert files are not read yet)" if experts else ""
            raise UnreadableCheckpoint(f"{folder}: no mp_rank_00_model_states.pt{hint}")
        self.model_states = _load(main)
        if self.model_states.get("ds_autoep_layers"):
            raise UnreadableCheckpoint(f"{folder}: an AutoEP checkpoint (expert files are not read yet)")
        config = self.model_states.get("ds_config") or {}
        self.zero_stage = int((config.get("zero_optimization") or {}).get("stage") or 0)
        if self.zero_stage == 3:
            raise UnreadableCheckpoint(f"{folder}: a ZeRO-3 checkpoint (not read yet)")
        buffers = set(self.model_states.get("buffer_names") or [])
        self.module = {n: t for n, t in self.model_states["module"].items() if n not in buffers}
        self.names = sorted(self.module)
        optim = {}
        for path in glob.glob(os.path.join(folder, "*optim_states.pt")):
            m = _OPTIM_FILE.search(os.path.basename(path))
            if m:
                optim[int(m.group(1))] = path
        self.optim_files = [optim[r] for r in sorted(optim)]

    # -- the fp32 master and the optimizer state ------------------------------------------------------

    def optimizer_state(self) -> Optional[Dict[str, Dict[str, Any]]]:
        """``{name: {"params": fp32 master, "exp_avg": ..., "exp_avg_sq": ..., "step": ...}}`` as the
        files hold them, or None when they hold no optimizer state."""
        if self.optim_files:
            # ZeRO 1/2, and stage 0 under bf16 before 0.17.6 (BF16_Optimizer writes the same
            # partitioned file: single_partition_of_fp32_groups, base_optimizer_state, mappings).
            return self._zero12()
        opt = self.model_states.get("optimizer")
        if self.zero_stage == 0 and isinstance(opt, dict):
            return self._stage0(opt)
        return None

    def _stage0(self, opt: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
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
        out: Dict[str, Dict[str, Any]] = {}
        for k, (index, name) in enumerate(zip(indices, names)):
            state = inner["state"].get(index, {})
            master = masters[k] if masters is not None else self.module[name]
            out[name] = {"params": master, **state}
        return out

    def _zero12(self) -> Dict[str, Dict[str, Any]]:
        """ZeRO 1/2 (and BF16_Optimizer at stage 0): each rank's file holds its partition of every group's flat fp32 master and of
        the base optimizer's moments, with ``param_slice_mappings`` naming each parameter's slice."""
        osds = [_load(path)["optimizer_state_dict"] for path in self.optim_files]
        out: Dict[str, Dict[str, Any]] = {}
        for gi in range(len(osds[0]["single_partition_of_fp32_groups"])):
            mappings = [osd["param_slice_mappings"][gi] for osd in osds]
            kinds = {"params": [osd["single_partition_of_fp32_groups"][gi] for osd in osds]}
            states = [osd["base_optimizer_state"]["state"].get(gi, {}) for osd in osds]
            for key in states[0]:
                if key != "step":
                    kinds[key] = [state[key] for state in states]
            for name in {n for mapping in mappings for n in mapping}:
                shape = self.module[name].shape
                entry: Dict[str, Any] = {}
                for kind, partitions in kinds.items():
                    flat = fragments_of(partitions, mappings, name)
                    entry[kind] = ABSENT if flat is None else flat.view(shape)
                if "step" in states[0]:
                    entry["step"] = states[0]["step"]
                out[name] = entry
        return out

    # -- the digests -----------------------------------------------------------------------------------

    def digests(self) -> Dict[str, Any]:
        """The JSON document described in the module docstring."""
        digests: Dict[str, str] = {}
        tensors: Dict[str, str] = {}
        absent: List[str] = []
        state = self.optimizer_state()
        if state is None:
            absent.extend(OPTIMIZER_COMPONENTS)
        else:
            for component in ("params", "exp_avg", "exp_avg_sq"):
                h = hashlib.sha256()
                for name in self.names:
                    value = _fp32(state.get(name, {}).get(component, ABSENT))
                    hash_tensor(h, name, value)
                    tensors[f"{name}{SEP}{component}"] = tensor_digest(value)
                digests[component] = h.hexdigest()[:16]
            steps = {int(s["step"].item() if hasattr(s["step"], "item") else s["step"])
                     for s in state.values() if "step" in s}
            # Shared step tensors cannot be seen in files (each entry was saved on its own).
            digests["optimizer_step"] = digest_json({"steps": sorted(steps), "shared_step_tensors": False})
        import torch
        if any(t.dtype != torch.float32 for t in self.module.values()):
            h = hashlib.sha256()
            for name in self.names:
                hash_tensor(h, name, self.module[name].float())
                tensors[f"{name}{SEP}module"] = tensor_digest(self.module[name].float())
            digests["module_weights"] = h.hexdigest()[:16]
        scheduler = self.model_states.get("lr_scheduler")
        if scheduler is not None:
            digests["lr_scheduler"] = digest_json(scheduler)
        client = self.model_states.get(CLIENT_STATE_KEY)
        if isinstance(client, dict):
            if client.get("rng") is not None:
                digests["rng"] = rng_digest_of_states(client["rng"])
            if client.get("data") is not None:
                digests["data"] = digest_json(dict(client["data"]))
        return {"digests": digests, "tensors": tensors, "absent": absent, "not_read": list(NOT_READ),
                "layout": {"zero_stage": self.zero_stage, "optimizer_files": len(self.optim_files),
                           "ds_version": self.model_states.get("ds_version")}}


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: checkpoint_files.py <tag folder>", file=sys.stderr)
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
