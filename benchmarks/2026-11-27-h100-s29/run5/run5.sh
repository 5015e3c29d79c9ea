#!/bin/bash
# run5: columns held in registers in place of shared memory (by name, _h<n>) against the staged
# defaults, each alone, 2 rounds; memcheck and racecheck on prefetching_split_cohorts_small; the
# 64x1048576 defaults beside PyTorch (eager, torch.compile, Triton).
cd "$(dirname "$0")/.."
R=64x1000000
LIST="$R@norm_layernorm_bf16_bf16_s512x8_p $R@norm_layernorm_bf16_bf16_s512x8_p_h8 \
$R@norm_layernorm_f16_f16_s512x8_p $R@norm_layernorm_f16_f16_s512x8_p_h8 \
$R@norm_layernorm_f32_f32_s512x4_p $R@norm_layernorm_f32_f32_s512x4_p_h4 \
$R@norm_rmsnorm_res_f32_f32_s512x4_p $R@norm_rmsnorm_res_f32_f32_s512x4_p_h4 \
256x262144@norm_layernorm_f32_f32_s512x4_p 256x262144@norm_layernorm_f32_f32_s512x4_p_h4 \
64x1048576@norm_layernorm_bf16_bf16_s512x8_p_x 64x1048576@norm_layernorm_bf16_bf16_s512x8_p_x_h8" \
ROUNDS=2 OUT=$OUT/ab bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run5-ab.log
NORM_TESTS= NORM_SANITIZE="gpu_norm:prefetching_split_cohorts_small" NORM_SANITIZE_TOOLS="memcheck racecheck" \
NORM_SHAPES=64x1048576 bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/run5-check.log
