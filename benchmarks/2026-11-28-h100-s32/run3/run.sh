#!/usr/bin/env bash
# Call 3: redjit = the raw rows' columns 2 pairs ahead after the reduction (every
# raw op), and passes over a general chunk's elements without bound tests where
# all of a thread's packs lie inside the row (rj_with_bounds: raw rows, the
# widened softmax exp-sum and layer norm's squares about the mean); against
# HEAD 0929308 (redjit-base), run1's build (redjit-s1: layer norm's 2 pairs ahead,
# with bound tests) and run2's redjit-r2 (the RMS norms' 2 pairs ahead, with bound
# tests). GPU tests on redjit's build (gpu_norm), then each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_rows_are_bit_identical gpu_norm:layer_norm_rows_off_zero gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths gpu_norm:softmax_special_values gpu_norm:the_issue_shapes" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
L=""
s=4x1000003
for d in bf16 f16; do
  for k in layernorm layernorm_res; do
    for b in redjit-base redjit-s1 redjit; do L="$L $s@norm_${k}_${d}_${d}_s512x8_o2_g@$b"; done
  done
  for k in rmsnorm rmsnorm_res; do
    for b in redjit-base redjit-r2 redjit; do L="$L $s@norm_${k}_${d}_${d}_s512x8_o2_g@$b"; done
  done
done
for k in norm_softmax_online_bf16_bf16_s512x8_g norm_logsoftmax_online_bf16_bf16_s512x8_g norm_softmax_online_f32_f32_s512x8_g norm_layernorm_f32_f32_s512x4_o2_g; do
  for b in redjit-base redjit; do L="$L $s@$k@$b"; done
done
s=64x1048573
for k in norm_layernorm_bf16_bf16_s512x8_o2_g norm_layernorm_res_bf16_bf16_s512x8_o2_g norm_rmsnorm_bf16_bf16_s512x8_o2_g norm_rmsnorm_res_bf16_bf16_s512x8_o2_g norm_softmax_online_bf16_bf16_s512x8_g; do
  for b in redjit-base redjit; do L="$L $s@$k@$b"; done
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
