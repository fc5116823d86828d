#!/usr/bin/env bash
# Usage: echo_lines.sh COUNT — prints "out <i>" on stdout and "err <i>" on stderr, alternately,
# pausing briefly between lines.
count="$1"
for ((i = 1; i <= count; i++)); do
  echo "out $i"
  sleep 0.01
  echo "err $i" >&2
  sleep 0.01
done
