#!/usr/bin/env bash
# Session 28, run8: speed probes (not kept) of what makes the general deferred
# kernel _p_g slower than _p at 4x1000008: redjit-lean2 (no per-element
# tests, no staging or store element paths, vec a constant), redjit-stagewhole
# (stage_row alone on a whole chunk at the row's shift), redjit-swapbal (_p_g
# balanced, _p not); two rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run8/run8.sh "$OUT/" 2>/dev/null
S=4x1000008
LIST=""
for k in layernorm_res_bf16_bf16_s512x8 rmsnorm_bf16_bf16_s512x8; do
  for b in redjit redjit-lean2 redjit-stagewhole redjit-swapbal; do LIST="$LIST $S@norm_${k}_p_g@$b"; done
  for b in redjit redjit-swapbal; do LIST="$LIST $S@norm_${k}_p@$b"; done
done
LIST="$LIST" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k2,2 | awk '{print $1,$2,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
