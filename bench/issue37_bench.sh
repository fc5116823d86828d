#!/bin/sh
# Issue 37's side-by-side measurements (docs/PERFORMANCE.md, "Device pool and suite sharing"),
# each case timed as a whole process, A and B in turn, e.g. three pairs:
#   for i in 1 2 3; do /usr/bin/time -f '%e s pool' sh bench/issue37_bench.sh pool
#                      /usr/bin/time -f '%e s seq' sh bench/issue37_bench.sh seq; done
# Pairs: pool vs seq (a 2-core device pool vs one phase at a time), shared vs apart (a three-file
# suite sharing one baseline vs each file alone), fused vs seq (schedule.split: fused vs a
# separate split). Each run starts from an empty results folder under ${TMPDIR:-/tmp}/parity-issue37/.
set -e
cd "$(dirname "$0")/.."
deno=${DENO:-deno}
out=${TMPDIR:-/tmp}/parity-issue37/$1
rm -rf "$out"
run() { $deno run -A src/cli/main.ts run "$@" --quiet; }
case $1 in
seq) run bench/cpu_autoep_pool.yaml --results "$out" ;;
pool) run bench/cpu_autoep_pool.yaml --results "$out" --set 'devices={kind: cpu, ids: [0, 1]}' ;;
fused) run bench/cpu_autoep_pool.yaml --results "$out" --set schedule.split=fused ;;
shared) run bench/suite_shared/native.yaml bench/suite_shared/universal.yaml bench/suite_shared/both.yaml --results "$out" ;;
apart) for f in native universal both; do run "bench/suite_shared/$f.yaml" --results "$out/$f"; done ;;
*) echo "usage: issue37_bench.sh seq|pool|fused|shared|apart" >&2; exit 2 ;;
esac
