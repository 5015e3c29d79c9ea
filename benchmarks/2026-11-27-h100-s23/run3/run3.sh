#!/usr/bin/env bash
# Session 23 run3 (16-bit RMS norm's b512x8_x at 2 blocks an SM for rows of
# 16384): the ladder's tests, a probe of 16-bit layer norm's general twin on
# rows on and off the pack grid, then issue 11's shapes beside PyTorch.
set -uo pipefail
L=""
for c in 50256 50257; do
  for k in norm_layernorm_bf16_bf16_s256x8_o2_p_g norm_rmsnorm_bf16_bf16_s512x4_p_g norm_layernorm_res_bf16_bf16_s512x4_p_g norm_layernorm_f32_f32_s256x8_o2_p_g; do
    L="$L 4096x$c@$k"
  done
done
LIST="$L" SHARED=1 ROUNDS=2 OUT="$OUT" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
NORM_TESTS="gpu_norm:exact_kernels_and_their_ragged_twins gpu_norm:the_issue_shapes" NORM_SANITIZE= OUT="$OUT" \
  bash stage/scripts/gpu-norm-check.sh 2>&1 | grep -E "rc=|test result|panicked"
