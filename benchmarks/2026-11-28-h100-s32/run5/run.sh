#!/usr/bin/env bash
# Call 5: raw layer norm's statistics in one pass (each thread's sums of x - x0
# and its squares, x0 its first element; redjit-v1), and that with each raw
# row's columns loaded without a test a pack where all of a thread's are shifted
# or on the vectors' grid (redjit-v2), against the committed 4210da4 (redjit).
# Six gpu_norm tests on redjit-v2's build, then each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_rows_are_bit_identical gpu_norm:layer_norm_rows_off_zero" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
L=""
s=4x1000003
for k in norm_layernorm_bf16_bf16_s512x8_o2_g norm_layernorm_res_bf16_bf16_s512x8_o2_g norm_layernorm_f16_f16_s512x8_o2_g; do
  for b in redjit redjit-v1 redjit-v2; do L="$L $s@$k@$b"; done
done
for k in norm_rmsnorm_bf16_bf16_s512x8_o2_g norm_rmsnorm_res_bf16_bf16_s512x8_o2_g; do
  for b in redjit redjit-v2; do L="$L $s@$k@$b"; done
done
s=64x1048573
for k in norm_layernorm_bf16_bf16_s512x8_o2_g norm_layernorm_res_bf16_bf16_s512x8_o2_g; do
  for b in redjit redjit-v1 redjit-v2; do L="$L $s@$k@$b"; done
done
for k in norm_rmsnorm_res_bf16_bf16_s512x8_o2_g; do
  for b in redjit redjit-v2; do L="$L $s@$k@$b"; done
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
