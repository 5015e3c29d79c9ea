#!/usr/bin/env bash
set -uo pipefail
mkdir -p "$OUT/t"
OUT="$OUT/t" TEST_TIMEOUT=200 GPU_TESTS="gpu_norm:deferred_general_twins gpu_norm:the_launcher_picks" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|left|right" | head -20
SHARED=1 ROUNDS=2 LIST="$(cat stage/ab-list8.txt)" OUT="$OUT/ab" bash scripts/gpu-norm-ab.sh 2>&1 | grep -E "^r[12] " | awk '{print $1, $3, $4, $7}' | sed 's/norm_//'
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4096x40001,4096x50257,4096x65537 bash scripts/gpu-norm-check.sh > /dev/null 2>&1; echo "check rc=$?"
