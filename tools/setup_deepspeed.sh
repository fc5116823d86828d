#!/usr/bin/env bash
# Creates .venv-deepspeed/ at the repository root with the pins of adapters/deepspeed/requirements.txt:
# torch==2.13.0 (CPU wheel) first, then DeepSpeed without pre-built ops (DS_BUILD_OPS=0) and its deps.
# Idempotent: a stamp file holds the sha256 of the requirements file (and this script); when it
# matches and the venv's python imports deepspeed, nothing is done (well under a second).
#   bash tools/setup_deepspeed.sh            # create or verify
#   bash tools/setup_deepspeed.sh --force    # rebuild from scratch
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-deepspeed"
req="$root/adapters/deepspeed/requirements.txt"
stamp="$venv/.parity-stamp"
python="${PYTHON:-python3}"

want="$(cat "$req" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [[ "${1:-}" == "--force" ]]; then rm -rf "$venv"; fi
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
  "$venv/bin/python" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec('torch') and u.find_spec('deepspeed')))' >/dev/null 2>&1; then
  echo "setup_deepspeed: $venv is up to date ($(cut -c1-12 "$stamp"))"
  exit 0
fi

start=$(date +%s)
rm -f "$stamp"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
findlinks=()
if [[ -d /opt/wheels ]]; then findlinks=(--find-links /opt/wheels); fi

torch_pin="$(grep -E '^torch==' "$req")"
[[ "$torch_pin" == "torch==2.13.0" ]] || { echo "setup_deepspeed: torch must be pinned ==2.13.0 in $req" >&2; exit 2; }
"${pip[@]}" install "${findlinks[@]}" "$torch_pin"
# Everything else; torch==2.13.0 is already satisfied, so no CUDA build can sneak in. DeepSpeed's setup.py
# imports it, hence --no-build-isolation (it builds against the pinned wheel just installed).
grep -vE '^(torch==|deepspeed==|#|$)' "$req" | xargs "${pip[@]}" install "${findlinks[@]}" "$torch_pin"
DS_BUILD_OPS=0 "${pip[@]}" install --no-build-isolation "${findlinks[@]}" "$torch_pin" "$(grep -E '^deepspeed==' "$req")"
"$venv/bin/python" - <<'PY'
import torch, deepspeed, importlib.util
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, f"a CUDA build was installed: {torch.version.cuda}"
assert importlib.util.find_spec("deepspeed.module_inject.auto_ep") is not None, "this DeepSpeed has no AutoEP"
print(f"setup_deepspeed: torch=={torch.__version__}, deepspeed=={deepspeed.__version__}")
PY
echo "$want" >"$stamp"
echo "setup_deepspeed: done in $(($(date +%s) - start)) s"
