#!/bin/sh
# Issue 37's side-by-side measurements (docs/PERFORMANCE.md, "Device pool and suite sharing"):
#   farm-bench -n 3 --warmup 0 --timeout 900 --vs "sh bench/issue37_bench.sh seq" -- sh bench/issue37_bench.sh pool
#   farm-bench -n 2 --warmup 0 --timeout 900 --vs "sh bench/issue37_bench.sh apart" -- sh bench/issue37_bench.sh shared
# Each run starts from an empty results folder under ${TMPDIR:-/tmp}/parity-issue37/.
set -e
cd "$(dirname "$0")/.."
deno=${DENO:-deno}
out=${TMPDIR:-/tmp}/parity-issue37/$1
rm -rf "$out"
run() { $deno run -A src/cli/main.ts run "$@" --quiet; }
case $1 in
seq) run bench/cpu_autoep_pool.yaml --results "$out" ;;
pool) run bench/cpu_autoep_pool.yaml --results "$out" --set 'devices={kind: cpu, ids: [0, 1]}' ;;
shared) run bench/suite_shared/native.yaml bench/suite_shared/universal.yaml bench/suite_shared/both.yaml --results "$out" ;;
apart) for f in native universal both; do run "bench/suite_shared/$f.yaml" --results "$out/$f"; done ;;
*) echo "usage: issue37_bench.sh seq|pool|shared|apart" >&2; exit 2 ;;
esac
