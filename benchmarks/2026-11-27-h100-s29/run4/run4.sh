#!/bin/bash
# run4: held columns (final code): A/B default against _h0 (the same kernel
# loading its columns each row), each kernel alone, 3 rounds; then GPU tests.
cd "$(dirname "$0")/.."
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x $S@norm_layernorm_f32_f32_s512x8_p_x_h0 \
$S@norm_layernorm_res_f32_f32_s512x4_p_x $S@norm_layernorm_res_f32_f32_s512x4_p_x_h0 \
$S@norm_layernorm_bf16_bf16_s512x16_p_x $S@norm_layernorm_bf16_bf16_s512x16_p_x_h0 \
$S@norm_layernorm_f16_f16_s512x16_p_x $S@norm_layernorm_f16_f16_s512x16_p_x_h0 \
$S@norm_rmsnorm_f32_f32_s512x8_p $S@norm_rmsnorm_f32_f32_s512x8_p_h0 \
4096x65536@norm_layernorm_f32_f32_s512x8_p_x 4096x65536@norm_layernorm_f32_f32_s512x8_p_x_h0" \
ROUNDS=3 OUT=$OUT/ab bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run4-ab.log
OUT=$OUT/tests TEST_TIMEOUT=400 TEST_PARALLEL=1 \
GPU_TESTS="gpu_norm:prefetching_split_cohorts gpu_norm:layer_norm_rows_of_larger_chunks gpu_norm:exact_split_cohorts_and_their_twins gpu_norm:split_rows_are_bit_identical gpu_norm:split_workspace_serves" \
bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee $OUT/run4-tests.log
