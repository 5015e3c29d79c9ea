#!/usr/bin/env bash
# FP8-output norms on one GPU: the GPU tests, then PyTorch (eager, torch.compile)
# and redjit's bench in the same call (benchmarks/h200/bench-norm-fp8.json).
# Here: bash scripts/gpu.sh; on the GPU machine: bash stage/scripts/gpu-norm-fp8.sh
# (bench-bf16.json: the same shapes with a bf16 output, for the FP8 step's cost).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export REDJIT_REQUIRE_GPU=1 REDJIT_CACHE_DIR=/tmp/rc-fp8 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
# One process a test: their NVRTC compiles run in parallel.
t0=$(date +%s)
for t in fp8_rms_norm_matches_the_twin fp8_rms_norm_with_residual_matches_the_twin \
  fp8_layer_norm_matches_the_twin fp8_layer_norm_with_residual_matches_the_twin \
  fp8_bad_calls_are_errors_before_any_launch; do
  timeout 300 stage/bin/gpu_norm --ignored --exact --nocapture "$t" > "$OUT/$t.log" 2>&1 &
done
wait
echo "fp8 tests $(( $(date +%s) - t0 ))s"
cat "$OUT"/fp8_*.log > "$OUT/fp8-tests.log" && rm -f "$OUT"/fp8_*.log
grep -E "^test |panicked|test result|no scale" -A2 "$OUT/fp8-tests.log" | head -40
S=1x4096,16x4096,128x4096,512x4096,2048x4096,1x8192,16x8192,128x8192,512x8192,2048x8192,4096x8192
t0=$(date +%s)
timeout 300 python3 stage/scripts/torch_ref.py --families norm_fp8 --norm-dtypes bf16 --norm-shapes "${TS:-16x4096,128x4096,2048x4096,128x8192,4096x8192}" --out "$OUT/torch-fp8.json" > "$OUT/torch-fp8.log" 2>&1
echo "torch rc=$? $(( $(date +%s) - t0 ))s"; grep -E "e4m3|copy" "$OUT/torch-fp8.log" | head -30
stage/bin/redjit bench norm --fp8 qd --dtypes bf16 --shapes $S --json "$OUT/bench-fp8.json" --compare "$OUT/torch-fp8.json" > "$OUT/bench-fp8.log" 2>&1
echo "bench fp8 rc=$?"; grep -E "rmsnorm|layernorm" "$OUT/bench-fp8.log" | head -50
stage/bin/redjit bench norm --dtypes bf16 --shapes $S --json "$OUT/bench-bf16.json" > "$OUT/bench-bf16.log" 2>&1
echo "bench bf16 rc=$?"; grep -E "rmsnorm|layernorm" "$OUT/bench-bf16.log" | head -50
