"""Plans the reshard of a saved AutoEP checkpoint with DeepSpeed's own affine planner.

    .venv-deepspeed/bin/python adapters/deepspeed/deepspeed_planner.py --source-checkpoint <tag folder> \\
        --target target.json --policy first_holder --out plan.json [--element-size 4] [--plan-fault F]

The ``deepspeed`` preset's planner (docs/plan-sync.md, "DeepSpeed's planner"). Nothing of the
harness plans here:

- **Source maps**: the affine maps v1 DeepSpeed recorded in the checkpoint
  (``ds_autoep_layers[*].affine_maps``, read by ``autoep_layout.py``), over EP ranks.
- **Target maps**: DeepSpeed's own lowering for the target AutoEP size,
  ``autoep_placement_to_affine_map(legacy_uniform_autoep_placement_descriptor(...))`` (the placement
  AutoEP builds when none is given).
- Both are widened to every process of the job (``process_maps.py``), so every target process
  of every EP group is planned and a replica policy sees every real copy.
- **Planning**: ``plan_transfers(...)`` with ``affine_replica_policy`` when the installed DeepSpeed
  has them (PR #8936's batch API, feature-detected), otherwise ``plan_transfer`` per parameter, in
  name order, with the policy as a ``replica_selector``. DeepSpeed 0.19.8 has only ``plan_transfer``.

Policies through a per-request ``replica_selector`` (what 0.19.8 offers):

- ``first_holder``: no selector; DeepSpeed's default reads the lowest holder. Exact.
- ``highest_holder``: a selector returning the highest candidate. Exact.
- ``local_first_least_loaded``: a stateful selector (local holder first, else the least-loaded
  sending process so far). It cannot reproduce the batch policy: DeepSpeed calls a selector only
  for regions with more than one holder, so the load of single-holder regions is never counted.
  The harness's second opinion shows where the two plans differ.
- ``balanced`` cannot be expressed at all (it splits regions and needs the whole sync): refused.

Output: the harness's plan file (schema 1) with the widened maps, the segments in DeepSpeed's
``TransferSegment.to_dict()`` form, identity process mappings (location = process), and a
``planner`` record naming the DeepSpeed function, API and version. ``--plan-fault`` injects a
planner bug into one parameter (see ``PLAN_FAULTS``) to show that the checks catch it. Exit 1
with one line on any planning error, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from autoep_layout import layout  # noqa: E402
from process_maps import check_layout, ep_rank_of, widen_to_processes  # noqa: E402
from process_state import write_document  # noqa: E402

#: Policies this driver can run through DeepSpeed, and whether the result is DeepSpeed's policy
#: exactly or a per-request approximation of a batch policy.
POLICIES = {
    "first_holder": "exact: plan_transfer's default holder",
    "highest_holder": "exact: a replica_selector returning the highest candidate",
    "local_first_least_loaded": "per-request approximation: single-holder load is not seen",
}

#: Planner bugs ``--plan-fault`` injects into one parameter (``FAULT_PARAMETER``).
PLAN_FAULTS = {
    "none": "no fault",
    "drop-segment": "the parameter's last segment is left out",
    "wrong-holder": "the first segment reads the same addresses on a location holding other experts",
    "shift-origin": "the first segment's source offset is moved down by one row",
    "swap-source-experts": "the source map lies: EP rank 0's first two experts are recorded swapped",
}

#: The parameter a fault touches, when the checkpoint has it (else the last expert parameter).
FAULT_PARAMETER = "model.layers.1.mlp.experts.w2"

# The training script's defaults (train_moe.py --nproc-per-node / --autoep-size).
_DEFAULT_WORLD = 2
_DEFAULT_EP = 2


class PlanningError(Exception):
    """A one-line refusal (exit 1)."""


def _positive(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise PlanningError(f"target {name} must be a positive integer, got {value!r}")
    return value


def _api() -> Tuple[str, Any, Any]:
    """``(api name, plan_transfers or None, affine_replica_policy or None)``."""
    from deepspeed.checkpoint import affine_transfer
    batch = getattr(affine_transfer, "plan_transfers", None)
    try:
        from deepspeed.checkpoint import affine_replica_policy  # type: ignore
    except ImportError:
        affine_replica_policy = None
    if batch is not None and affine_replica_policy is not None:
        return "plan_transfers + affine_replica_policy", batch, affine_replica_policy
    return "plan_transfer + replica_selector", None, None


def _selector(policy: str, element_size: int) -> Optional[Callable[[Any], int]]:
    """The per-request selector of a policy (``None``: DeepSpeed's default, the first holder)."""
    if policy == "first_holder":
        return None
    if policy == "highest_holder":
        return lambda request: max(c.source_rank for c in request.candidates)
    if policy == "local_first_least_loaded":
        load: Dict[int, int] = {}

        def pick(request: Any) -> int:
            ranks = sorted(c.source_rank for c in request.candidates)
            # Locations are processes (identity mappings), so a local copy has equal ranks.
            chosen = request.target_rank if request.target_rank in ranks else min(
                ranks, key=lambda r: (load.get(r, 0), r))
            size = element_size
            for dim in request.shape:
                size *= dim
            load[chosen] = load.get(chosen, 0) + size
            return chosen

        return pick
    raise PlanningError(f"policy {policy!r} cannot be run through DeepSpeed's planner; it knows "
                        f"{', '.join(POLICIES)} (balanced splits regions and needs the whole sync, "
                        "which a per-request replica_selector cannot express)")


def _target_ep_map(num_experts: int, ep_size: int, logical_shape: List[int]) -> Dict[str, Any]:
    from deepspeed.checkpoint.autoep_affine import (autoep_placement_to_affine_map,
                                                    legacy_uniform_autoep_placement_descriptor)
    if num_experts % ep_size:
        raise PlanningError(f"autoep_size {ep_size} does not divide {num_experts} experts")
    descriptor = legacy_uniform_autoep_placement_descriptor(num_experts, num_experts // ep_size, ep_size)
    return autoep_placement_to_affine_map(descriptor, logical_shape).to_dict()


def _swapped_ep_map(ep_map: Dict[str, Any], placement: List[Dict[str, Any]]) -> Dict[str, Any]:
    """``ep_map`` with EP rank 0's first two experts recorded in swapped order (a lying map)."""
    from deepspeed.checkpoint.autoep_affine import autoep_placement_to_affine_map, make_autoep_placement_descriptor
    by_rank = [list(entry["experts"]) for entry in sorted(placement, key=lambda e: e["rank"])]
    if len(by_rank[0]) < 2:
        raise PlanningError("swap-source-experts needs at least two experts on EP rank 0")
    by_rank[0][0], by_rank[0][1] = by_rank[0][1], by_rank[0][0]
    num_experts = int(ep_map["logical_shape"][0])
    descriptor = make_autoep_placement_descriptor(num_experts, by_rank)
    return autoep_placement_to_affine_map(descriptor, ep_map["logical_shape"]).to_dict()


def collect_pairs(checkpoint: str, target: Dict[str, Any], fault: str = "none") -> Dict[str, Any]:
    """Every expert parameter's widened ``(source, target)`` maps and the two layouts."""
    saved = layout(checkpoint, with_maps=True)
    layers = saved["layers"]
    if not layers:
        raise PlanningError(f"{checkpoint}: the checkpoint records no AutoEP layer")
    if not all(p.get("map") for layer in layers for p in layer["params"]):
        raise PlanningError(f"{checkpoint}: the checkpoint records no affine maps (saved by DeepSpeed "
                            f"{saved.get('ds_version')}; affine maps need 0.19.8 or newer)")
    source_ep = int(layers[0]["ep_size"])
    source_world = source_ep * int(layers[0]["expert_data_parallel_world_size"])
    target_world = _positive(target.get("world_size", _DEFAULT_WORLD), "world_size")
    target_ep = _positive(target.get("autoep_size", _DEFAULT_EP), "autoep_size")
    try:
        check_layout(target_world, target_ep)
    except ValueError as e:
        raise PlanningError(str(e)) from None
    names = sorted(p["name"] for layer in layers for p in layer["params"])
    faulted = FAULT_PARAMETER if FAULT_PARAMETER in names else names[-1]
    pairs: Dict[str, Any] = {}
    for layer in layers:
        for param in layer["params"]:
            source = param["map"]
            if fault == "swap-source-experts" and param["name"] == faulted:
                source = _swapped_ep_map(source, layer["ranks"])
            pairs[param["name"]] = {
                "source": widen_to_processes(source, source_world, source_ep),
                "target": widen_to_processes(
                    _target_ep_map(int(layer["num_experts"]), target_ep, param["logical_shape"]),
                    target_world, target_ep),
            }
    return {
        "pairs": pairs,
        "faulted": faulted,
        "ds_version": saved.get("ds_version"),
        "source": {"world_size": source_world, "ep_size": source_ep},
        "target": {"world_size": target_world, "ep_size": target_ep},
    }


def plan_pairs(pairs: Dict[str, Any], policy: str, element_size: int) -> Tuple[Dict[str, List[Any]], str]:
    """Segments per parameter from DeepSpeed's planner, and the API that made them."""
    from deepspeed.checkpoint.affine import ParamAffineMap
    from deepspeed.checkpoint.affine_transfer import plan_transfer

    api, batch, policies = _api()
    maps = {name: (ParamAffineMap.from_dict(pair["target"]), ParamAffineMap.from_dict(pair["source"]))
            for name, pair in pairs.items()}
    if batch is not None:
        # PR #8936's contract; no DeepSpeed release has it, so this branch has not run here.
        replica_policy = getattr(policies, policy, None) if policy != "highest_holder" else policies.per_request(
            lambda request: max(c.source_rank for c in request.candidates))
        if replica_policy is None:
            raise PlanningError(f"affine_replica_policy has no policy {policy!r}")
        world = {str(k): int(k) for pair in pairs.values() for k in pair["source"]["ranks"]}
        target = {str(k): int(k) for pair in pairs.values() for k in pair["target"]["ranks"]}
        plans = batch(maps, None, source_processes={int(k): v for k, v in world.items()},
                      target_processes={int(k): v for k, v in target.items()},
                      element_size={name: element_size for name in maps}, replica_policy=replica_policy)
        return {name: [s.to_dict() for s in plans[name].segments] for name in sorted(maps)}, api
    selector = _selector(policy, element_size)
    out = {}
    for name in sorted(maps):
        target_map, source_map = maps[name]
        out[name] = [s.to_dict() for s in plan_transfer(target_map, source_map, replica_selector=selector).segments]
    return out, api


def inject_fault(segments: Dict[str, List[Any]], pairs: Dict[str, Any], name: str, fault: str,
                 source_ep: int) -> None:
    """Applies a segment-level ``--plan-fault`` to parameter ``name`` (in place)."""
    own = segments[name]
    if fault == "drop-segment":
        own.pop()
    elif fault == "wrong-holder":
        seg = own[0]
        world = len(pairs[name]["source"]["ranks"])
        location = seg["source"][0]
        others = [g for g in range(world) if ep_rank_of(g, source_ep) != ep_rank_of(location, source_ep)]
        if not others:
            raise PlanningError("wrong-holder needs a source with more than one EP rank")
        seg["source"][0] = others[0]
    elif fault == "shift-origin":
        seg = own[0]
        seg["source"][1] += seg["source"][2][1] if len(seg["source"][2]) > 1 else 1


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="deepspeed_planner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-checkpoint", required=True, help="native tag folder (<dir>/global_step<N>)")
    parser.add_argument("--target", required=True, help="target topology JSON (world_size, autoep_size)")
    parser.add_argument("--policy", required=True, choices=sorted(POLICIES))
    parser.add_argument("--out", required=True, help="plan file to write")
    parser.add_argument("--element-size", type=int, default=4, help="bytes per element in the statistics")
    parser.add_argument("--plan-fault", default="none", choices=sorted(PLAN_FAULTS))
    a = parser.parse_args(argv)
    try:
        import deepspeed
        with open(a.target, encoding="utf-8") as f:
            target = json.load(f)
        started = time.perf_counter()
        collected = collect_pairs(a.source_checkpoint, target, a.plan_fault)
        segments, api = plan_pairs(collected["pairs"], a.policy, a.element_size)
        inject_fault(segments, collected["pairs"], collected["faulted"], a.plan_fault,
                     collected["source"]["ep_size"])
        plan_s = time.perf_counter() - started
    except (PlanningError, ValueError, OSError, SystemExit) as e:
        print(f"deepspeed_planner: {e}", file=sys.stderr)
        return 1
    pairs = collected["pairs"]
    processes = lambda side: {str(g): g for g in range(collected[side]["world_size"])}  # noqa: E731
    plan = {
        "schema_version": 1,
        "policy": a.policy,
        "planner": {
            "name": "deepspeed.checkpoint.affine_transfer",
            "api": api,
            "version": deepspeed.__version__,
            "policy_fidelity": POLICIES[a.policy],
            "checkpoint_ds_version": collected["ds_version"],
            "plan_s": round(plan_s, 6),
            "fault": a.plan_fault,
            **({"fault_parameter": collected["faulted"]} if a.plan_fault != "none" else {}),
        },
        "layout": {"source": collected["source"], "target": collected["target"]},
        "source_processes": processes("source"),
        "target_processes": processes("target"),
        "parameters": {
            name: {"element_size": a.element_size, "source_map": pairs[name]["source"],
                   "target_map": pairs[name]["target"], "segments": segments[name]}
            for name in sorted(pairs)
        },
    }
    write_document(a.out, plan)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
