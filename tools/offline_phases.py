#!/usr/bin/env python3
"""Runs the phases of an offline bundle (`parity plan <file> --bundle DIR`) on a machine without
Deno or network, Python 3 standard library only; `parity run <file> --import DIR` judges them back
where the harness lives (docs/deepspeed.md, "On a GPU node").

    python3 tools/offline_phases.py BUNDLE [--python PY] [--deno DENO] [--project DIR] [--only NAME]

Each phase runs as the runner would launch it: its argv as a list (never a shell), the bundle's
environment over this process's own, its working folder and timeout (then SIGTERM, then SIGKILL
to its whole process group), stdout and stderr appended to `phases/<name>/stdout.log` and
`stderr.log`. Each phase leaves `phases/<name>/offline_result.json` (status ok, failed, timeout
or skipped; exit code; wall seconds; start and end; which declared artifacts it left). A phase
whose inputs did not end ok is skipped. Exit 0 when every phase ended ok, 3 when one did not,
2 for a bad bundle or argument.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

FORMAT = 1
RESULT_FILE = "offline_result.json"
ENVIRONMENT_FILE = "offline_environment.json"

# What the phases' interpreter runs with: the harness's manifest cannot see this machine.
_PROBE = """
import importlib, json, platform, sys
out = {"python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform()}
for name in ("torch", "deepspeed", "transformers"):
    try:
        out[name] = importlib.import_module(name).__version__
    except Exception as e:
        out[name] = None
try:
    import torch
    out["cuda"] = torch.version.cuda
    out["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
except Exception:
    pass
print(json.dumps(out))
"""
GRACE_S = 10.0  # between SIGTERM and SIGKILL, as the harness's DEFAULT_GRACE_MS


class BundleError(Exception):
    """A bundle or argument this script cannot use (exit 2)."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _load(bundle: str) -> dict:
    path = os.path.join(bundle, "bundle.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file (export the bundle with `parity plan --bundle`)")
    except (OSError, ValueError) as e:
        raise BundleError(f"{path}: not readable JSON ({e})")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"{path}: not an offline bundle of format {FORMAT}")
    if not isinstance(data.get("phases"), list):
        raise BundleError(f"{path}: no phase list")
    return data


def _tokens(args, bundle: str, data: dict) -> dict:
    project = os.path.abspath(args.project)
    tokens = {"<run>": os.path.abspath(bundle), "<project>": project}
    tokens["<python>"] = _program(args.python) or data.get("python", "")
    tokens["<deno>"] = _program(args.deno) or ""
    return tokens


def _program(path):
    """A program given on the command line: a relative path is this shell's, not a phase's cwd's."""
    return os.path.abspath(path) if path and os.sep in path and not os.path.isabs(path) else path


def _expand(text: str, tokens: dict) -> str:
    # <python> and <deno> may themselves be written with <project>: they are expanded first.
    text = text.replace("<python>", tokens["<python>"]).replace("<deno>", tokens["<deno>"])
    return text.replace("<run>", tokens["<run>"]).replace("<project>", tokens["<project>"])


def _install_wheels(data: dict, bundle: str, tokens: dict) -> list:
    """Installs the bundle's wheels the target's python lacks into `<bundle>/site` (pip, no index,
    no dependencies); returns the PYTHONPATH entries for the phases."""
    wheels = data.get("wheels", [])
    if not wheels:
        return []
    python = _expand(tokens["<python>"], tokens)
    site = os.path.join(os.path.abspath(bundle), "site")
    for wheel in wheels:
        dist = os.path.basename(wheel).split("-")[0]
        # The box's own copy wins: its binary packages match its python.
        have = subprocess.run([python, "-c", f"import importlib.metadata as m; m.version({dist!r})"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if have.returncode == 0:
            print(f"offline: {dist}: the target's python has it, the bundle's wheel is not used",
                  flush=True)
            continue
        argv = [python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
                "--disable-pip-version-check", "--upgrade", "--target", site, os.path.join(bundle, wheel)]
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            raise BundleError(f"pip could not install {wheel} for {python}:\n{done.stdout[-2000:]}")
        print(f"offline: {dist}: installed from the bundle into {site}", flush=True)
    return [site]


def _artifacts(phase: dict, tokens: dict) -> dict:
    """Which declared artifacts the phase left: present, files and bytes."""
    out = {}
    for name, path in sorted(phase.get("must_leave", {}).items()):
        full = _expand(path, tokens)
        sizes = {}
        if os.path.isdir(full):
            for root, _dirs, names in os.walk(full):
                for n in names:
                    file = os.path.join(root, n)
                    try:
                        sizes[os.path.relpath(file, full)] = os.path.getsize(file)
                    except OSError:
                        pass
        elif os.path.isfile(full):
            sizes[""] = os.path.getsize(full)
        # The file sizes let the harness tell a checkpoint that came back whole from a partial copy.
        out[name] = {"path": path, "present": os.path.exists(full), "files": len(sizes),
                     "bytes": sum(sizes.values()), "sizes": sizes}
    return out


def _stop_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _run_phase(phase: dict, tokens: dict, pythonpath: list) -> dict:
    folder = _expand(phase["dir"], tokens)
    os.makedirs(folder, exist_ok=True)
    for path, content in phase.get("write_files", {}).items():
        full = _expand(path, tokens)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(content)
    argv = [_expand(a, tokens) for a in phase["argv"]]
    env = dict(os.environ)
    env.update({k: _expand(v, tokens) for k, v in phase.get("env", {}).items()})
    missing = [n for n in phase.get("env_from_target", []) if n not in os.environ]
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath + [p for p in [env.get("PYTHONPATH")] if p])
    cwd = _expand(phase["cwd"], tokens)
    started, t0 = _now(), time.monotonic()
    result = {"name": phase["name"], "started_at": started, "argv0": argv[0]}
    if missing:
        result["env_missing"] = missing
    with open(os.path.join(folder, "stdout.log"), "ab") as out, \
            open(os.path.join(folder, "stderr.log"), "ab") as err:
        try:
            proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            err.write(f"offline_phases: could not start {argv[0]}: {e}\n".encode())
            result.update(status="failed", exit_code=None, message=f"could not start: {e}")
        else:
            timeout = phase.get("timeout_s")
            try:
                code = proc.wait(timeout=timeout if timeout and timeout > 0 else None)
                result.update(exit_code=code, status="ok" if code == 0 else "failed",
                              message="exit code 0" if code == 0 else f"exit code {code}")
            except subprocess.TimeoutExpired:
                _stop_group(proc)
                result.update(status="timeout", exit_code=proc.returncode,
                              message=f"timed out after {timeout} s (process group stopped)")
            except KeyboardInterrupt:
                _stop_group(proc)
                raise
    result["wall_s"] = round(time.monotonic() - t0, 3)
    result["finished_at"] = _now()
    result["artifacts"] = _artifacts(phase, tokens)
    gone = [n for n, a in result["artifacts"].items() if not a["present"]]
    if result["status"] == "ok" and gone:
        result["status"] = "failed"
        result["message"] = "missing artifact: " + ", ".join(
            result["artifacts"][n]["path"] for n in gone) + " was not written"
    return result


def _write(folder: str, result: dict) -> None:
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, RESULT_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(folder, RESULT_FILE))


def _environment(bundle: str, tokens: dict, pythonpath: list, uses_python: bool) -> dict:
    """Host, Python, torch, CUDA, GPUs and DeepSpeed the phases ran with (best effort)."""
    env = {"host": platform.node(), "started_at": _now(), "script_python": platform.python_version()}
    if uses_python:
        penv = dict(os.environ)
        if pythonpath:
            penv["PYTHONPATH"] = os.pathsep.join(pythonpath + [p for p in [penv.get("PYTHONPATH")] if p])
        try:
            done = subprocess.run([_expand(tokens["<python>"], tokens), "-c", _PROBE], env=penv,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  timeout=300)
            env.update(json.loads(done.stdout.strip().splitlines()[-1]))
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as e:
            env["probe_error"] = str(e) or type(e).__name__
    if shutil.which("nvidia-smi"):
        done = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
        env["nvidia_smi"] = done.stdout.strip().splitlines()
    with open(os.path.join(bundle, ENVIRONMENT_FILE), "w", encoding="utf-8") as f:
        json.dump(env, f, indent=2)
        f.write("\n")
    return env


def _copy_back(bundle: str, data: dict, tokens: dict, to: str, checkpoints: bool) -> None:
    """Copies the bundle for the trip back (into `to/<bundle name>`): the results, logs, metrics
    and offline_result.json files; not the installed wheels, nor the checkpoints unless asked."""
    root = os.path.abspath(bundle)
    left = set()
    if not checkpoints:
        for phase in data["phases"]:
            for name, path in phase.get("must_leave", {}).items():
                full = _expand(path, tokens)
                if name in ("checkpoint", "universal") and os.path.isdir(full):
                    left.add(os.path.realpath(full))
    skip_top = {os.path.join(root, "site"), os.path.join(root, "wheels")}

    def ignore(folder, names):
        return [n for n in names if os.path.join(folder, n) in skip_top
                or os.path.realpath(os.path.join(folder, n)) in left]

    target = os.path.join(to, os.path.basename(root.rstrip(os.sep)))
    shutil.copytree(root, target, symlinks=True, ignore=ignore, dirs_exist_ok=True)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(target) for f in fs)
    print(f"offline: copied {size / 1024 ** 2:.1f} MiB to {target}" +
          (f"; left here: {len(left)} checkpoint folder(s)" if left else ""), flush=True)


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", help="the bundle folder `parity plan --bundle` wrote")
    parser.add_argument("--python", help="interpreter for the Python phases (default: the bundle's, "
                        "the project's .venv-deepspeed/bin/python)")
    parser.add_argument("--deno", help="Deno binary for phases that run Deno (the reference trainer)")
    parser.add_argument("--project", default=os.path.join(os.path.dirname(__file__), ".."),
                        help="the checkout the argv's <project> stands for (default: this one)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only this phase (repeatable); the others are not touched")
    parser.add_argument("--copy-to", help="afterwards, copy the bundle there for the trip back "
                        "(without its checkpoints, the installed wheels and site/)")
    parser.add_argument("--with-checkpoints", action="store_true",
                        help="--copy-to: the checkpoints too")
    args = parser.parse_args(argv)
    try:
        data = _load(args.bundle)
        tokens = _tokens(args, args.bundle, data)
        phases = data["phases"]
        uses = {t for p in phases for a in p["argv"] for t in ("<deno>", "<python>") if t in a}
        if "<deno>" in uses and not tokens["<deno>"]:
            raise BundleError("a phase runs Deno: pass --deno PATH")
        unknown = [n for n in args.only if n not in {p["name"] for p in phases}]
        if unknown:
            raise BundleError(f"--only {', '.join(unknown)}: no such phase")
        pythonpath = _install_wheels(data, args.bundle, tokens) if "<python>" in uses else []
    except BundleError as e:
        print(f"offline: error: {e}", file=sys.stderr)
        return 2
    facts = _environment(args.bundle, tokens, pythonpath, "<python>" in uses)
    ended = {}
    n = len(phases)
    print(f"offline: {data.get('experiment')}: {n} phases, python {_expand(tokens['<python>'], tokens)}"
          + "".join(f", {k} {facts[k]}" for k in ("torch", "cuda", "deepspeed") if facts.get(k))
          + (f", {len(facts['gpus'])} GPU(s)" if facts.get("gpus") else ""), flush=True)
    for k, phase in enumerate(phases, 1):
        name = phase["name"]
        folder = _expand(phase["dir"], tokens)
        if args.only and name not in args.only:
            continue
        bad = [c for c in phase.get("consumes", []) if ended.get(c, "ok") != "ok"]
        if bad:
            result = {"name": name, "status": "skipped", "exit_code": None, "wall_s": 0,
                      "message": f"not run: it needs {', '.join(bad)}, which did not end ok"}
            print(f"phase {k}/{n} {name} ... skipped ({result['message']})", flush=True)
        else:
            print(f"phase {k}/{n} {name} ... running", flush=True)
            result = _run_phase(phase, tokens, pythonpath)
            extra = "" if result["status"] == "ok" else f" ({result['message']})"
            print(f"phase {k}/{n} {name} ... {result['status']} in {result['wall_s']:.1f} s{extra}",
                  flush=True)
        result["cache_key"] = phase.get("cache_key")
        ended[name] = result["status"]
        _write(folder, result)
    failed = [name for name, status in ended.items() if status != "ok"]
    print(f"offline: {len(ended) - len(failed)}/{len(ended)} phases ok" +
          (f"; not ok: {', '.join(failed)}" if failed else ""), flush=True)
    if args.copy_to:
        _copy_back(args.bundle, data, tokens, args.copy_to, args.with_checkpoints)
    return 0 if not failed else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
