#!/usr/bin/env bash
# Call 7 (session 33): on the final build (f7d7696): f32 RMS norm's one-pass
# and two-pass twins at 4x1000003 (each alone, two rounds), then gpu_norm's
# every_op_and_dtype_pair_at_odd_row_lengths.
set -uo pipefail
LIST="4x1000003@norm_rmsnorm_f32_f32_s512x8_o2_g 4x1000003@norm_rmsnorm_f32_f32_s512x4_o2_g" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
OUT=$OUT/t TEST_TIMEOUT=330 GPU_TESTS="gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -20
