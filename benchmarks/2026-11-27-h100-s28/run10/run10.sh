#!/usr/bin/env bash
# Session 28, run10: the general twins finish rows whose weight and bias lie
# on their chunks' grid on a chunk that says so (rj_chunk V; redjit-v) against
# e9f942b (redjit); 16-bit _p_g and o2_g twins at 4x1000003 and 4x1000008,
# _p at 4x1000008; two rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run10/run10.sh "$OUT/" 2>/dev/null
LIST=""
for k in layernorm_res_bf16_bf16 rmsnorm_bf16_bf16 layernorm_bf16_bf16 rmsnorm_res_bf16_bf16; do
  for S in 4x1000003 4x1000008; do
    LIST="$LIST $S@norm_${k}_s512x8_p_g $S@norm_${k}_s512x4_o2_g"
  done
  LIST="$LIST 4x1000008@norm_${k}_s512x8_p@redjit"
done
LIST="$LIST" BINS="redjit redjit-v" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k4,4 -k2,2 | awk '{print $1,$2,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
