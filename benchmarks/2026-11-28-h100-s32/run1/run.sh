#!/usr/bin/env bash
# Call 1: the raw rows' weight and bias asked for ahead (rj_raw_cols): RMS norm +
# residual and RMS norm (now raw too) hold the weight from before the reduction;
# layer norm's two pairs ahead after it (redjit, LN_D 2, LN_BEFORE 0) or before it
# (redjit-b1, LN_D 2, LN_BEFORE 1), against HEAD 0929308 (redjit-base). Short GPU
# tests on redjit's build first, then each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_rows_are_bit_identical gpu_norm:layer_norm_rows_off_zero" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|passed|failed|FAIL" | head -40
L=""
for s in 4x1000003; do
  for d in bf16 f16; do
    for k in layernorm layernorm_res; do
      L="$L $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit-base $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit-b1"
    done
    for k in rmsnorm rmsnorm_res; do
      L="$L $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit-base $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit"
    done
  done
done
s=64x1048573
for k in layernorm layernorm_res; do
  L="$L $s@norm_${k}_bf16_bf16_s512x8_o2_g@redjit-base $s@norm_${k}_bf16_bf16_s512x8_o2_g@redjit $s@norm_${k}_bf16_bf16_s512x8_o2_g@redjit-b1"
done
for k in rmsnorm rmsnorm_res; do
  L="$L $s@norm_${k}_bf16_bf16_s512x8_o2_g@redjit-base $s@norm_${k}_bf16_bf16_s512x8_o2_g@redjit"
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
