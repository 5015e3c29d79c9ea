#!/usr/bin/env bash
# Call 2: split rows' one pass (flagged states, session 30) against the two-pass
# general twins of RMS norm (redjit-p1) and layer norm (redjit-p2: both one pass),
# each kernel alone, two rounds.
set -uo pipefail
R="4x1000003 64x1048573"
L=""
for s in $R; do
  for d in bf16 f16 f32; do L="$L $s@norm_rmsnorm_${d}_${d}_s512x4_o2_g@redjit $s@norm_rmsnorm_${d}_${d}_s512x4_o2_g@redjit-p1"; done
  for d in bf16 f16; do L="$L $s@norm_layernorm_${d}_${d}_s512x4_o2_g@redjit $s@norm_layernorm_${d}_${d}_s512x4_o2_g@redjit-p2"; done
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
