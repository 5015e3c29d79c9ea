#!/usr/bin/env bash
# One device call: every row op's split kernel for long rows (f32 and bf16), the
# default s512x8 against s256x8, s512x4 and s512x16 at their launch bounds, at
# 64x1048576 and 4x1000003 (the general twins), three alternating rounds, each
# kernel alone in its process (a long sweep in one process drifted). Logs in
# $OUT/split-layouts.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
specs=()
for op in softmax_online logsoftmax_online layernorm layernorm_res rmsnorm rmsnorm_res; do
  for d in f32 bf16; do
    for l in s512x8 s256x8 s512x4 s512x16; do
      specs+=("norm_${op}_${d}_${d}_${l}")
    done
  done
done
for round in 1 2 3; do
  for n in "${specs[@]}"; do
    REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 64x1048576,4x1000003 --spec "$n" \
      --json "$W/r$round-$n.json" > "$W/r$round-$n.log" 2>&1 || echo "$n round $round rc=$?"
  done
  echo "round $round done"
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/split-layouts.tgz" .
