#!/usr/bin/env bash
# Session 23 run1 (4e64852): the layouts of issue 11's five short cells on the
# main shapes, one process a shape and round (SHARED=1), three rounds.
set -uo pipefail
L=""
for s in b256x16 b512x8 b512x8_x b512x8_o2_x b256x16_n b512x8_n; do L="$L 8192x16384@norm_rmsnorm_bf16_bf16_$s"; done
for s in b512x16_n b512x16 s512x8 s512x4_p; do L="$L 8192x32768@norm_layernorm_f32_f32_$s"; done
for op in layernorm rmsnorm softmax_safe; do
  for s in w8x4 w16x2 w32x1 w4x8; do L="$L 262144x128@norm_${op}_bf16_bf16_$s"; done
done
LIST="$L" SHARED=1 ROUNDS=3 OUT="$OUT" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
