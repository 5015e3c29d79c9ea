#!/bin/bash
# run7: issue 11's shapes, every default kernel (f32, bf16) beside PyTorch eager, torch.compile
# and Triton, one call (scripts/gpu-norm-check.sh, no tests).
cd "$(dirname "$0")/.."
NORM_TESTS= NORM_SANITIZE= bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/run7.log
