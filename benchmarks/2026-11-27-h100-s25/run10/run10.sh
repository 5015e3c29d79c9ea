#!/usr/bin/env bash
set -uo pipefail
NORM_TESTS="gpu_norm:the_ladders_loop_rows gpu_norm:loop_rows_of_every_op gpu_norm:layer_norm_rows_off_zero gpu_norm:mixed_rows_of_vocabulary_length" NORM_SANITIZE="gpu_norm:loop_rows_small" NORM_SHAPES="4096x33000,4096x36864,4096x50256" bash stage/scripts/gpu-norm-check.sh 2>&1 | tail -60
