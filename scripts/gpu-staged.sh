#!/usr/bin/env bash
# One device call for the split layout that stages its next chunk (`_p`):
# gpu_norm's staged test, the split bit-identity test (default and staged) and
# every layout variant; the staged test under compute-sanitizer memcheck and
# racecheck; then every row op's default split kernel against the staged ones
# at the long-row shapes, and again in a second round (drift between rounds).
# Logs in $OUT/staged.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
if [ -z "${BENCH_ONLY:-}" ]; then
OUT="$W" TEST_TIMEOUT=400 TEST_PARALLEL=1 GPU_TESTS="${TESTS:-gpu_norm:staged_split_rows_many_items_a_block gpu_norm:split_rows_are_bit_identical_run_to_run gpu_norm:every_layout_variant_on_strided_rows}" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
OUT="$W" SANITIZE="gpu_norm:staged_split_rows_many_items_a_block" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 \
  bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
fi
specs=()
for op in softmax_online logsoftmax_online layernorm layernorm_res rmsnorm rmsnorm_res; do
  for d in f32 bf16; do
    for l in s512x8 s256x4_p s256x8_p s512x2_p s512x4_p s512x8_p; do
      n="norm_${op}_${d}_${d}_${l}"
      # Staging must fit (the spec's rule); the others are left out.
      stage/bin/redjit gen --spec "$n" > /dev/null 2>&1 && specs+=(--spec "$n")
    done
  done
done
for round in 1 2; do
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 64x1048576,4x1000003 "${specs[@]}" \
    --json "$W/bench-staged-$round.json" > "$W/bench-staged-$round.log" 2>&1
  echo "bench round $round rc=$?"
done
grep -E "^norm_|d2d" "$W/bench-staged-1.log" | awk '{print $1, $2, $3, $NF}' | sed 's/^norm_//' | paste -sd' ' | cut -c1-8000
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/staged.tgz" .
