#!/usr/bin/env bash
set -uo pipefail
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES="4096x50257" bash stage/scripts/gpu-norm-check.sh 2>&1 | grep -E "rc="
tar xzf $OUT/norm-check.tgz -C /tmp && grep -E "^norm_" /tmp/bench-norm.log
