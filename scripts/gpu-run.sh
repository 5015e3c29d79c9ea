#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there), from the repo root, over what
# scripts/gpu.sh staged in stage/. One device call does the whole batch:
#   bash scripts/gpu-run.sh [selftest] [tests] [jit] [bench]   (default: all four)
# Results and logs go to $OUT (the device tool's output folder) or /tmp/redjit-out.
set -uo pipefail
OUT="${OUT:-/tmp/redjit-out}"
mkdir -p "$OUT"
BIN=stage/bin
export REDJIT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(selftest tests jit bench)
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"

for step in "${steps[@]}"; do
  case "$step" in
  selftest)
    echo "== redjit selftest"
    REDJIT_CACHE_DIR=/tmp/redjit-cache-selftest "$BIN/redjit" selftest 2>&1 | tee "$OUT/selftest.log" || status=1
    ;;
  tests)
    echo "== GPU tests"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    for t in "$BIN"/gpu_*; do
      "$t" --ignored --test-threads=1 2>&1 | tee -a "$OUT/tests.log" | grep -E "^test |test result|panicked|REDJIT_TEST_SEED" || status=1
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    ;;
  jit)
    echo "== JIT latency (each phase a fresh process)"
    dir=$(mktemp -d)
    {
      for i in $(seq 11); do
        "$BIN/redjit" bench jit --phase cold --cache-dir "$dir" || status=1
        "$BIN/redjit" bench jit --phase warm --cache-dir "$dir" || status=1
      done
      for i in 1 2 3; do
        "$BIN/redjit" bench jit --phase batch --batch 16 --cache-dir "$dir" || status=1
      done
    } 2>&1 | tee -a "$OUT/jit.log"
    ;;
  bench)
    echo "== PyTorch reference, then redjit, same machine, same call"
    python3 stage/scripts/torch_ref.py --out "$OUT/torch.json" 2>&1 | tee "$OUT/torch.log" || status=1
    "$BIN/redjit" bench reduce-copy --unroll 1,2,4,8 --json "$OUT/bench.json" --compare "$OUT/torch.json" 2>&1 | tee "$OUT/bench.log" || status=1
    ;;
  *) echo "unknown step $step"; status=2 ;;
  esac
done
exit $status
