"""Runs train_moe.py's phases for real and measures resume parity: the numbers of docs/deepspeed.md.

    .venv-deepspeed/bin/python adapters/deepspeed/measure.py --out /tmp/ds-measure \\
        --zero-stages 0 1 2 3 --steps 100 --save-at 50 [--faults] [--precision bf16]

Per ZeRO stage: baseline (1..S), split (1..N, save), resume-native, convert (ds_to_universal),
resume-universal, resume-ep1 (universal, autoep_size 1), resume-dp4 (universal, 4 ranks) and
resume-dp1 (universal, 1 rank, autoep_size 1). With --faults, each --fault of train_moe.py is a
resume of the first stage's checkpoint. Every run is a fresh torchrun launch with the PARITY_*
environment the harness sets; argv never goes through a shell. Writes results.json and results.md
into --out and prints the markdown.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV_BIN = os.path.join(ROOT, ".venv-deepspeed", "bin")
SCRIPT = os.path.join(HERE, "train_moe.py")
FAULTS = ["no-optimizer-states", "no-lr-scheduler-states", "module-only", "skip-sampler-restore",
          "skip-rng-restore", "universal-without-load-universal"]


def launch(out: str, name: str, nproc: int, env_extra: dict, flags: list) -> dict:
    run_dir = os.path.join(out, name)
    os.makedirs(run_dir, exist_ok=True)
    metrics = os.path.join(run_dir, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    env = dict(os.environ, DS_ACCELERATOR="cpu", PARITY_PHASE=name, PARITY_RUN_DIR=run_dir,
               PARITY_METRICS_FILE=metrics, **env_extra)
    argv = [os.path.join(VENV_BIN, "torchrun"), "--standalone", "--nproc-per-node", str(nproc), SCRIPT, *flags]
    t0 = time.perf_counter()
    with open(os.path.join(run_dir, "log.txt"), "w") as log:
        rc = subprocess.call(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    wall = time.perf_counter() - t0
    return {"name": name, "rc": rc, "wall_s": round(wall, 2), "argv": argv[1:],
            "env": {k: v for k, v in env_extra.items()}, "records": read_metrics(metrics)}


def convert(out: str, native: str, universal: str) -> dict:
    argv = [os.path.join(VENV_BIN, "python"), "-m", "deepspeed.checkpoint.ds_to_universal", "--input_folder", native,
            "--output_folder", universal, "--num_extract_workers", "1", "--num_merge_workers", "1"]
    t0 = time.perf_counter()
    with open(os.path.join(out, "convert.log"), "w") as log:
        rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    return {"name": "convert", "rc": rc, "wall_s": round(time.perf_counter() - t0, 2), "argv": argv[1:]}


def read_metrics(path: str) -> list:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def losses(run: dict) -> dict:
    return {r["step"]: r["loss"] for r in run["records"] if "loss" in r and "event" not in r}


def event(run: dict, kind: str) -> dict:
    for r in run["records"]:
        if r.get("event") == kind:
            return r
    return {}


def ulp(a: float, b: float) -> int:
    ia, ib = (struct.unpack("<q", struct.pack("<d", x))[0] for x in (a, b))
    ia, ib = (i if i >= 0 else -(2**63) - i for i in (ia, ib))
    return abs(ia - ib)


def compare(base: dict, run: dict, first: int, last: int) -> dict:
    a, b = losses(base), losses(run)
    steps = list(range(first, last + 1))
    missing = [s for s in steps if s not in a or s not in b]
    if missing:
        return {"complete": False, "missing": missing[:5]}
    diffs = [(s, a[s], b[s]) for s in steps if a[s] != b[s] or math.isnan(b[s])]
    out = {"complete": True, "identical": not diffs, "steps": [first, last]}
    if diffs:
        s, x, y = diffs[0]
        rel = [abs(a[t] - b[t]) / abs(a[t]) for t in steps]
        out.update(first_divergent_step=s, baseline=x, resumed=y, ulp=ulp(x, y),
                   max_abs=max(abs(a[t] - b[t]) for t in steps), max_rel=max(rel), divergent_steps=len(diffs))
    return out


def digest_diff(saved: dict, loaded: dict) -> list:
    s, l = saved.get("digests", {}), loaded.get("digests", {})
    return sorted(k for k in set(s) | set(l) if s.get(k) != l.get(k))


def stage_runs(a: argparse.Namespace, stage: int) -> dict:
    out = os.path.join(a.out, f"zero{stage}")
    os.makedirs(out, exist_ok=True)
    ckpt = os.path.join(out, "split", "checkpoints")
    base_flags = ["--zero-stage", str(stage), "--precision", a.precision, "--grad-accum", str(a.grad_accum),
                  "--autoep-size", "2"]
    common = {"PARITY_STEPS": str(a.steps), "PARITY_SEED": str(a.seed)}
    runs = {}
    if a.faults_only:
        for name in ("baseline", "split", "resume-native"):
            runs[name] = {"name": name, "rc": 0, "wall_s": None,
                          "records": read_metrics(os.path.join(out, name, "metrics.jsonl"))}
        native = os.path.join(ckpt, f"global_step{a.save_at}")
        universal = os.path.join(ckpt, f"global_step{a.save_at}_universal")
        uni = dict(common, PARITY_STOP_AT=str(a.steps), PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=universal,
                   PARITY_RESUME_KIND="universal")
        for fault in FAULTS:
            env = uni if fault == "universal-without-load-universal" else dict(
                common, PARITY_STOP_AT=str(a.steps), PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=native,
                PARITY_RESUME_KIND="native")
            runs[f"fault-{fault}"] = launch(out, f"fault-{fault}", 2, env, base_flags + ["--fault", fault])
        return runs
    runs["baseline"] = launch(out, "baseline", 2, dict(common, PARITY_STOP_AT=str(a.steps)), base_flags)
    runs["split"] = launch(out, "split", 2, dict(common, PARITY_STOP_AT=str(a.save_at), PARITY_SAVE_AT=str(a.save_at),
                                                  PARITY_CHECKPOINT_DIR=ckpt), base_flags)
    native = os.path.join(ckpt, f"global_step{a.save_at}")
    universal = os.path.join(ckpt, f"global_step{a.save_at}_universal")
    runs["resume-native"] = launch(out, "resume-native", 2, dict(common, PARITY_STOP_AT=str(a.steps),
                                   PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=native, PARITY_RESUME_KIND="native"),
                                   base_flags)
    runs["convert"] = convert(out, native, universal)
    uni = dict(common, PARITY_STOP_AT=str(a.steps), PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=universal,
               PARITY_RESUME_KIND="universal")
    runs["resume-universal"] = launch(out, "resume-universal", 2, uni, base_flags)
    runs["resume-ep1"] = launch(out, "resume-ep1", 2, uni, base_flags[:-1] + ["1"])
    runs["resume-dp4"] = launch(out, "resume-dp4", 4, uni, base_flags)
    runs["resume-dp1"] = launch(out, "resume-dp1", 1, uni, base_flags[:-1] + ["1"])
    if stage == 3:  # DeepSpeed 0.19.8 shares one Adam step tensor after a ZeRO-3 universal load
        fix = ["--unshare-adam-step"]
        runs["resume-universal+unshare"] = launch(out, "resume-universal+unshare", 2, uni, base_flags + fix)
        runs["resume-ep1+unshare"] = launch(out, "resume-ep1+unshare", 2, uni, base_flags[:-1] + ["1"] + fix)
        runs["resume-dp4+unshare"] = launch(out, "resume-dp4+unshare", 4, uni, base_flags + fix)
    if a.faults and stage == a.zero_stages[0]:
        for fault in FAULTS:
            env = uni if fault == "universal-without-load-universal" else dict(
                common, PARITY_STOP_AT=str(a.steps), PARITY_CHECKPOINT_DIR=ckpt, PARITY_RESUME_FROM=native,
                PARITY_RESUME_KIND="native")
            runs[f"fault-{fault}"] = launch(out, f"fault-{fault}", 2, env, base_flags + ["--fault", fault])
    return runs


def summarize(a: argparse.Namespace, stage: int, runs: dict) -> dict:
    saved = event(runs["split"], "saved")
    rows = {}
    for name, run in runs.items():
        row = {"rc": run["rc"], "wall_s": run["wall_s"]}
        if name == "split":
            row["vs_baseline"] = compare(runs["baseline"], run, 1, a.save_at)
        elif name.startswith("resume") or name.startswith("fault"):
            row["vs_baseline"] = compare(runs["baseline"], run, a.save_at + 1, a.steps)
            if name != "resume-native" and runs["resume-native"]["rc"] == 0:
                row["vs_native"] = compare(runs["resume-native"], run, a.save_at + 1, a.steps)
            loaded = event(run, "loaded")
            row["digests_differ"] = digest_diff(saved, loaded) if loaded else None
        if "records" in run and run["rc"] != 0:
            with open(os.path.join(a.out, f"zero{stage}", name, "log.txt")) as f:
                tail = [l for l in f.read().splitlines()
                        if re.search(r"\w+(Error|Exception): ", l) and "Connection closed by peer" not in l
                        and "ChildFailedError" not in l]
            row["error"] = tail[-3:]
        rows[name] = row
    return {"zero_stage": stage, "saved_digests": saved.get("digests"), "phases": rows}


def fmt(c: dict) -> str:
    if not c:
        return "-"
    if not c.get("complete"):
        return f"incomplete (missing {c.get('missing')})"
    if c["identical"]:
        return "bit-identical"
    return (f"differs from {c['first_divergent_step']} (ulp {c['ulp']}; max abs {c['max_abs']:.3g}, "
            f"max rel {c['max_rel']:.3g})")


def markdown(results: list) -> str:
    lines = ["| ZeRO | phase | exit | wall s | loss vs baseline | vs native | digests differing (loaded vs saved) |",
             "| ---- | ----- | ---- | ------ | ---------------- | --------- | ----------------------------------- |"]
    for res in results:
        for name, row in res["phases"].items():
            dd = row.get("digests_differ")
            dd = "-" if dd is None else (", ".join(dd) or "none")
            vs = fmt(row.get("vs_baseline")) if row["rc"] == 0 else "ERROR: " + " / ".join(
                e.strip()[:160].replace("|", "/") for e in row.get("error", [])[-1:])
            lines.append(f"| {res['zero_stage']} | {name} | {row['rc']} | {row['wall_s']} | {vs} "
                         f"| {fmt(row.get('vs_native'))} | {dd} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--zero-stages", type=int, nargs="+", default=[1])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--save-at", type=int, default=50)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--precision", default="bf16")
    p.add_argument("--grad-accum", type=int, default=2)
    p.add_argument("--faults", action="store_true")
    p.add_argument("--faults-only", action="store_true",
                   help="reuse --out's baseline, split and resume-native of the first stage; run only the faults")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    results = []
    for stage in a.zero_stages:
        runs = stage_runs(a, stage)
        results.append(summarize(a, stage, runs))
        with open(os.path.join(a.out, "results-faults.json" if a.faults_only else "results.json"), "w") as f:
            json.dump({"args": vars(a), "results": results}, f, indent=1)
        print(markdown(results[-1:]), flush=True)
    md = markdown(results)
    with open(os.path.join(a.out, "results-faults.md" if a.faults_only else "results.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
