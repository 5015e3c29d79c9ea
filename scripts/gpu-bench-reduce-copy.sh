#!/usr/bin/env bash
# Runs on the GPU machine after scripts/gpu.sh: reduce_copy benchmarks of
# stochastic rounding, misaligned mixes and tail cost,
# with PyTorch measured in the same call. Output under $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/redjit-out}"
B=stage/bin
export REDJIT_CACHE_DIR=/tmp/redjit-cache-bench PYTHONUNBUFFERED=1
python3 stage/scripts/torch_ref.py --out "$OUT/torch.json" > "$OUT/torch.log" 2>&1
echo "== every type configuration, unroll 4, round to nearest and stochastic"
"$B/redjit" bench reduce-copy --rounding rn,sr --compare "$OUT/torch.json" --json "$OUT/bench_rn_sr.json" | tail -40
echo "== config 2 (volatile bf16 + read-only f32 -> bf16), every misaligned mix"
"$B/redjit" bench reduce-copy --misaligned --compare "$OUT/torch.json" --json "$OUT/bench_misaligned.json" \
  --spec reduce_copy_u4_f32_bf16_Ta_T_sum_rn --spec reduce_copy_u4_f32_bf16_Ta_T_sum_sr \
  --spec reduce_copy_u4_f32_f16_Ta_T_sum_sr --spec reduce_copy_u4_f32_bf16_AA_T_sum_sr \
  --spec reduce_copy_u4_f32_bf16_TA_A_sum_rn | grep -v "^GPU\|^n =\|^prepared\|^torch\|^d2d"
echo "== tail-heavy sizes"
for n in 511 2044; do
  "$B/redjit" bench reduce-copy --sizes $n --iters 200 --spec reduce_copy_u4_f32_bf16_Ta_T_sum_rn --spec reduce_copy_u4_f32_bf16_Ta_T_sum_sr | tail -2
done
echo "== repeat runs of the rows that fell below 95 % of copy in an earlier run"
for i in 1 2 3; do
  "$B/redjit" bench reduce-copy --spec reduce_copy_u8_f32_bf16_TT_T_sum_rn --spec reduce_copy_u4_f32_f16_T_A_sum_rn \
    --spec reduce_copy_u1_f32_bf16_T_T_sum_rn --spec reduce_copy_u1_f32_f16_T_T_sum_rn | grep "^reduce_copy"
done
