#!/usr/bin/env bash
# Two run folders' metrics.jsonl, timing lines aside, compared line for line: prints that they are
# identical (and how many lines), or the first differences and exits 1.
#   usage: scripts/same_metrics.sh RUN_A RUN_B LABEL
set -euo pipefail
a=$1 b=$2 label=$3
ta=$(mktemp) tb=$(mktemp)
trap 'rm -f "$ta" "$tb"' EXIT
grep -v '"event":"timing"' "$a/metrics.jsonl" > "$ta"
grep -v '"event":"timing"' "$b/metrics.jsonl" > "$tb"
if cmp -s "$ta" "$tb"; then
  echo "$label: two GPU runs give identical metrics.jsonl ($(wc -l < "$ta") lines)"
else
  echo "$label: the two GPU runs differ:"; diff "$ta" "$tb" | head -20; exit 1
fi
