#!/usr/bin/env bash
# Session 22 run6: balanced chunks where they pay (NormSpec::balances), short
# staging twins for the norms, 16-bit softmax's short twin at 3 blocks an SM.
# Tests, sanitizer, then PyTorch and redjit at rows of vocabulary lengths.
set -uo pipefail
mkdir -p "$OUT/t" "$OUT/s"
OUT="$OUT/t" TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:split_rows_in_balanced_chunks gpu_norm:deferred_general_twins_stage gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair gpu_norm:prefetching_split_cohorts_take_many_rows gpu_norm:softmax_rows_of_vocabulary_lengths gpu_norm:the_launcher_picks gpu_norm:exact_split_cohorts gpu_norm:split_rows_are_bit_identical gpu_norm:split_workspace_serves gpu_norm:every_op_and_dtype_pair_at_odd gpu_norm:bad_calls gpu_norm:the_issue_shapes gpu_norm:every_layout_variant_on_strided_rows gpu_norm:layer_norm_rows_off_zero gpu_norm:softmax_special_values" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|left|right" | head -60
OUT="$OUT/s" SANITIZE="gpu_norm:deferred_general_twins_small gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY|hazard" | head
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4096x32771,4096x40001,4096x50256,4096x50257,4096x65537 OUT="$OUT" bash scripts/gpu-norm-check.sh 2>&1 | grep -E "rc="
