#!/usr/bin/env bash
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:loop_rows_small gpu_norm:cluster_rows_small gpu_norm:the_ladders_loop_rows gpu_norm:loop_rows_of_every_op" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED"
