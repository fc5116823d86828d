#!/usr/bin/env bash
# The seed experiment on this machine's NVIDIA GPUs, one command:
#   tools/gpu_check.sh            # set up (CUDA torch), run experiments/deepspeed/gpu_autoep_seed.yaml
#                                 # at the largest world size the GPUs allow, one line per comparison
#   tools/gpu_check.sh --dry-run  # no GPU needed: `parity plan` of that experiment at that world size
#   tools/gpu_check.sh --world-size N [--dry-run]   # choose the world size (1, 2, 4, 8 or 16)
# The world size W is a power of two that divides the experiment's 16 experts: AutoEP size = W,
# and the global batch grows to 16 x W so each rank keeps at least one sample per micro-batch.
# Needs Node/npm (Deno comes from npm) and, for a real run, PyPI for the CUDA build of the pinned
# torch==2.13.0 (adapters/deepspeed/requirements.txt; setup_deepspeed.sh refuses any other pin).
# NOT RUN ON A GPU YET: docs/deepspeed.md, "On a GPU node", says what is known and what is not.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
experiment=experiments/deepspeed/gpu_autoep_seed.yaml
dry=0 world=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --world-size) world="${2:-}"; shift ;;
    -h | --help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown option $1 (--dry-run, --world-size N)" >&2; exit 2 ;;
  esac
  shift
done

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
if [[ $gpus -lt $world ]]; then
  echo "gpu_check: ERROR: world size $world needs $world NVIDIA GPUs, nvidia-smi lists $gpus" >&2
  exit 3
fi
bash tools/setup_deepspeed.sh --cuda
results="$root/results"
set +e
"${deno[@]}" run -A src/cli/main.ts run "$experiment" "${sets[@]}" --results "$results"
code=$?
set -e
summary="$results/deepspeed-gpu-autoep-seed/latest/summary.json"
if [[ -f "$summary" ]]; then
  python3 - "$summary" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["comparisons"]:
    step = c.get("first_divergent_step")
    print(f"gpu_check: {c['name']}: {c['verdict']} ({c['lane']})" + (f", first divergent step {step}" if step else ""))
PY
fi
exit $code
