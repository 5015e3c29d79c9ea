#!/usr/bin/env bash
# Call 12: RMS norm's one-pass 8-pack twin at 2 blocks an SM (s512x8_o2_g: 64
# registers, one wave at 4x1000003) against the two-pass default s512x4_o2_g,
# each kernel alone, two rounds.
set -uo pipefail
L=""
for s in 4x1000003 64x1048573; do
  for d in bf16 f16 f32; do
    for k in s512x4_o2_g s512x8_o2_g; do L="$L $s@norm_rmsnorm_${d}_${d}_$k"; done
  done
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
