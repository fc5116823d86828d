#!/usr/bin/env bash
# Usage: handshake_lines.sh STDOUT_LOG STDERR_LOG COUNT — prints "out <i>" on stdout, waits until
# the supervisor has written it to STDOUT_LOG, then "err <i>" on stderr and waits for STDERR_LOG.
# So the lines reach the supervisor in a known order, and it exits 3 if a line is not flushed to
# its log within 5 s while the child is still running.
out_log="$1"
err_log="$2"
count="$3"

await_line() { # FILE LINE
  for ((tries = 0; tries < 500; tries++)); do
    grep -qx -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.01
  done
  echo "not flushed: $2" >&2
  exit 3
}

for ((i = 1; i <= count; i++)); do
  echo "out $i"
  await_line "$out_log" "out $i"
  echo "err $i" >&2
  await_line "$err_log" "err $i"
done
