#!/usr/bin/env bash
# Creates .venv-tools/ at the repository root with the exact pins of tools/requirements-tools.txt:
# cmark-gfm (GitHub's Markdown renderer) and actionlint, used only by tests. Idempotent: a stamp
# holds the sha256 of the requirements file and this script; when it matches, nothing is done.
#   bash tools/setup_tools.sh            # create or verify
#   bash tools/setup_tools.sh --force    # rebuild from scratch
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-tools"
req="$root/tools/requirements-tools.txt"
stamp="$venv/.parity-stamp"
python="${PYTHON:-python3}"

want="$(cat "$req" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [[ "${1:-}" == "--force" ]]; then rm -rf "$venv"; fi
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$venv/bin/actionlint" ]] &&
  "$venv/bin/python" -c 'import cmarkgfm' >/dev/null 2>&1; then
  echo "setup_tools: $venv is up to date ($(cut -c1-12 "$stamp"))"
  exit 0
fi
rm -f "$stamp"
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip --disable-pip-version-check install -q --only-binary=:all: -r "$req"
"$venv/bin/python" -c 'import cmarkgfm'
"$venv/bin/actionlint" --version | head -1
echo "$want" >"$stamp"
echo "setup_tools: done"
