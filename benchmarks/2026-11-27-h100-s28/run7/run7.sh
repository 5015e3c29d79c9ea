#!/usr/bin/env bash
# Session 28, run7: a speed probe (its layer norm results are wrong): the
# general deferred kernels _p_g built without per-element tests (ok() true)
# and without the staging and store element paths (redjit-lean: 4968 / 4224 /
# 2640 SASS instructions against 9256 / 6432 / 4584) against the build
# (redjit) and the whole-pack _p, at 4x1000008 (every pack whole); two rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run7/run7.sh "$OUT/" 2>/dev/null
S=4x1000008
LIST=""
for k in layernorm_res_bf16_bf16_s512x8 rmsnorm_bf16_bf16_s512x8 layernorm_bf16_bf16_s512x8; do
  LIST="$LIST $S@norm_${k}_p_g@redjit $S@norm_${k}_p_g@redjit-lean $S@norm_${k}_p@redjit"
done
LIST="$LIST" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k2,2 | awk '{print $1,$2,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
