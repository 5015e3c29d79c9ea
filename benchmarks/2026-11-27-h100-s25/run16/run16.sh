#!/usr/bin/env bash
set -uo pipefail
TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:the_ladders_loop_rows gpu_norm:the_ladders_cluster_rows gpu_norm:cluster_rows_of_every_op gpu_norm:cluster_rows_small gpu_norm:loop_rows_of_every_op gpu_norm:mixed_rows_of_vocabulary_length gpu_norm:bad_calls_are_errors_not_launches" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED" | head -30
SANITIZE="gpu_norm:cluster_rows_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 \
  bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
