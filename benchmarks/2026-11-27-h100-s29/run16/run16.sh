#!/bin/bash
# run16: f32 layer norm + residual's exact deferred kernel with f64 sums (the rule): gpu_norm tests
# over the split kernels and the issue's shapes, memcheck and racecheck on the cohorts test, and
# 64x1048576 beside PyTorch.
cd "$(dirname "$0")/.."
OUT=$OUT/tests TEST_TIMEOUT=400 TEST_PARALLEL=1 \
GPU_TESTS="gpu_norm:prefetching_split_cohorts gpu_norm:exact_split_cohorts_and_their_twins gpu_norm:split_rows_are_bit_identical gpu_norm:split_workspace_serves gpu_norm:the_issue_shapes gpu_norm:layer_norm_rows_of_larger_chunks" \
bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee $OUT/run16-tests.log
NORM_TESTS= NORM_SANITIZE="gpu_norm:prefetching_split_cohorts_small" NORM_SANITIZE_TOOLS="memcheck racecheck" \
NORM_SHAPES=64x1048576 bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/run16-check.log
