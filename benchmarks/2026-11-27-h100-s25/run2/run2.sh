#!/usr/bin/env bash
set -uo pipefail
TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:loop_rows_of_every_op" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED" | head -20
LIST=$(cat stage/list2) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name"
