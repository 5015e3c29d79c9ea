#!/usr/bin/env bash
set -uo pipefail
TEST_PARALLEL=1 TEST_TIMEOUT=500 GPU_TESTS="gpu_norm:cluster_rows_of_every_op gpu_norm:loop_rows_of_every_op gpu_norm:the_issue_shapes" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED" | head -20
LIST=$(cat stage/list11) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab11.txt 2>&1
grep -E "^r[12] " $OUT/ab11.txt
