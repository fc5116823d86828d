#!/usr/bin/env bash
# Usage: fail.sh CODE LINES — prints LINES numbered lines on stderr (one on stdout first), exits CODE.
code="$1"
lines="$2"
echo "starting"
sleep 0.1 # stdout and stderr are separate pipes: keep their order unambiguous
for ((i = 1; i <= lines; i++)); do
  echo "stderr line $i" >&2
done
echo "fatal: giving up with code $code" >&2
exit "$code"
