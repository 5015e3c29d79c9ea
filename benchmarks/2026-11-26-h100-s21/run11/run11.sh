#!/usr/bin/env bash
set -uo pipefail
mkdir -p "$OUT/t"
OUT="$OUT/t" TEST_TIMEOUT=100 GPU_TESTS="gpu_norm:softmax_rows_of_vocabulary_lengths gpu_norm:the_launcher_picks" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|left|right" | head -20
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4096x50257 bash scripts/gpu-norm-check.sh > /dev/null 2>&1; echo "check rc=$?"
