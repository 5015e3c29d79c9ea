#!/usr/bin/env bash
# Session 22 run9: 16-bit layer norm + residual's short staging twin (s512x4,
# Chan's f32 state); tests, sanitizer, PyTorch at 4096 rows of vocabulary
# widths off the pack grid.
set -uo pipefail
mkdir -p "$OUT/t" "$OUT/s"
OUT="$OUT/t" TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:split_rows_in_balanced_chunks gpu_norm:deferred_general_twins_stage gpu_norm:the_launcher_picks gpu_norm:softmax_rows_of_vocabulary_lengths gpu_norm:layer_norm_rows_off_zero gpu_norm:split_twins_of_every_dtype_pair gpu_norm:every_op_and_dtype_pair_at_odd" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|left|right" | head -30
OUT="$OUT/s" SANITIZE="gpu_norm:deferred_general_twins_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY|hazard" | head
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4096x32771,4096x40001,4096x50257,4096x65537 OUT="$OUT" bash scripts/gpu-norm-check.sh 2>&1 | grep -E "rc="
