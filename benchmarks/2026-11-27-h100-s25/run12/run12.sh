#!/usr/bin/env bash
set -uo pipefail
NORM_TESTS="gpu_norm:the_ladders_loop_rows" NORM_SANITIZE= NORM_SHAPES="4096x33000" bash stage/scripts/gpu-norm-check.sh 2>&1 | grep -E "rc=|test result"
tar xzf $OUT/norm-check.tgz -C /tmp && grep -E "_res_" /tmp/bench-norm.log
