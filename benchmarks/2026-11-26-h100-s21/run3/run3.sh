#!/usr/bin/env bash
# run3: the launcher's twin choice (general_twin_for): tests, then the defaults
# beside PyTorch at rows off the grid, then the two twins at a vocabulary's row.
set -uo pipefail
mkdir -p "$OUT/t"
OUT="$OUT/t" TEST_TIMEOUT=200 GPU_TESTS="gpu_norm:deferred_general_twins gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED|failed" | head -20
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=64x1048573,4096x50257,4x1000003 bash scripts/gpu-norm-check.sh
tar -xzOf "$OUT/norm-check.tgz" ./bench-norm.log | grep -E "^norm_|d2d" | head -60
SHARED=1 ROUNDS=2 LIST="$(cat stage/ab-list3.txt)" OUT="$OUT/ab" bash scripts/gpu-norm-ab.sh
