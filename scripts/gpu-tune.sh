#!/usr/bin/env bash
# One device call: `redjit tune` on this GPU (the norm family at the default
# shapes), then `redjit bench norm` on the table it wrote beside PyTorch eager
# and the Triton one-row-per-program kernel (torch_ref.py) at the same shapes.
# TUNE_SHAPES overrides the shapes; TUNE_ARGS adds flags to `redjit tune`.
# Results in $OUT: the table (tuned.toml), the tune's per-shape times
# (tune-norm.jsonl), the bench JSON and logs.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
mkdir -p "$RESULTS"
export REDJIT_CACHE_DIR=/tmp/redjit-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$RESULTS/gpu.txt"
stage/bin/redjit info 2>&1 | tee "$RESULTS/info.txt"
SHAPES_ARG=()
[ -n "${TUNE_SHAPES:-}" ] && SHAPES_ARG=(--shapes "$TUNE_SHAPES")
REDJIT_REQUIRE_GPU=1 timeout "${TUNE_TIMEOUT:-420}" stage/bin/redjit tune "${SHAPES_ARG[@]}" \
  --out "$RESULTS/tuned.toml" ${TUNE_ARGS:-} > "$RESULTS/tune.log" 2>&1
echo "tune rc=$?"
cp "$RESULTS/tuned.toml.partial.jsonl" "$RESULTS/tune-norm.jsonl" 2>/dev/null
rm -f "$RESULTS/tuned.toml.partial.jsonl"
grep -c pick "$RESULTS/tune.log"
