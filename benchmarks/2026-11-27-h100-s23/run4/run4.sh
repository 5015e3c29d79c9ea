#!/usr/bin/env bash
# Session 23 run4 (a67c549): Nsight Compute on the layer norms that trail their
# RMS norm twins: 16-bit and f32 layer norm's short staging twin at 4096x50256,
# f32 layer norm and RMS norm's deferred kernels at 64x1048576; stall samples
# an instruction (SOURCE=1).
set -uo pipefail
PAIRS="norm_layernorm_bf16_bf16_s256x8_o2_p_g@4096x50256 norm_layernorm_f32_f32_s256x8_o2_p_g@4096x50256 norm_rmsnorm_bf16_bf16_s512x4_p_g@4096x50256 norm_layernorm_f32_f32_s512x4_p@64x1048576 norm_rmsnorm_f32_f32_s512x8_p@64x1048576" \
  SOURCE=1 OUT="$OUT" bash stage/scripts/gpu-norm-ncu.sh
