#!/usr/bin/env bash
# Usage: escape_group.sh MARKER — starts a MARKER-tagged process in a new session (outside the
# supervised process group) that keeps stdout open, then exits.
marker="$1"
setsid bash -c 'exec -a "$0" sleep 30' "$marker-escaped" &
sleep 0.3 # let it leave the group before the leader exits (and the group is killed)
echo "leader done"
