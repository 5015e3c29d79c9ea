#!/usr/bin/env bash
# One device call of benchmarks (2026-11-25): issue 3's figures (config 2 with
# stochastic rounding against torch.compile, tail-heavy sizes, every misaligned mix)
# and issue 11's long rows (every split layout and launch bound at 64x2^20 and
# 4x1000003). Everything lands in $OUT/bench.tgz (the device tool returns 8 files).
set -uo pipefail
OUT="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
B=stage/bin/redjit
step() { echo "== $*"; "$@" || echo "$*" >>"$W/failed"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  step python3 stage/scripts/torch_ref.py --transports bf16 --out "$W/torch-rc.json"
  step "$B" bench reduce-copy --rounding rn,sr --compare "$W/torch-rc.json" --json "$W/bench-rc.json" \
    --spec reduce_copy_u4_f32_bf16_Ta_T_sum_sr --spec reduce_copy_u4_f32_bf16_Ta_T_sum_rn \
    --spec reduce_copy_u4_f32_bf16_TA_T_sum_rn --spec reduce_copy_u4_f32_bf16_AA_T_sum_sr
  step "$B" bench reduce-copy --sizes 511,2044 --json "$W/bench-tail.json" \
    --spec reduce_copy_u4_f32_bf16_Ta_T_sum_sr --spec reduce_copy_u4_f32_bf16_Ta_T_sum_rn
  OUT="$W" step bash stage/scripts/gpu-run.sh misaligned
  step "$B" bench norm --shapes "${NORM_SHAPES:-64x1048576,4x1000003}" --variants --bounds "${NORM_BOUNDS:-1,2,4}" \
    --json "$W/bench-norm-split.json"
} 2>&1 | tee "$W/bench.log" | grep -E '^==|^kernel|misaligned|slowest|GB/s|error' | grep -v 'misaligned src\|misaligned dst' | head -150
tar -C "$W" -czf "$OUT/bench.tgz" .
[ ! -s "$W/failed" ] || { echo "failed:"; cat "$W/failed"; exit 1; }
