#!/usr/bin/env bash
# One device call: gpu_norm's split rows off the pack grid (plain, then under
# compute-sanitizer memcheck and racecheck), then PyTorch eager, torch.compile
# and the Triton one-row-per-program kernel (torch_ref.py --families norm) and
# `redjit bench norm --compare` (every default kernel) in the same call.
# NORM_TESTS (gpu_norm tests), NORM_SANITIZE (the tests to sanitize; empty: none)
# and NORM_SHAPES (ROWSxCOLS separated by commas: the shapes of the benchmark and
# of PyTorch's) override the defaults; NORM_TESTS= (empty) runs no test.
# NORM_SANITIZE_TOOLS: the compute-sanitizer tools (default: memcheck racecheck).
# NORM_GAPS: the launch gaps to time in, each a benchmark of its own beside
# PyTorch's (default: hidden; `hidden counted` for both).
# Logs in $OUT/norm-check.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
TESTS="${NORM_TESTS-gpu_norm:split_rows_off_the_pack_grid_small}"
if [ -n "$TESTS" ]; then
  OUT="$W" TEST_TIMEOUT=300 GPU_TESTS="$TESTS" \
    bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
fi
SANITIZE_TESTS="${NORM_SANITIZE-gpu_norm:split_rows_off_the_pack_grid_small}"
if [ -n "$SANITIZE_TESTS" ]; then
  OUT="$W" SANITIZE="$SANITIZE_TESTS" SANITIZE_TOOLS="${NORM_SANITIZE_TOOLS:-memcheck racecheck}" SANITIZE_TIMEOUT=240 \
    bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
fi
for gap in ${NORM_GAPS:-hidden}; do
  sfx=$([ "$gap" = hidden ] && echo "" || echo "-$gap")
  python3 stage/scripts/torch_ref.py --families norm --launch-gap "$gap" ${NORM_SHAPES:+--norm-shapes "$NORM_SHAPES"} --out "$W/torch-norm$sfx.json" > "$W/torch-norm$sfx.log" 2>&1
  echo "torch_ref ($gap) rc=$?"
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --launch-gap "$gap" ${NORM_SHAPES:+--shapes "$NORM_SHAPES"} --json "$W/bench-norm$sfx.json" --compare "$W/torch-norm$sfx.json" > "$W/bench-norm$sfx.log" 2>&1
  echo "bench ($gap) rc=$?"
  grep -E "^norm_|d2d" "$W/bench-norm$sfx.log" | awk '{print $1, $2, $(NF)}' | sed 's/^norm_//' | paste -sd' ' | cut -c1-6000
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/norm-check.tgz" .
