#!/usr/bin/env bash
# Call 6 (session 33): the final build (f7d7696, redjit) against session 32's
# (712dcb5, redjit-712) on the kernels this session changed, each alone, two
# rounds; gpu_norm tests on the final build; memcheck and racecheck on the
# paired twins' test; PyTorch eager, torch.compile and Triton beside `redjit
# bench norm` at 4x1000003.
set -uo pipefail
L=""
for k in layernorm_bf16_bf16_s512x8_o2_g layernorm_f16_f16_s512x8_o2_g layernorm_res_bf16_bf16_s512x8_o2_g layernorm_res_f16_f16_s512x8_o2_g; do L="$L 4x1000003@norm_$k"; done
L="$L 64x1048573@norm_layernorm_bf16_bf16_s512x8_o2_g 64x1048573@norm_layernorm_res_bf16_bf16_s512x8_o2_g"
LIST="$L" BINS="redjit-712 redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:split_rows_replayed_from_a_captured_graph gpu_norm:paired_split_twins gpu_norm:split_workspace_serves gpu_norm:the_issue_shapes gpu_norm:layer_norm_rows_off_zero gpu_norm:split_rows_are_bit_identical gpu_norm:split_twins_of_every_dtype_pair" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
NORM_TESTS= NORM_SANITIZE="gpu_norm:paired_split_twins_at_every_shift" NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
