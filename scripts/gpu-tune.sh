#!/usr/bin/env bash
# One device call: `redjit tune --family $FAMILY` (norm or reduce; default
# norm) on this GPU into the cache directory's table for it, which the runtime
# then takes; then the family's benchmark on that table beside its anchors in
# the same call: for reduce, `redjit bench reduce` and `bench reduce-copy`
# beside PyTorch (torch_ref.py, eager and torch.compile); for norm, `redjit
# bench norm` at NORM_SHAPES beside PyTorch eager, Triton and Liger-Kernel
# (carried in .whl). TUNE_ARGS adds flags to `redjit tune`.
# Results in $OUT: the table (tuned.toml), the tune's per-shape times
# (tune-$FAMILY.jsonl), the bench and torch JSONs, and the logs (logs.tgz).
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
FAMILY="${FAMILY:-norm}"
mkdir -p "$RESULTS"
W=$(mktemp -d)
export REDJIT_CACHE_DIR=/tmp/redjit-cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
t0=$(date +%s)
REDJIT_REQUIRE_GPU=1 timeout "${TUNE_TIMEOUT:-420}" stage/bin/redjit tune --family "$FAMILY" ${TUNE_ARGS:-} > "$W/tune.log" 2>&1
echo "tune rc=$? ($(( $(date +%s) - t0 )) s)"
table=$(ls "$REDJIT_CACHE_DIR"/tuning/*.toml 2>/dev/null | head -1)
[ -n "$table" ] && cp "$table" "$RESULTS/tuned.toml"
# The finished shapes, also of a tune cut off by TUNE_TIMEOUT before it wrote
# its table (a later call resumes from them).
partial=$(ls "$REDJIT_CACHE_DIR"/tuning/*.partial.jsonl 2>/dev/null | head -1)
[ -n "$partial" ] && cp "$partial" "$RESULTS/tune-$FAMILY.jsonl"
grep -E "pick|dropped" "$W/tune.log" | head -80
stage/bin/redjit info 2>&1 | grep -E "GPU|tuning" | tee "$W/info.txt"
if [ "$FAMILY" = reduce ]; then
  timeout 300 python3 stage/scripts/torch_ref.py --families reduce,reduce_copy --out "$RESULTS/torch-reduce.json" > "$W/torch-reduce.log" 2>&1
  echo "torch_ref rc=$?"
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench reduce --compare "$RESULTS/torch-reduce.json" --json "$RESULTS/bench-reduce.json" > "$W/bench-reduce.log" 2>&1
  echo "bench reduce rc=$?"
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench reduce-copy --compare "$RESULTS/torch-reduce.json" --json "$RESULTS/bench-reduce-copy.json" > "$W/bench-reduce-copy.log" 2>&1
  echo "bench reduce-copy rc=$?"
  grep -E "^reduce|copy of" "$W"/bench-reduce*.log
fi
if [ "$FAMILY" = norm ] && [ -n "${NORM_SHAPES:-}" ]; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  fi
  timeout 200 python3 stage/scripts/torch_ref.py --families norm --no-compile --norm-shapes "$NORM_SHAPES" --out "$RESULTS/torch-norm.json" > "$W/torch-norm.log" 2>&1
  echo "torch_ref rc=$?"
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes "$NORM_SHAPES" --compare "$RESULTS/torch-norm.json" --json "$RESULTS/bench-norm.json" > "$W/bench-norm.log" 2>&1
  echo "bench norm rc=$?"
fi
tar -C "$W" -czf "$RESULTS/logs.tgz" .
