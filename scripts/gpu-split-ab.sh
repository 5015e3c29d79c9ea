#!/usr/bin/env bash
# One device call (2026-11-25): the split layout with statistics apart from output.
# The norm GPU tests that run split kernels, as concurrent processes, then the
# split rows benched with this binary and, alternating in the same call, with
# stage/bin/redjit-prev (the previous split layout) when it is there.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
export TEST_PARALLEL=1 TEST_TIMEOUT=${TEST_TIMEOUT:-300} OUT="$W"
GPU_TESTS="${GPU_TESTS:-gpu_norm:split_rows_longer gpu_norm:every_layout gpu_norm:the_issue_shapes gpu_norm:softmax_special gpu_norm:every_op}" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee "$W/tests.txt"
tests_rc=${PIPESTATUS[0]}
shapes=${NORM_SHAPES:-64x1048576,4x1000003}
echo "== every split layout and bound (this binary)"
stage/bin/redjit bench norm --shapes "$shapes" --variants --bounds "${NORM_BOUNDS:-1,2,4}" \
  --json "$W/norm-variants.json" >"$W/norm-variants.log" 2>&1 || echo "variants failed"
for round in 1 2; do
  for bin in redjit redjit-prev; do
    [ -x "stage/bin/$bin" ] || continue
    echo "== $bin round $round"
    "stage/bin/$bin" bench norm --shapes "$shapes" --json "$W/norm-$bin-$round.json" 2>&1 | grep -E '^norm_|d2d' | tee -a "$W/bench.txt"
  done
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/split.tgz" .
exit "$tests_rc"
