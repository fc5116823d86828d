"""A process's RNG states (python ``random``, numpy, torch CPU, CUDA), captured and restored.

torch and numpy are imported lazily (numpy's state is left out where numpy is not installed).
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Mapping

from ._digest import combine_rng_digests, replicated_rng_digest

__all__ = ["rng_state", "set_rng_state", "rng_digest", "gather_objects", "rank_and_world"]


def rng_state(all_cuda_devices: bool = False) -> Dict[str, Any]:
    """This process's RNG states: ``python``, ``numpy`` (when installed), ``torch`` (CPU), and
    ``cuda`` when CUDA is initialised — the current device's generator (one device per rank), or
    with ``all_cuda_devices`` the list of every visible device's (one process driving several)."""
    import torch

    state: Dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is optional
        pass
    else:
        # Plain Python values, not an array: a checkpoint loaded with torch.load(weights_only=True)
        # (Lightning's default) refuses numpy objects.
        name, keys, pos, has_gauss, cached = numpy.random.get_state()
        state["numpy"] = (str(name), keys.tolist(), int(pos), int(has_gauss), float(cached))
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all() if all_cuda_devices else torch.cuda.get_rng_state()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restores states captured by :func:`rng_state`."""
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy

        numpy.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        if isinstance(state["cuda"], (list, tuple)):
            torch.cuda.set_rng_state_all(state["cuda"])
        else:
            torch.cuda.set_rng_state(state["cuda"])


def rank_and_world() -> "tuple[int, int]":
    """``(rank, world_size)`` of the default process group; ``(0, 1)`` without one."""
    import torch.distributed as tdist

    if tdist.is_available() and tdist.is_initialized():
        return tdist.get_rank(), tdist.get_world_size()
    return 0, 1


def gather_objects(obj: Any) -> List[Any]:
    """Every rank's ``obj`` (a collective: call on every rank), or ``[obj]`` without a process group."""
    import torch.distributed as tdist

    if not (tdist.is_available() and tdist.is_initialized()):
        return [obj]
    out: List[Any] = [None] * tdist.get_world_size()
    tdist.all_gather_object(out, obj)
    return out


def rng_digest(include_cuda: bool = False, gather: bool = True) -> str:
    """The ``rng`` digest of the running generators: over every rank when ``gather`` (a collective),
    else of this process alone."""
    mine = replicated_rng_digest(rng_state(), include_cuda)
    return combine_rng_digests(gather_objects(mine) if gather else [mine])
