#!/usr/bin/env bash
# Call 1 (session 33): the final build of session 32 (712dcb5): the two long
# gpu_norm tests cut off in session 32's run8, memcheck and racecheck on the raw
# softmax rows' tests, then PyTorch eager, torch.compile and Triton beside
# `redjit bench norm` at 4x1000003.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=420 GPU_TESTS="gpu_norm:the_issue_shapes gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -20
NORM_TESTS= NORM_SANITIZE="gpu_norm:split_softmax_twins_special_values" NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
