#!/usr/bin/env bash
# The seed experiment on this machine's NVIDIA GPUs, one command:
#   tools/gpu_check.sh            # set up (CUDA torch==2.13.0), run experiments/deepspeed/gpu_autoep_seed.yaml
#                                 # at the largest world size the GPUs allow, one line per comparison
#   tools/gpu_check.sh --dry-run  # no GPU needed: `parity plan` of that experiment at that world size
#   tools/gpu_check.sh --world-size N [--dry-run]   # choose the world size (1, 2, 4, 8 or 16)
# Offline (a GPU box whose own preinstalled CUDA PyTorch build is used as it is, nothing pip-installed
# from an index; no Deno, no DeepSpeed, no network):
#   tools/gpu_check.sh --export DIR [--world-size N]  # here: the bundle of the run, DeepSpeed and parity_hooks wheels in it
#   tools/gpu_check.sh --offline DIR [--copy-to OUT]  # there: its phases with the system python3
#                                                     # (then DIR without checkpoints into OUT/)
#   tools/gpu_check.sh --import DIR                   # here: judge what came back, one line per comparison
#   (--results DIR: the results folder of the run and of --export's wheel cache; default results/)
# The world size W is a power of two that divides the experiment's 16 experts: AutoEP size = W,
# and the global batch grows to 16 x W so each rank keeps at least one sample per micro-batch.
# Needs Node/npm (Deno comes from npm) and, for a real run, PyPI for the CUDA build of the pinned
# torch==2.13.0 (adapters/deepspeed/requirements.txt; setup_deepspeed.sh refuses any other pin).
# The online path has not run on a GPU; the offline one has, on an H200 through tools/gpu_h200.sh
# (docs/deepspeed.md, "Measured on an H200").
set -euo pipefail
help_lines='2,19p'

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
experiment=experiments/deepspeed/gpu_autoep_seed.yaml
dry=0 world="" mode="" bundle="" results="$root/results" copy=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --world-size) world="${2:-}"; shift ;;
    --results) results="$(realpath -m "${2:-results}")"; shift ;;
    --copy-to) copy=(--copy-to "${2:-}"); shift ;;
    --export | --offline | --import)
      mode="${1#--}" bundle="${2:-}"; shift
      [[ -n $bundle ]] || { echo "gpu_check: --$mode needs a bundle folder" >&2; exit 2; } ;;
    -h | --help) sed -n "$help_lines" "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown option $1 (--dry-run, --world-size N, --export/--offline/--import DIR)" >&2
      exit 2 ;;
  esac
  shift
done

# One line per comparison of a run's summary.json.
print_comparisons() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["comparisons"]:
    step = c.get("first_divergent_step")
    print(f"gpu_check: {c['name']}: {c['verdict']} ({c['lane']})" + (f", first divergent step {step}" if step else ""))
PY
}

if [[ $mode == offline ]]; then
  # No Deno, no DeepSpeed, no network here: the bundle carries the plan and the wheels.
  if command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true) GPU(s) seen"
  fi
  exec python3 tools/offline_phases.py "$bundle" --python "$(python3 -c 'import sys; print(sys.executable)')" \
    "${copy[@]}"
fi
if [[ $mode == import ]]; then
  [[ -f $bundle/bundle.json ]] || { echo "gpu_check: $bundle/bundle.json: no such file" >&2; exit 2; }
  # The same --set overrides as the export, so every phase's cache key matches.
  mapfile -t sets < <(python3 -c 'import json,sys
for s in json.load(open(sys.argv[1]))["sets"]: print("--set"); print(s)' "$bundle/bundle.json")
  set +e
  npx -y deno@2.9.6 run -A src/cli/main.ts run "$experiment" "${sets[@]}" --import "$bundle" \
    --results "$results"
  code=$?
  set -e
  summary="$results/deepspeed-gpu-autoep-seed/latest/summary.json"
  [[ -f $summary ]] && print_comparisons "$summary"
  exit $code
fi

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [[ -z "$world" ]]; then
  world=1
  for w in 2 4 8 16; do [[ $w -le $gpus ]] && world=$w; done
fi
case "$world" in 1 | 2 | 4 | 8 | 16) ;; *)
  echo "gpu_check: --world-size must be 1, 2, 4, 8 or 16 (a divisor of the 16 experts), got $world" >&2
  exit 2 ;;
