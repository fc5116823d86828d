#!/usr/bin/env bash
# Creates .venv-deepspeed/ at the repository root with the pins of adapters/deepspeed/requirements.txt:
# torch==2.13.0 (CPU wheel) first, then DeepSpeed without pre-built ops (DS_BUILD_OPS=0) and its deps,
# then builds DeepSpeed's CPU ops once into <venv>/torch_extensions/ (the TORCH_EXTENSIONS_DIR the
# deepspeed preset gives every phase): deepspeed_shm_comm (every CPU launch loads it) and cpu_adam
# (the seed's optimizer, main venv only). One folder per venv: two venvs sharing torch's default
# cache would rebuild each other's ops at every switch (the compiler flags name the venv).
# Every venv also gets the parity_hooks package (./hooks, non-editable): DeepSpeed scripts import
# parity_hooks.deepspeed from it. --hooks makes .venv-hooks/ instead, from hooks/requirements-dev.txt
# (DeepSpeed, transformers, accelerate, Lightning, tensorboard, pytest: the hooks' tests and examples).
# Idempotent: a stamp file holds the sha256 of the requirements file, this script and the options;
# when it matches and the venv's python imports deepspeed, nothing is done (well under a second).
# A second stamp holds the sha256 of hooks/ (pyproject.toml and parity_hooks/): when only it differs,
# only the package is reinstalled (a few seconds).
#   bash tools/setup_deepspeed.sh                     # create or verify .venv-deepspeed/
#   bash tools/setup_deepspeed.sh --hooks             # create or verify .venv-hooks/ (deno task setup-hooks)
#   bash tools/setup_deepspeed.sh --force             # rebuild from scratch
#   bash tools/setup_deepspeed.sh --deepspeed 0.19.7  # a second venv, .venv-deepspeed-0.19.7/: the same
#                                                     # pins with another DeepSpeed (cross-version resumes)
#   bash tools/setup_deepspeed.sh --cuda              # on a GPU machine: torch==2.13.0's CUDA build
#                                                     # from PyPI instead of the CPU wheel
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
req="$root/adapters/deepspeed/requirements.txt"
python="${PYTHON:-python3}"
force=0 cuda=0 deepspeed="" hooks=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --force) force=1 ;;
    --cuda) cuda=1 ;;
    --hooks) hooks=1 ;;
    --deepspeed)
      deepspeed="${2:-}"
      [[ "$deepspeed" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
        { echo "setup_deepspeed: --deepspeed needs an exact version such as 0.19.7" >&2; exit 2; }
      shift ;;
    *) echo "setup_deepspeed: unknown option $1 (--force, --cuda, --deepspeed X.Y.Z, --hooks)" >&2; exit 2 ;;
  esac
  shift
done
[[ $hooks == 1 && -n "$deepspeed" ]] &&
  { echo "setup_deepspeed: --hooks takes the DeepSpeed of hooks/requirements-dev.txt, not --deepspeed" >&2; exit 2; }
venv="$root/.venv-deepspeed${deepspeed:+-$deepspeed}"
if [[ $hooks == 1 ]]; then
  venv="$root/.venv-hooks"
  req="$root/hooks/requirements-dev.txt"
fi
stamp="$venv/.parity-stamp"
hooks_stamp="$venv/.parity-hooks-stamp"
ds_pin="$(grep -E '^deepspeed==' "$req")"
[[ -n "$deepspeed" ]] && ds_pin="deepspeed==$deepspeed"
ext_dir="$venv/torch_extensions"

# DeepSpeed's JIT ops, built by torch==2.13.0 with ninja + g++. It runs `ninja` through PATH, at build
# time and again at every load of a cached op (ninja decides nothing is to be done), so the build
# uses the very ninja the phases will find on PATH: the venv's pip ninja would write a .ninja_log
# of a newer format, which the machine's ninja then rejects and rebuilds everything (seen here).
build_op() { # <op builder class> <name>
  local t0=$SECONDS
  command -v ninja >/dev/null ||
    { echo "setup_deepspeed: DeepSpeed's ops need ninja on PATH (Debian: apt-get install ninja-build)" >&2; return 1; }
  TORCH_EXTENSIONS_DIR="$ext_dir" DS_ACCELERATOR=cpu "$venv/bin/python" -c \
    "from deepspeed.ops.op_builder.cpu import $1; $1().load()" >/dev/null 2>&1 ||
    { echo "setup_deepspeed: building DeepSpeed's $2 op failed (g++ and ninja needed)" >&2; return 1; }
  echo "setup_deepspeed: $2 op ready in $((SECONDS - t0)) s ($ext_dir)"
}
build_ops() {
  [[ -f "$ext_dir/deepspeed_shm_comm/deepspeed_shm_comm.so" ]] || build_op ShareMemCommBuilder deepspeed_shm_comm
  # The seed optimizer runs under the main venv only.
  [[ -n "$deepspeed" || $hooks == 1 || -f "$ext_dir/cpu_adam/cpu_adam.so" ]] || build_op CPUAdamBuilder cpu_adam
}

# The parity_hooks package, installed (not editable) from ./hooks whenever its sources changed.
hooks_hash() {
  (cd "$root" && find hooks/pyproject.toml hooks/parity_hooks -type f ! -path '*/__pycache__/*' -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
install_hooks() {
  local want_hooks
  want_hooks="$(hooks_hash)"
  if [[ -f "$hooks_stamp" && "$(cat "$hooks_stamp")" == "$want_hooks" ]] &&
    "$venv/bin/python" -c 'import parity_hooks' >/dev/null 2>&1; then
    return 0
  fi
  # A temporary copy: pip's in-tree build would leave build/ and *.egg-info in hooks/.
  local src
  src="$(mktemp -d)"
  cp -r "$root/hooks/pyproject.toml" "$root/hooks/README.md" "$root/hooks/parity_hooks" "$src/"
  "$venv/bin/python" -m pip --disable-pip-version-check install --quiet --no-deps --force-reinstall "$src" ||
    { rm -rf "$src"; echo "setup_deepspeed: installing ./hooks (parity_hooks) failed" >&2; return 1; }
  rm -rf "$src"
  echo "$want_hooks" >"$hooks_stamp"
  echo "setup_deepspeed: parity_hooks installed into $venv ($(cut -c1-12 "$hooks_stamp"))"
}

want="$(printf '%s\n' "$ds_pin" "cuda=$cuda" | cat "$req" "${BASH_SOURCE[0]}" - | sha256sum | cut -d' ' -f1)"
if [[ $force == 1 ]]; then rm -rf "$venv"; fi
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
  "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("torch") and u.find_spec("deepspeed")))' >/dev/null 2>&1; then
  build_ops
  install_hooks
  echo "setup_deepspeed: $venv is up to date ($(cut -c1-12 "$stamp"))"
  exit 0
fi

start=$(date +%s)
rm -f "$stamp" "$hooks_stamp"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
findlinks=()
if [[ -d /opt/wheels && $cuda == 0 ]]; then findlinks=(--find-links /opt/wheels); fi

torch_pin="$(grep -E '^torch==' "$req")"
[[ "$torch_pin" == "torch==2.13.0" ]] || { echo "setup_deepspeed: torch must be pinned ==2.13.0 in $req" >&2; exit 2; }
"${pip[@]}" install "${findlinks[@]}" "$torch_pin"
# Everything else; torch==2.13.0 is already satisfied, so no other build can sneak in. DeepSpeed's setup.py
# imports it, hence --no-build-isolation (it builds against the pinned wheel just installed).
grep -vE '^(torch==|deepspeed==|#|$)' "$req" | xargs "${pip[@]}" install "${findlinks[@]}" "$torch_pin"
DS_BUILD_OPS=0 "${pip[@]}" install --no-build-isolation "${findlinks[@]}" "$torch_pin" "$ds_pin"
PARITY_CUDA=$cuda PARITY_DS="${ds_pin#deepspeed==}" PARITY_NEED_AUTOEP=$([[ -z "$deepspeed" ]] && echo 1 || echo 0) \
  "$venv/bin/python" - <<'PY'
import os, torch, deepspeed, importlib.util
assert torch.__version__.startswith("2.13.0"), torch.__version__
if os.environ["PARITY_CUDA"] == "1":
    assert torch.version.cuda, "--cuda: the installed torch==2.13.0 is a CPU build"
else:
    assert not torch.version.cuda, f"a CUDA build was installed: {torch.version.cuda} (use --cuda on a GPU machine)"
assert deepspeed.__version__ == os.environ["PARITY_DS"], deepspeed.__version__
# Releases before AutoEP (0.19.2) still run the dense model (train_moe.py --model dense).
autoep = importlib.util.find_spec("deepspeed.module_inject.auto_ep") is not None
assert autoep or os.environ["PARITY_NEED_AUTOEP"] == "0", "this DeepSpeed has no AutoEP"
print(f"setup_deepspeed: torch=={torch.__version__}, deepspeed=={deepspeed.__version__}"
      f"{'' if autoep else ' (no AutoEP: --model dense only)'}")
PY
build_ops
install_hooks
echo "$want" >"$stamp"
echo "setup_deepspeed: done in $(($(date +%s) - start)) s"
