#!/usr/bin/env bash
# Session 28, run4: Nsight Compute, the same deferred kernel general (_p_g, rows
# off the grid at 4x1000003) and whole-pack (_p, 4x1000008): bf16 layer norm +
# residual and RMS norm, with source counters (SOURCE=1).
set -u
cp benchmarks/2026-11-27-h100-s28/run4/run4.sh "$OUT/" 2>/dev/null
SOURCE=1 PAIRS="norm_layernorm_res_bf16_bf16_s512x8_p_g@4x1000003 norm_layernorm_res_bf16_bf16_s512x8_p@4x1000008 norm_rmsnorm_bf16_bf16_s512x8_p_g@4x1000003 norm_rmsnorm_bf16_bf16_s512x8_p@4x1000008" \
  bash stage/scripts/gpu-norm-ncu.sh
