"""The shard readers of a DeepSpeed checkpoint's files: one module for every tool that reads them.

``checkpoint_files.py`` (the save check's reader) and ``plan_executor.py`` (plans run on the
checkpoint's bytes) both assemble a parameter's tensors from the per-rank files DeepSpeed writes;
the layout knowledge lives here once:

- which ``(bf16_)zero_pp_rank_<r>_mp_rank_00_optim_states.pt`` file belongs to which rank
  (:func:`optimizer_files`);
- ZeRO-1/2 (and ``BF16_Optimizer`` at stage 0): a group's flat fp32 partition per rank and its
  ``param_slice_mappings`` (name -> fragment ``start``/``numel`` in that rank's partition)
  (:func:`fragments_of`);
- ZeRO-3: each parameter partitioned on its own over the sub-group's ranks (partition ``k`` is
  elements ``[k·ps, (k+1)·ps)``, ``ps = ceil(numel / count)``), a sub-group's flat tensor
  concatenating its parameters' partitions in ``param_shapes`` order (:func:`zero3_parameters`).

Needs torch (imported lazily).
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

#: A rank's optimizer file (bf16 runs prefix ``bf16_``).
OPTIM_FILE = re.compile(r"(?:bf16_)?zero_pp_rank_(\d+)_mp_rank_00_optim_states\.pt$")

#: The model-states file of a tag folder: ZeRO 0-2 write one, ZeRO-3 one per rank (rank 0's first).
MODEL_STATES_FILES = ("mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt")


def load(path: str) -> Any:
    """``torch.load`` of a DeepSpeed file onto the CPU (pickled objects included)."""
    import torch
    return torch.load(path, map_location="cpu", weights_only=False)


def optimizer_files(folder: str) -> Dict[int, str]:
    """``{rank: path}`` of the ZeRO optimizer files in a tag folder."""
    files: Dict[int, str] = {}
    for path in glob.glob(os.path.join(folder, "*optim_states.pt")):
        m = OPTIM_FILE.search(os.path.basename(path))
        if m:
            files[int(m.group(1))] = path
    return files


def model_states_file(folder: str) -> Optional[str]:
    """The path of the folder's (rank 0) model-states file, or None."""
    for name in MODEL_STATES_FILES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def fragments_of(partitions: Sequence[Any], mappings: Sequence[Dict[str, Any]], name: str) -> Optional[Any]:
    """The flat fp32 tensor of parameter ``name`` assembled from a ZeRO-1/2 group's per-rank
    partitions (rank order inside the group) and their ``param_slice_mappings`` (name -> fragment
    with ``start`` and ``numel`` inside that rank's partition); None when no partition holds it."""
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


def _numel(shape: Sequence[Any]) -> int:
    n = 1
    for dim in shape:
        n *= int(dim)
    return n


def _zero3_slices(params: Sequence[Tuple[str, Sequence[Any]]], count: int
                  ) -> Iterator[Tuple[str, List[int], int, int]]:
    """``(name, shape, offset, ps)`` of each parameter in a ZeRO-3 sub-group's flat partition."""
    offset = 0
    for name, shape in params:
        numel = _numel(shape)
        ps = -(-numel // count)
        yield name, [int(d) for d in shape], offset, ps
        offset += ps


def _zero3_full(flats: Sequence[Any], shape: List[int], offset: int, ps: int) -> Any:
    import torch
    full = torch.cat([flat.narrow(0, offset, ps) for flat in flats])[:_numel(shape)]
    return full.float().view(shape)


def zero3_parameters(flats: Sequence[Any], params: Sequence[Tuple[str, Sequence[Any]]]
                     ) -> Iterator[Tuple[str, Any]]:
    """``(name, full fp32 tensor)`` of every parameter of one ZeRO-3 sub-group, from the
    sub-group's flat tensor on each of its ranks (partition rank order) and its parameters'
    ``(name, shape)`` in ``param_shapes`` order."""
    for name, shape, offset, ps in _zero3_slices(params, len(flats)):
        yield name, _zero3_full(flats, shape, offset, ps)


def zero3_parameter(flats: Sequence[Any], params: Sequence[Tuple[str, Sequence[Any]]], name: str) -> Optional[Any]:
    """The full fp32 tensor of ``name`` in one ZeRO-3 sub-group (:func:`zero3_parameters`), or None."""
    for other, shape, offset, ps in _zero3_slices(params, len(flats)):
        if other == name:
            return _zero3_full(flats, shape, offset, ps)
    return None
