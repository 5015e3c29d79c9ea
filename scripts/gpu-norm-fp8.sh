#!/usr/bin/env bash
# FP8-output norms on one GPU: the GPU tests, then PyTorch (eager, torch.compile)
# and redjit's bench in the same call.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export REDJIT_REQUIRE_GPU=1 REDJIT_CACHE_DIR=/tmp/rc-fp8 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
t0=$(date +%s)
timeout 240 stage/bin/gpu_norm --ignored --test-threads=1 fp8_ > "$OUT/fp8-tests.log" 2>&1
echo "fp8 tests rc=$? $(( $(date +%s) - t0 ))s: $(grep -E '^test result' "$OUT/fp8-tests.log")"
grep -E "^test |panicked" "$OUT/fp8-tests.log" | head -8
S=1x4096,16x4096,128x4096,512x4096,2048x4096,1x8192,16x8192,128x8192,512x8192,2048x8192,4096x8192
t0=$(date +%s)
timeout 300 python3 stage/scripts/torch_ref.py --families norm_fp8 --norm-dtypes bf16 --norm-shapes "${TS:-16x4096,128x4096,2048x4096,128x8192,4096x8192}" --out "$OUT/torch-fp8.json" > "$OUT/torch-fp8.log" 2>&1
echo "torch rc=$? $(( $(date +%s) - t0 ))s"; grep -E "e4m3|copy" "$OUT/torch-fp8.log" | head -30
stage/bin/redjit bench norm --fp8 qd --dtypes bf16 --shapes $S --json "$OUT/bench-fp8.json" --compare "$OUT/torch-fp8.json" > "$OUT/bench-fp8.log" 2>&1
echo "bench fp8 rc=$?"; grep -E "rmsnorm|layernorm" "$OUT/bench-fp8.log" | head -50
stage/bin/redjit bench norm --dtypes bf16 --shapes $S --json "$OUT/bench-bf16.json" > "$OUT/bench-bf16.log" 2>&1
echo "bench bf16 rc=$?"; grep -E "rmsnorm|layernorm" "$OUT/bench-bf16.log" | head -50
