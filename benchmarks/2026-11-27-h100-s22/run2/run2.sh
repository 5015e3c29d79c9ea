#!/usr/bin/env bash
# Session 22 run2 (H100): the balanced span's rounding (4, 32, 64, 128 elements)
# against the layout's chunks (redjit-base = 722aea2).
set -uo pipefail
LIST="4096x50257@norm_softmax_online_bf16_bf16_s256x8_p_g 4096x50257@norm_logsoftmax_online_bf16_bf16_s256x8_o3_p_g 4096x50257@norm_softmax_online_f32_f32_s256x8_p_g 4096x50256@norm_softmax_online_bf16_bf16_s256x8_p 4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_bf16_bf16_s512x4_o2_g 4x1000003@norm_layernorm_f32_f32_s512x4_o2_g" \
  BINS="redjit redjit-g32 redjit-g64 redjit-g128 redjit-base" ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
