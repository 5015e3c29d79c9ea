#!/usr/bin/env bash
# Call 2 (session 33): one-pass split kernels of one wave launched cooperatively,
# an item a block from its index, no ticket before the first row load
# (redjit-co), against 712dcb5 (redjit). Each kernel alone, two rounds; then
# gpu_norm's split tests on redjit-co's build.
set -uo pipefail
L=""
for k in softmax_online_bf16_bf16_s512x8_g logsoftmax_online_bf16_bf16_s512x8_g rmsnorm_bf16_bf16_s512x8_o2_g layernorm_bf16_bf16_s512x8_o2_g rmsnorm_res_bf16_bf16_s512x8_o2_g softmax_online_f16_f16_s512x8_g softmax_online_f32_f32_s512x8_g rmsnorm_f32_f32_s512x8_o2_g rmsnorm_res_f32_f32_s512x4_o2_g; do L="$L 4x1000003@norm_$k"; done
L="$L 64x1048573@norm_softmax_online_bf16_bf16_s512x8_g 64x1048573@norm_rmsnorm_bf16_bf16_s512x8_o2_g 2x1000003@norm_softmax_online_bf16_bf16_s512x8_g"
LIST="$L" BINS="redjit redjit-co" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_softmax_twins_special_values gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:split_twins_of_every_dtype_pair" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
