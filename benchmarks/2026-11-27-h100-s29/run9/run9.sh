#!/bin/bash
# run9: prefetching_split_cohorts_small with the two mixed-dtype holding kernels added, then
# memcheck and racecheck on it.
cd "$(dirname "$0")/.."
OUT=$OUT/t GPU_TESTS="gpu_norm:prefetching_split_cohorts_small" bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee $OUT/run9.log
OUT=$OUT/t SANITIZE="gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=300 bash stage/scripts/gpu-run.sh sanitize 2>&1 | tee -a $OUT/run9.log
