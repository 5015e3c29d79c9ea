#!/usr/bin/env bash
# Call 2: where the raw rows' weight (and bias) loads go. redjit: run1's (RMS
# norms all 4 pairs of the weight before the reduction; layer norm 2 pairs ahead,
# after it); redjit-r2: RMS norms 2 pairs ahead after the reduction, layer norm 3;
# redjit-r4: both all 4 pairs after it (layer norm spills 16-60 bytes). Each kernel
# alone, two rounds; then Nsight Compute on redjit's bf16 layer norm, RMS norm and
# layer norm + residual twins at 4x1000003.
set -uo pipefail
L=""
for s in 4x1000003; do
  for d in bf16 f16; do
    for k in layernorm rmsnorm rmsnorm_res; do
      L="$L $s@norm_${k}_${d}_${d}_s512x8_o2_g"
    done
  done
  L="$L $s@norm_layernorm_res_bf16_bf16_s512x8_o2_g"
done
for k in layernorm rmsnorm rmsnorm_res; do
  L="$L 64x1048573@norm_${k}_bf16_bf16_s512x8_o2_g"
done
LIST="$L" BINS="redjit redjit-r2 redjit-r4" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
PAIRS="norm_layernorm_bf16_bf16_s512x8_o2_g@4x1000003 norm_rmsnorm_bf16_bf16_s512x8_o2_g@4x1000003 norm_layernorm_res_bf16_bf16_s512x8_o2_g@4x1000003" bash stage/scripts/gpu-norm-ncu.sh
