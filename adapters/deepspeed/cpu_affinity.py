"""Pins a rank to the CPU cores the harness's device pool gave its phase (``PARITY_CPUS``).

The harness sets ``PARITY_CPUS`` (comma-separated core numbers) when an experiment declares
``devices: {kind: cpu, ids: [...]}``; each rank then runs on its own core of that set (local rank
modulo the set), so two phases side by side never share a core. Called before torch is imported,
so its thread pools start on the pinned core.
"""

from __future__ import annotations

import os


def pin_to_parity_cpus(env: dict[str, str] | None = None) -> set[int] | None:
    """Pins this process to its core of ``PARITY_CPUS``; returns the affinity set, or None unset."""
    env = dict(os.environ) if env is None else env
    listed = env.get("PARITY_CPUS", "").strip()
    if not listed:
        return None
    cores = [int(c) for c in listed.split(",") if c.strip() != ""]
    if not cores:
        return None
    rank = int(env.get("LOCAL_RANK", "0"))
    mine = {cores[rank % len(cores)]}
    os.sched_setaffinity(0, mine)
    return os.sched_getaffinity(0)
