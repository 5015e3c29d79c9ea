#!/bin/bash
# run17: issue 11's six shapes, every default kernel (f32, bf16) beside PyTorch eager, torch.compile
# and Triton, on the session's final code (684bfe8), one call, no tests.
cd "$(dirname "$0")/.."
NORM_TESTS= NORM_SANITIZE= bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/run17.log
