#!/bin/bash
# run6: the kernels the f32 layer norm rule newly holds (in place of staging), default against
# _h0, each alone, 2 rounds; gpu_norm tests over the held kernels and the issue's shapes.
cd "$(dirname "$0")/.."
LIST="64x1000000@norm_layernorm_f32_f32_s512x4_p 64x1000000@norm_layernorm_f32_f32_s512x4_p_h0 \
256x262144@norm_layernorm_f32_f32_s512x4_p 256x262144@norm_layernorm_f32_f32_s512x4_p_h0 \
4096x40000@norm_layernorm_f32_f32_s512x4_p 4096x40000@norm_layernorm_f32_f32_s512x4_p_h0 \
4096x40000@norm_rmsnorm_f32_f32_s512x8_p 4096x40000@norm_rmsnorm_f32_f32_s512x8_p_h0 \
64x1000000@norm_layernorm_f32_bf16_s512x4_p 64x1000000@norm_layernorm_f32_bf16_s512x4_p_h0 \
64x1048576@norm_layernorm_f32_bf16_s512x4_p 64x1048576@norm_layernorm_f32_bf16_s512x4_p_h0" \
ROUNDS=2 OUT=$OUT/ab bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run6-ab.log
OUT=$OUT/tests TEST_TIMEOUT=420 TEST_PARALLEL=1 \
GPU_TESTS="gpu_norm:prefetching_split_cohorts_small gpu_norm:layer_norm_rows_of_larger_chunks gpu_norm:the_issue_shapes gpu_norm:split_twins_of_every_dtype_pair gpu_norm:exact_split_cohorts_and_their_twins" \
bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee $OUT/run6-tests.log
