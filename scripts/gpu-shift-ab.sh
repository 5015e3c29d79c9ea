#!/usr/bin/env bash
# One device call (2026-11-25, third session): the split general twins' packs
# shifted onto the pack grid (rows of an odd ld in whole vector accesses).
#  1. gpu_norm's tests on this build (outputs on and off the pack grid);
#  2. the default kernels at 4x1000003 from this build (stage/bin/redjit) and
#     the previous one (stage/bin/redjit-old), three rounds alternating;
#  3. 16-bit rows of 128 at 262144x128: w8x4 (the ladder's) against w4x8,
#     three rounds alternating.
# Logs in $OUT/shift-ab.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
export REDJIT_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  OUT="$W" TEST_PARALLEL=1 TEST_TIMEOUT=400 \
    GPU_TESTS="gpu_norm:every_layout gpu_norm:the_issue_shapes gpu_norm:every_op gpu_norm:softmax_special gpu_norm:split_rows gpu_norm:bad_calls" \
    bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -vE "^name|^NVIDIA" | tail -30
fi
for round in 1 2 3; do
  for b in stage/bin/redjit stage/bin/redjit-old; do
    echo "== $(basename "$b") 4x1000003 round $round"
    "$b" bench norm --shapes 4x1000003 2>&1 | grep -E '^norm_|d2d' | tee -a "$W/long-$(basename "$b").txt" | awk '{print $1, $NF}' | sed 's/^norm_//' | paste -sd' '
  done
  specs=()
  for op in softmax_online softmax_safe logsoftmax_online layernorm layernorm_res rmsnorm rmsnorm_res; do
    specs+=(--spec "norm_${op}_bf16_bf16_w8x4" --spec "norm_${op}_bf16_bf16_w4x8")
  done
  echo "== 262144x128 bf16 round $round"
  stage/bin/redjit bench norm --shapes 262144x128 "${specs[@]}" 2>&1 | grep -E '^norm_|d2d' | tee -a "$W/narrow.txt" | awk '{print $1, $NF}' | sed 's/^norm_//' | paste -sd' '
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/shift-ab.tgz" .
