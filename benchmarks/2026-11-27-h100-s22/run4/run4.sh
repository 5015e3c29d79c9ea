#!/usr/bin/env bash
# Session 22 run4: 16-bit softmax's short staging twin at 3 blocks an SM
# (s256x8_o3_p_g, no spill with the balanced bound) against 4 (s256x8_p_g,
# 8 bytes spilled), balanced (redjit) and not (redjit-base = 722aea2).
set -uo pipefail
LIST=" 4096x50257@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit 4096x50257@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit-base 4096x50257@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit 4096x50257@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit-base 4096x65537@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit 4096x65537@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit-base 4096x65537@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit 4096x65537@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit-base 4096x40001@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit 4096x40001@norm_softmax_online_bf16_bf16_s256x8_o3_p_g@redjit-base 4096x40001@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit 4096x40001@norm_softmax_online_bf16_bf16_s256x8_p_g@redjit-base" ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
