#!/usr/bin/env bash
# Session 28, run6: the same 16-bit deferred kernels on rows on and off the
# pack grid: _p_g (general) at 4x1000003, 4x1000004 and 4x1000008, _p
# (whole packs) at 4x1000004 and 4x1000008; bf16 layer norm + residual, RMS
# norm, layer norm; two rounds, each kernel alone (e9f942b).
set -u
cp benchmarks/2026-11-27-h100-s28/run6/run6.sh "$OUT/" 2>/dev/null
LIST=""
for k in layernorm_res_bf16_bf16_s512x8 rmsnorm_bf16_bf16_s512x8 layernorm_bf16_bf16_s512x8; do
  for s in 4x1000003 4x1000004 4x1000008; do LIST="$LIST $s@norm_${k}_p_g"; done
  for s in 4x1000004 4x1000008; do LIST="$LIST $s@norm_${k}_p"; done
done
LIST="$LIST" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
sort -k3,3 -k4,4 "$OUT/ab.txt" | grep "^r[0-9]" | awk '{print $1,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
