#!/usr/bin/env bash
# s25 run1: block reducer with one barrier (A/B), widening softmax layouts, tests.
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:block_rows_reduce_in_turn gpu_norm:mixed_rows_of_vocabulary_length gpu_norm:the_issue_shapes gpu_norm:layer_norm_rows_off_zero gpu_norm:prefetching_blocks_take_many_rows_each gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED"
SANITIZE="gpu_norm:block_rows_reduce_in_turn" SANITIZE_TOOLS="racecheck memcheck" SANITIZE_TIMEOUT=200 \
  bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR|hazard"
LIST=$(cat stage/list1) BINS="redjit-old redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name"
