#!/usr/bin/env bash
# Session 28, run11: 16-bit weight and bias loads of the general twins in one
# path for every whole pack (two vector loads and the funnel, m = 0 included;
# redjit-u) against e9f942b (redjit): off-grid split tests with this build,
# then the 16-bit o2_g and _p_g twins at 4x1000003 and _p_g at 4x1000008, two
# rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run11/run11.sh "$OUT/" 2>/dev/null
W=$(mktemp -d)
OUT="$W" TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:split_twins_with_vectors_off_the_rows_grid gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
LIST=""
for k in layernorm_res_bf16_bf16 rmsnorm_bf16_bf16 layernorm_bf16_bf16 rmsnorm_res_bf16_bf16; do
  LIST="$LIST 4x1000003@norm_${k}_s512x4_o2_g 4x1000003@norm_${k}_s512x8_p_g 4x1000008@norm_${k}_s512x8_p_g"
done
LIST="$LIST" BINS="redjit redjit-u" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > "$OUT/ab.txt" 2>&1
grep "^r[0-9]" "$OUT/ab.txt" | sort -k3,3 -k4,4 -k2,2 | awk '{print $1,$2,$3,$4,$5,$7,$8}'
rm -f "$OUT/norm-ab.tgz"
