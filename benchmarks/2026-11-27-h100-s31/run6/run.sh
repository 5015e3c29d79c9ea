#!/usr/bin/env bash
# Call 6: bf16 RMS norm's layouts at 4x1000003 on the final build (two-pass
# twins of 4 packs take their tickets ahead; 8-pack twins are one-pass), each
# kernel alone, two rounds.
set -uo pipefail
L=""
for k in s512x4_o2_g s512x4_g s256x4_o4_g s256x4_o3_g s256x4_g s512x8_g s256x8_o3_g s256x8_o2_g; do
  L="$L 4x1000003@norm_rmsnorm_bf16_bf16_$k"
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
