"""pin_to_parity_cpus: a rank runs on its own core of PARITY_CPUS (checked in a child process)."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = (
    "import os, sys; sys.path.insert(0, %r); from cpu_affinity import pin_to_parity_cpus; "
    "print(sorted(pin_to_parity_cpus() or [])); print(sorted(os.sched_getaffinity(0)))" % HERE
)


def _affinity(env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, **env},
                         capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[:2]


def test_each_rank_gets_its_core() -> None:
    cores = sorted(os.sched_getaffinity(0))
    last = cores[-1]
    assert _affinity({"PARITY_CPUS": f"{cores[0]},{last}", "LOCAL_RANK": "1"}) == [
        f"[{last}]", f"[{last}]"]
    assert _affinity({"PARITY_CPUS": str(cores[0]), "LOCAL_RANK": "3"}) == [
        f"[{cores[0]}]", f"[{cores[0]}]"]


def test_unset_leaves_the_affinity_alone() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PARITY_CPUS"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split("\n")[0] == "[]"
