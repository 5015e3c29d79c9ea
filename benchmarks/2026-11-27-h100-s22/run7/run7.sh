#!/usr/bin/env bash
# Session 22 run7 (72a3a45's kernels): the deferred kernels' balanced bound at
# the long rows against 722aea2 (redjit-base), then issue 11's shapes beside
# PyTorch (gpu-norm-check.sh's default shapes).
set -uo pipefail
LIST="64x1048576@norm_layernorm_f32_f32_s512x4_p 64x1048576@norm_rmsnorm_f32_f32_s512x8_p 64x1048576@norm_rmsnorm_res_f32_f32_s512x4_p 64x1048573@norm_softmax_online_bf16_bf16_s512x8_p_g 4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_bf16_bf16_s512x4_o2_g" \
  BINS="redjit redjit-base" ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
NORM_TESTS= NORM_SANITIZE= OUT="$OUT" bash scripts/gpu-norm-check.sh 2>&1 | grep -E "rc="
