"""Times DeepSpeed's installed ``plan_transfer`` on map pairs the harness's bench sends.

Run with the DeepSpeed venv's python (``.venv-deepspeed/bin/python``). It speaks JSON lines: one
request per line on stdin, one reply per line on stdout (everything else the process prints,
DeepSpeed's import-time log included, goes to stderr). Requests:

- ``{"op": "load", "id": ..., "parameters": {name: {"source": map, "target": map}},
  "budget": {...}, "placements": {name: {"source": descriptor, "target": descriptor}}}``: parses
  the affine map v1 dicts with ``ParamAffineMap.from_dict`` (not timed). ``budget`` holds
  ``PlanBudget`` fields (DeepSpeed's defaults for the others). With ``placements``, each map is
  also compared with DeepSpeed's own lowering, ``autoep_placement_to_affine_map``; the reply names
  the parameters whose maps differ from it.
- ``{"op": "time", "id": ..., "selector": "first_holder" | "highest_holder", "runs": n,
  "timeout_s": t, "segments": bool}``: plans every parameter (names sorted) with
  ``plan_transfer(target, source, budget, replica_selector=...)`` ``n`` times, each run timed
  with ``time.perf_counter`` (wall) and ``time.process_time`` (this process's CPU); a run still
  going after ``timeout_s`` is stopped and reported as timed out. With ``segments``, the reply
  carries every parameter's ``TransferSegment.to_dict()`` list from the last run.
- ``{"op": "version"}``: DeepSpeed's and Python's versions.

``first_holder`` is ``plan_transfer`` without a selector (DeepSpeed reads the lowest holder);
``highest_holder`` passes a ``replica_selector`` returning the highest candidate rank, which
DeepSpeed consults only for regions with more than one holder.

A failure is a reply ``{"ok": false, "error": ...}`` naming the parameter when DeepSpeed refused
one; the process keeps serving.
"""

import gc
import json
import os
import platform
import signal
import sys
import time

# The protocol owns the real stdout; anything else written to fd 1 (DeepSpeed logs on import)
# lands on stderr instead of corrupting a reply.
_REPLIES = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr

import deepspeed  # noqa: E402
from deepspeed.checkpoint.affine import ParamAffineMap  # noqa: E402
from deepspeed.checkpoint.affine_transfer import PlanBudget, plan_transfer  # noqa: E402
from deepspeed.checkpoint.autoep_affine import autoep_placement_to_affine_map  # noqa: E402


def _highest_holder(request):
    return max(candidate.source_rank for candidate in request.candidates)


SELECTORS = {"first_holder": None, "highest_holder": _highest_holder}


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


signal.signal(signal.SIGALRM, _on_alarm)

_loaded = {}


def _load(request):
    budget = PlanBudget(**request.get("budget", {}))
    parameters = []
    for name in sorted(request["parameters"]):
        pair = request["parameters"][name]
        parameters.append((name, ParamAffineMap.from_dict(pair["source"]), ParamAffineMap.from_dict(pair["target"])))
    lowering_differs = []
    for name, placement in sorted(request.get("placements", {}).items()):
        pair = request["parameters"][name]
        for side in ("source", "target"):
            ours = ParamAffineMap.from_dict(pair[side])
            theirs = autoep_placement_to_affine_map(placement[side], ours.logical_shape)
            if ours.to_dict() != theirs.to_dict():
                lowering_differs.append(f"{name} ({side})")
    _loaded[request["id"]] = (parameters, budget)
    return {"parameters": len(parameters), "budget": budget.__dict__, "lowering_differs": lowering_differs}


def _plan_all(parameters, budget, selector):
    plans = {}
    for name, source, target in parameters:
        try:
            plans[name] = plan_transfer(target, source, budget, replica_selector=selector)
        except _Timeout:
            raise
        except Exception as error:  # DeepSpeed's refusal, reported with the parameter it hit
            error.parameter = name
            raise
    return plans


def _time(request):
    parameters, budget = _loaded[request["id"]]
    selector = SELECTORS[request["selector"]]
    timeout = float(request.get("timeout_s", 0))
    runs = []
    plans = None
    for _ in range(int(request.get("runs", 1))):
        plans = None
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            plans = _plan_all(parameters, budget, selector)
        except _Timeout:
            return {"runs": runs, "timed_out": True, "timeout_s": timeout}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        runs.append({
            "wall_ms": (time.perf_counter() - wall) * 1000,
            "cpu_ms": (time.process_time() - cpu) * 1000,
        })
    reply = {"runs": runs, "timed_out": False}
    if request.get("segments") and plans is not None:
        reply["segments"] = {name: [segment.to_dict() for segment in plan.segments] for name, plan in plans.items()}
    return reply


def _version(request):
    return {"deepspeed": deepspeed.__version__, "python": platform.python_version()}


OPS = {"load": _load, "time": _time, "version": _version}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            reply = {"ok": True, **OPS[request["op"]](request)}
        except Exception as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            if getattr(error, "parameter", None) is not None:
                reply["parameter"] = error.parameter
        _REPLIES.write(json.dumps(reply, separators=(",", ":")) + "\n")
        _REPLIES.flush()


if __name__ == "__main__":
    main()
