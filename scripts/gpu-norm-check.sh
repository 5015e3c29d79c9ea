#!/usr/bin/env bash
# One device call: gpu_norm's split rows off the pack grid (plain, then under
# compute-sanitizer memcheck and racecheck), then PyTorch eager, torch.compile
# and the Triton one-row-per-program kernel (torch_ref.py --families norm) and
# `redjit bench norm --compare` (every default kernel) in the same call.
# NORM_TESTS (gpu_norm tests), NORM_SANITIZE (the tests to sanitize; empty: none)
# and NORM_SHAPES (ROWSxCOLS separated by commas: the shapes of the benchmark and
# of PyTorch's) override the defaults.
# Logs in $OUT/norm-check.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
OUT="$W" TEST_TIMEOUT=300 GPU_TESTS="${NORM_TESTS:-gpu_norm:split_rows_off_the_pack_grid_small}" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
SANITIZE_TESTS="${NORM_SANITIZE-gpu_norm:split_rows_off_the_pack_grid_small}"
if [ -n "$SANITIZE_TESTS" ]; then
  OUT="$W" SANITIZE="$SANITIZE_TESTS" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 \
    bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
fi
python3 stage/scripts/torch_ref.py --families norm ${NORM_SHAPES:+--norm-shapes "$NORM_SHAPES"} --out "$W/torch-norm.json" > "$W/torch-norm.log" 2>&1
echo "torch_ref rc=$?"
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm ${NORM_SHAPES:+--shapes "$NORM_SHAPES"} --json "$W/bench-norm.json" --compare "$W/torch-norm.json" > "$W/bench-norm.log" 2>&1
echo "bench rc=$?"
grep -E "^norm_|d2d" "$W/bench-norm.log" | awk '{print $1, $2, $(NF)}' | sed 's/^norm_//' | paste -sd' ' | cut -c1-6000
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/norm-check.tgz" .
