#!/usr/bin/env bash
# Call 8: paired packs for the two-pass 16-bit norm twins too (redjit-pair2, a probe
# build) against HEAD (redjit: pairs for RMS norm + residual's one-pass twins only),
# each kernel alone, two rounds.
set -uo pipefail
L=""
for s in 4x1000003 64x1048573; do
  for d in bf16 f16; do
    for k in rmsnorm layernorm layernorm_res; do L="$L $s@norm_${k}_${d}_${d}_s512x4_o2_g"; done
  done
done
LIST="$L" BINS="redjit redjit-pair2" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
