#!/usr/bin/env bash
# One device call (2026-11-25): the split layout's default kernels at long rows,
# from several builds alternating in one call (stage/bin/redjit and any
# stage/bin/redjit-* beside it), two rounds. Results in $OUT/split-ab.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
shapes=${NORM_SHAPES:-64x1048576,4x1000003}
for round in 1 2; do
  for b in stage/bin/redjit stage/bin/redjit-*; do
    case "$b" in *collectives) continue ;; esac
    bin=$(basename "$b")
    echo "== $bin round $round"
    "$b" bench norm --shapes "$shapes" --json "$W/norm-$bin-$round.json" 2>&1 | grep -E '^norm_|d2d' | tee -a "$W/bench-$bin.txt" | awk '{print $1, $2, $NF}' | paste -sd' ' | cut -c1-600
  done
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/split-ab.tgz" .
