#!/usr/bin/env bash
# Call 8: 16-bit softmax and log-softmax split general twins held as raw words
# (raw_rows for every op; each output's exponential made from the row's state)
# in 16-byte pairs, and the raw outputs' loop as one helper (rj_raw_out_each;
# layer norm's SASS moved), redjit-sm, against 4210da4 (redjit). Each kernel
# alone, two rounds; then gpu_norm tests on redjit-sm's build.
set -uo pipefail
L=""
for d in bf16 f16; do
  for k in softmax_online logsoftmax_online; do L="$L 4x1000003@norm_${k}_${d}_${d}_s512x8_g"; done
  L="$L 4x1000003@norm_layernorm_${d}_${d}_s512x8_o2_g"
done
L="$L 4x1000003@norm_layernorm_res_bf16_bf16_s512x8_o2_g 64x1048573@norm_softmax_online_bf16_bf16_s512x8_g 64x1048573@norm_logsoftmax_online_bf16_bf16_s512x8_g"
LIST="$L" BINS="redjit redjit-sm" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=420 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_softmax_twins_special_values gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_rows_are_bit_identical gpu_norm:the_issue_shapes gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
