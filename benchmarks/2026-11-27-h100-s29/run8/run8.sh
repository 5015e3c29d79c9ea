#!/bin/bash
# run8: Nsight Compute on f32 layer norm + residual s512x4_p_x (held) against f32 RMS norm + residual
# s512x4_p and f32 layer norm s512x8_p_x (held) at 64x1048576.
cd "$(dirname "$0")/.."
PAIRS="norm_layernorm_res_f32_f32_s512x4_p_x@64x1048576 norm_rmsnorm_res_f32_f32_s512x4_p_x@64x1048576 norm_layernorm_f32_f32_s512x8_p_x@64x1048576" \
SOURCE=1 bash stage/scripts/gpu-norm-ncu.sh 2>&1 | tee $OUT/run8.log
