#!/usr/bin/env bash
# Usage: ignore_term.sh MARKER — ignores SIGTERM (as do the children it starts, since an ignored
# disposition is inherited), says "ready" and keeps running for a minute.
marker="$1"
trap '' TERM
(exec -a "$marker-stubborn-grandchild" sleep 60) &
echo "ready"
for ((i = 0; i < 600; i++)); do sleep 0.1; done # bounded, in case its supervisor is killed
