#!/usr/bin/env bash
# Session 28, run9: speed probes (not kept): redjit-lean3 is redjit-lean2
# (run8) with the weight and bias grid a constant {true, 0}, as a whole-pack
# kernel's; at 4x1000008 its results are right for RMS norm; two rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run9/run9.sh "$OUT/" 2>/dev/null
S=4x1000008
LIST=""
for k in layernorm_res_bf16_bf16_s512x8 rmsnorm_bf16_bf16_s512x8; do
  for b in redjit redjit-lean2 redjit-lean3; do LIST="$LIST $S@norm_${k}_p_g@$b"; done
  for b in redjit; do LIST="$LIST $S@norm_${k}_p@$b"; done
done
LIST="$LIST" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k2,2 | awk '{print $1,$2,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
