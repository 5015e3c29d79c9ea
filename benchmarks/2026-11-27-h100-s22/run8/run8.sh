#!/usr/bin/env bash
# Session 22 run8: 16-bit layer norm's staging twins exchanging Chan's f32
# (n, mean, m2) (redjit-f32sums: f64_sums off for general twins) against the
# f64 sums (redjit, 72a3a45).
set -uo pipefail
LIST="4096x50257@norm_layernorm_bf16_bf16_s256x8_o2_p_g 4096x40001@norm_layernorm_bf16_bf16_s256x8_o2_p_g 4096x50257@norm_layernorm_res_bf16_bf16_s256x4_p_g 4096x50257@norm_layernorm_res_bf16_bf16_s512x4_p_g 4096x50257@norm_layernorm_res_bf16_bf16_s256x8_o2_p_g 4096x50257@norm_layernorm_res_bf16_bf16_s512x4_o2_g 64x1048573@norm_layernorm_bf16_bf16_s512x8_p_g 64x1048573@norm_layernorm_res_bf16_bf16_s512x8_p_g" \
  BINS="redjit redjit-f32sums" ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
