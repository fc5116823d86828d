#!/usr/bin/env bash
# Usage: report_pid_and_hang.sh MARKER — prints "pid <pid>" and keeps a MARKER-tagged grandchild
# running; used to kill -9 the leader mid-run.
marker="$1"
(exec -a "$marker-orphan-candidate" sleep 60) &
echo "pid $$"
sleep 60
