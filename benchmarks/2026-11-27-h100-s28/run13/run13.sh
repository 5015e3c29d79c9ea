#!/usr/bin/env bash
# Session 28, run13: 16-bit RMS norm rows off the pack grid at few rows: the
# staging twin of 4 packs (s512x4_p_g) against the direct twin the launcher
# takes (s512x4_o2_g), bf16 and f16, 1-8 rows of 1000003 and 4 rows of 500003
# and 700001; two rounds, each kernel alone (c00a2c6).
set -u
cp benchmarks/2026-11-27-h100-s28/run13/run13.sh "$OUT/" 2>/dev/null
LIST=""
for d in bf16 f16; do
  for S in 1x1000003 2x1000003 4x1000003 8x1000003 4x500003 4x700001; do
    LIST="$LIST $S@norm_rmsnorm_${d}_${d}_s512x4_o2_g $S@norm_rmsnorm_${d}_${d}_s512x4_p_g"
  done
done
LIST="$LIST" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k4,4 -k2,2 | awk '{print $1,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
