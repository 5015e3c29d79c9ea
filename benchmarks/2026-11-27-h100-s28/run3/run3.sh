#!/usr/bin/env bash
# Session 28, run3: 16-bit weights and biases picked from their own pack grid
# (rj_col_grid) in the split general twins. Tests (the new
# split_twins_with_vectors_off_the_rows_grid, the off-grid split tests),
# memcheck on the new one; then the 16-bit defaults and staging
# twins at 4x1000003, this build (redjit) against 467e4b9 (redjit-old), two
# rounds, each kernel alone; then every default at 4x1000003 beside PyTorch.
set -u
cp benchmarks/2026-11-27-h100-s28/run3/run3.sh "$OUT/" 2>/dev/null
NORM_TESTS="gpu_norm:split_twins_with_vectors_off_the_rows_grid gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair" \
NORM_SANITIZE="gpu_norm:split_twins_with_vectors_off_the_rows_grid" NORM_SANITIZE_TOOLS=memcheck NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
S=4x1000003
LIST="$S@norm_layernorm_bf16_bf16_s512x4_o2_g $S@norm_layernorm_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_bf16_bf16_s512x4_p_g
$S@norm_layernorm_res_bf16_bf16_s512x4_o2_g $S@norm_layernorm_res_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_res_bf16_bf16_s512x8_p_g
$S@norm_layernorm_f16_f16_s512x4_o2_g $S@norm_layernorm_f16_f16_s512x8_p_g" \
BINS="redjit-old redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
