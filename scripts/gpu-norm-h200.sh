#!/usr/bin/env bash
# One device call: the norm family on the device's table beside its anchors.
# PyTorch eager, the Triton one-row-per-program kernel and Liger-Kernel (from
# .whl, where carried) via torch_ref.py, then `redjit bench norm` at the same
# shapes (main and LLM shapes, f32 and bf16) and at the long rows, then
# `redjit tune` afresh with what time is left (TUNE_BUDGET seconds in all).
# Results in $OUT: torch-norm.json, bench-norm.json, bench-norm-long.json,
# tune2.jsonl and the logs.
set -uo pipefail
T0=$(date +%s)
RESULTS="${OUT:-/tmp/redjit-out}"
mkdir -p "$RESULTS"
export REDJIT_CACHE_DIR=/tmp/redjit-cache PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
SHAPES="${NORM_SHAPES:-32768x4096,8192x16384,8192x32768,262144x128,1x4096,16x4096,128x4096,512x4096,4096x4096,1x8192,16x8192,128x8192,512x8192,4096x8192}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$RESULTS/gpu.txt"
stage/bin/redjit info 2>&1 | grep -E 'GPU|tuning' | tee "$RESULTS/info.txt"
python3 stage/scripts/torch_ref.py --families norm --no-compile --norm-shapes "$SHAPES" --out "$RESULTS/torch-norm.json" > "$RESULTS/torch-norm.log" 2>&1
echo "torch_ref rc=$? ($(( $(date +%s) - T0 )) s)"
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes "$SHAPES" --json "$RESULTS/bench-norm.json" --compare "$RESULTS/torch-norm.json" > "$RESULTS/bench-norm.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - T0 )) s)"
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 4x1000003,64x1048576 --json "$RESULTS/bench-norm-long.json" > "$RESULTS/bench-norm-long.log" 2>&1
echo "bench long rc=$? ($(( $(date +%s) - T0 )) s)"
LEFT=$(( ${TUNE_BUDGET:-540} - ($(date +%s) - T0) ))
if [ "$LEFT" -gt 30 ]; then
  REDJIT_REQUIRE_GPU=1 timeout "$LEFT" stage/bin/redjit tune --out /tmp/tune2.toml > "$RESULTS/tune2.log" 2>&1
  echo "tune2 rc=$? ($(( $(date +%s) - T0 )) s)"
  cp /tmp/tune2.toml.partial.jsonl "$RESULTS/tune2.jsonl" 2>/dev/null
fi
