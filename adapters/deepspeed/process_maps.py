"""AutoEP affine maps over expert-parallel ranks, widened to every process of a job.

DeepSpeed records one affine map per expert parameter whose locations are *expert-parallel*
ranks (``autoep_affine.py``: ZeRO and expert-data-parallel fragments are outside the map). A job
of ``world`` processes with AutoEP size ``ep`` holds ``world / ep`` replicas of that map: in
DeepSpeed's legacy E+D layout (``deepspeed/utils/groups.py``: expert-parallel groups are
consecutive ranks, expert-data-parallel groups stride by ``ep``) process ``g`` is EP rank
``g % ep`` of its group. A plan over EP ranks plans one group; widening the map to processes
plans every target process and lets a replica policy choose among every real copy.

Only the standard library: the maps are the JSON form DeepSpeed's ``ParamAffineMap.to_dict``
writes (``{"logical_shape", "ranks": {rank: {"shard_shape", "pieces": [...]}}}``).
"""

from __future__ import annotations

from typing import Any, Dict, List


def ep_rank_of(process: int, ep_size: int) -> int:
    """EP rank of ``process`` in DeepSpeed's legacy E+D layout."""
    return process % ep_size


def expert_data_parallel_group(ep_rank: int, world: int, ep_size: int) -> List[int]:
    """The processes holding EP rank ``ep_rank``'s experts, in rank order."""
    return [g for g in range(world) if ep_rank_of(g, ep_size) == ep_rank]


def check_layout(world: int, ep_size: int) -> None:
    """Refuses a world that AutoEP cannot lay out (``ep`` must divide it)."""
    if world < 1 or ep_size < 1 or world % ep_size:
        raise ValueError(f"autoep_size {ep_size} does not divide world_size {world}")


def widen_to_processes(ep_map: Dict[str, Any], world: int, ep_size: int) -> Dict[str, Any]:
    """The map with one location per process: process ``g`` holds EP rank ``g % ep``'s shard, and
    every piece lists every process holding it."""
    check_layout(world, ep_size)
    by_rank = {int(r): v for r, v in ep_map["ranks"].items()}
    if sorted(by_rank) != list(range(ep_size)):
        raise ValueError(f"the map has EP ranks {sorted(by_rank)}, expected 0..{ep_size - 1}")
    ranks: Dict[str, Any] = {}
    for g in range(world):
        shard = by_rank[ep_rank_of(g, ep_size)]
        pieces = []
        for piece in shard["pieces"]:
            holders = {int(r) for r in piece["locations"]}
            widened = dict(piece)
            widened["locations"] = [h for h in range(world) if ep_rank_of(h, ep_size) in holders]
            pieces.append(widened)
        ranks[str(g)] = {"shard_shape": list(shard["shard_shape"]), "pieces": pieces}
    return {"logical_shape": list(ep_map["logical_shape"]), "ranks": ranks}


def slot_experts(process_map: Dict[str, Any], location: int) -> List[int]:
    """Global expert of each local slot of ``location``'s shard, read from the map's pieces
    (what the map *claims* the shard holds)."""
    logical = list(process_map["logical_shape"])
    per_expert = 1
    for dim in logical[1:]:
        per_expert *= int(dim)
    shard = process_map["ranks"][str(location)]
    slots: List[int] = [-1] * int(shard["shard_shape"][0])
    for piece in shard["pieces"]:
        source_offset = int(piece["source"][0])
        dest_offset = int(piece["dest"][0])
        for i in range(int(piece["shape"][0])):
            slots[dest_offset // per_expert + i] = source_offset // per_expert + i
    return slots
