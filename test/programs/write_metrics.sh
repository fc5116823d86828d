#!/usr/bin/env bash
# Usage: write_metrics.sh PATH FIRST LAST — appends one JSONL step record per step to PATH, each
# written in two halves with a pause between them, so readers see partial lines.
path="$1"
for ((step = $2; step <= $3; step++)); do
  printf '{"step": %d, ' "$step" >>"$path"
  sleep 0.03
  printf '"loss": 2.5, "lr": 0.001}\n' >>"$path"
  echo "step $step"
done
printf '{"event": "saved", "step": %d, "digests": {}}\n' "$3" >>"$path"
