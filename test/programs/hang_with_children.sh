#!/usr/bin/env bash
# Usage: hang_with_children.sh MARKER — starts two grandchildren whose argv[0] carries MARKER,
# says "ready" and waits for them forever.
marker="$1"
(exec -a "$marker-grandchild-1" sleep 60) &
(exec -a "$marker-grandchild-2" sleep 60) &
echo "ready"
wait
