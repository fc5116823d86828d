#!/usr/bin/env bash
# A stand-in for GitHub's `gh` CLI in test/workflow_test.ts: appends its argv (one line, words
# separated by tabs) to $FAKE_GH_LOG and, for the comment listing, prints $FAKE_GH_COMMENT_ID
# (the id of the earlier comment carrying the marker; empty: there is none).
set -euo pipefail
(IFS=$'\t'; echo "$*") >>"$FAKE_GH_LOG"
if [[ "$*" == *"--paginate"* && -n "${FAKE_GH_COMMENT_ID:-}" ]]; then
  echo "$FAKE_GH_COMMENT_ID"
fi
exit 0
