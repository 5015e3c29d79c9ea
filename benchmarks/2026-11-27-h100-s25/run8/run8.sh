#!/usr/bin/env bash
set -uo pipefail
NORM_TESTS="gpu_norm:the_ladders_loop_rows" NORM_SANITIZE= NORM_SHAPES="4096x33000,4096x36864,4096x50256" bash stage/scripts/gpu-norm-check.sh 2>&1 | tail -60
