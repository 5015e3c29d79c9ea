#!/usr/bin/env bash
set -uo pipefail
TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:loop_rows_of_every_op gpu_norm:the_ladders_loop_rows gpu_norm:layer_norm_rows_off_zero" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED" | head -20
SANITIZE="gpu_norm:loop_rows_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 \
  bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
LIST=$(cat stage/list13) BINS="redjit-0 redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab13.txt 2>&1
grep -E "^r[12] " $OUT/ab13.txt
