"""Prints, as JSON, the AutoEP expert layout a saved DeepSpeed checkpoint records.

    .venv-deepspeed/bin/python adapters/deepspeed/autoep_layout.py [--maps] <tag folder or universal folder>

Reads the ``ds_autoep_layers`` metadata DeepSpeed writes into the model-states file
(``mp_rank_00_model_states.pt``; ZeRO-3: ``zero_pp_rank_0_mp_rank_00_model_states.pt``), and the
per-expert files (``layer_<L>_expert_<E>_mp_rank_00_model_states.pt``, ZeRO-0/1/2) present beside
it. Output (one object)::

    {"checkpoint": ..., "ds_version": "0.19.8", "global_steps": 50, "dp_world_size": 2,
     "zero_stage": 1, "expert_parallel": {...the saved config section...},
     "expert_parameter_patterns": [...],
     "layers": [{"moe_layer_id": 0, "module_path": "model.layers.0.mlp", "num_experts": 4,
                 "num_local_experts": 2, "ep_size": 2,
                 "ranks": [{"rank": 0, "experts": [0, 1]}, {"rank": 1, "experts": [2, 3]}],
                 "params": [{"name": "model.layers.0.mlp.experts.w1", "logical_shape": [4, 32, 32],
                             "shard_shape": {"0": [2, 32, 32], "1": [2, 32, 32]}}, ...],
                 "expert_files": [{"file": "layer_0_expert_0_mp_rank_00_model_states.pt", "expert": 0,
                                   "tensors": {"model.layers.0.mlp.experts.w1.0": [32, 32], ...}}, ...]}]}

With ``--maps`` every parameter also carries ``"map"``: the affine map v1 DeepSpeed recorded for it
(``{"logical_shape", "ranks": {ep_rank: {"shard_shape", "pieces"}}}``), which the preset's planner
(``plan_autoep.ts``) plans from.

``ranks`` is the expert placement (which expert-parallel rank holds which global experts), read
from ``expert_placement``; ``params`` and their per-rank shard shapes from the affine maps. Exit 1
with a message when the folder holds no AutoEP metadata. Needs torch (the venv's python).
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

MODEL_STATES = ("mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt")
EXPERT_FILE = re.compile(r"layer_(\d+)_expert_(\d+)_mp_rank_(\d+)_model_states\.pt$")


def _load(path: str):
    import torch
    try:
        return torch.load(path, map_location="cpu", weights_only=False, mmap=True)
    except RuntimeError:  # legacy (non-zip) files cannot be memory-mapped
        return torch.load(path, map_location="cpu", weights_only=False)


def _shape(value) -> object:
    return list(value.shape) if hasattr(value, "shape") else repr(type(value).__name__)


def layout(folder: str, with_maps: bool = False) -> dict:
    states = None
    for name in MODEL_STATES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            states = _load(path)
            source = name
            break
    if states is None:
        raise SystemExit(f"{folder}: no {' or '.join(MODEL_STATES)}")
    uc_info = states.get("universal_checkpoint_info") or {}
    layers_meta = states.get("ds_autoep_layers") or states.get("autoep_layers") or uc_info.get("ds_autoep_layers")
    if not layers_meta:
        raise SystemExit(f"{folder}/{source}: no ds_autoep_layers metadata (not an AutoEP checkpoint?)")
    config = states.get("ds_config") or {}
    expert_files: dict = {}
    for path in sorted(glob.glob(os.path.join(folder, "layer_*_expert_*_model_states.pt"))):
        m = EXPERT_FILE.search(os.path.basename(path))
        if not m:
            continue
        layer_id, expert = int(m.group(1)), int(m.group(2))
        tensors = {k: _shape(v) for k, v in _load(path).items()}
        expert_files.setdefault(layer_id, []).append({"file": os.path.basename(path), "expert": expert,
                                                      "tensors": tensors})
    layers = []
    for meta in layers_meta:
        placement = meta.get("expert_placement") or {}
        maps = (meta.get("affine_maps") or {}).get("params") or {}
        params = []
        for name in sorted(maps):
            pm = maps[name]
            param = {"name": name, "logical_shape": pm.get("logical_shape"),
                     "shard_shape": {str(r): v.get("shard_shape") for r, v in sorted(pm.get("ranks", {}).items())}}
            if with_maps:
                param["map"] = pm
            params.append(param)
        layer_id = meta.get("moe_layer_id")
        layers.append({
            "moe_layer_id": layer_id,
            "module_path": meta.get("module_path"),
            "num_experts": meta.get("num_experts"),
            "num_local_experts": meta.get("num_local_experts"),
            "ep_size": meta.get("ep_size"),
            "expert_data_parallel_world_size": meta.get("expert_data_parallel_world_size"),
            "ranks": placement.get("ranks"),
            "placement_version": placement.get("version"),
            "params": params,
            "expert_files": sorted(expert_files.get(layer_id, []), key=lambda f: f["expert"]),
        })
    return {
        "checkpoint": os.path.abspath(folder),
        "model_states_file": source,
        "ds_version": states.get("ds_version"),
        "global_steps": states.get("global_steps"),
        "dp_world_size": states.get("dp_world_size"),
        "zero_stage": (config.get("zero_optimization") or {}).get("stage"),
        "expert_parallel": config.get("expert_parallel"),
        "expert_parameter_patterns": uc_info.get("expert_parameter_patterns"),
        "layers": layers,
    }


def main(argv: list) -> int:
    with_maps = "--maps" in argv
    args = [a for a in argv if a != "--maps"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(json.dumps(layout(args[0], with_maps), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