esac
batch=$((world > 4 ? 16 * world : 64))
sets=(--set "trainer.args.world_size=$world" --set "trainer.args.autoep_size=$world"
  --set "trainer.args.global_batch=$batch")
deno=(npx -y deno@2.9.6)
echo "gpu_check: $gpus GPU(s) seen; world size $world, autoep_size $world, global batch $batch"

if [[ $dry == 1 ]]; then
  exec "${deno[@]}" run -A src/cli/main.ts plan "$experiment" "${sets[@]}"
fi
if [[ $mode == export ]]; then
  # DeepSpeed and the dependencies the box may lack, as wheels at the venv's versions (no ops
  # built: DS_BUILD_OPS=0; CPU Adam is compiled on first use there, by torch's JIT).
  venv_python="$root/.venv-deepspeed/bin/python"
  [[ -x $venv_python ]] || { echo "gpu_check: ERROR: no .venv-deepspeed (deno task setup-deepspeed)" >&2; exit 3; }
  wheels="$results/.offline-wheels"
  mkdir -p "$wheels"
  mapfile -t pins < <("$venv_python" -c 'import importlib.metadata as m
for d in ["deepspeed", "hjson", "py-cpuinfo", "einops", "msgpack", "ninja", "pydantic", "pydantic-core", "annotated-types", "typing-inspection"]:
    print(f"{d}=={m.version(d)}")')
  DS_BUILD_OPS=0 "$venv_python" -m pip wheel --no-deps --no-build-isolation --quiet -w "$wheels" "${pins[@]}"
  # The parity_hooks package the training script imports (parity_hooks.deepspeed), built from ./hooks
  # in a temporary copy (an in-tree build would leave build/ and *.egg-info in hooks/).
  rm -f "$wheels"/parity_hooks-*.whl
  hooks_src="$(mktemp -d)"
  cp -r "$root/hooks/pyproject.toml" "$root/hooks/README.md" "$root/hooks/parity_hooks" "$hooks_src/"
  "$venv_python" -m pip wheel --no-deps --quiet -w "$wheels" "$hooks_src"
  rm -rf "$hooks_src"
  hooks_wheel=$(ls "$wheels"/parity_hooks-*-py3-none-any.whl 2>/dev/null | head -1)
  [[ -n $hooks_wheel ]] || { echo "gpu_check: ERROR: no parity_hooks wheel built from ./hooks" >&2; exit 3; }
  wheel_args=(--wheel "$hooks_wheel")
  for pin in "${pins[@]}"; do
    name="${pin%%==*}" version="${pin##*==}"
    file=$(ls "$wheels"/"${name//-/_}"-"$version"-*.whl 2>/dev/null | head -1)
    [[ -n $file ]] || { echo "gpu_check: ERROR: no wheel of $pin in $wheels" >&2; exit 3; }
    wheel_args+=(--wheel "$file")
  done
  "${deno[@]}" run -A src/cli/main.ts plan "$experiment" "${sets[@]}" --bundle "$bundle" "${wheel_args[@]}"
  echo "gpu_check: bundle $bundle: $(du -sh "$bundle" | cut -f1); there: tools/gpu_check.sh --offline $bundle"
  exit 0
fi
if [[ $gpus -lt $world ]]; then
  echo "gpu_check: ERROR: world size $world needs $world NVIDIA GPUs, nvidia-smi lists $gpus" >&2
  exit 3
fi
bash tools/setup_deepspeed.sh --cuda
set +e
"${deno[@]}" run -A src/cli/main.ts run "$experiment" "${sets[@]}" --results "$results"
code=$?
set -e
summary="$results/deepspeed-gpu-autoep-seed/latest/summary.json"
[[ -f "$summary" ]] && print_comparisons "$summary"
exit $code
