#!/usr/bin/env bash
# Session 22, 2 GPUs: the two-stage kernel's middle barrier in two phases
# (every barrier wait at or past its count). Tests (one GPU's placement of 2, 4
# and 8 ranks; two GPUs; quantized), then the two-stage kernels against
# 722aea2 (redjit-base) and NCCL at 4-64 MB.
set -uo pipefail
GPUS_TESTS="gpu_all_reduce gpu_all_reduce_gpus gpu_all_reduce_quantized" TEST_TIMEOUT=200 \
AR_BYTES=4M,16M,64M AB_ROUNDS=2 AB_MODES="registered graph" AB_BYTES=4M,16M,64M AB_ALGOS=two-stage,two-stage-cp \
  bash stage/scripts/gpu-ar2.sh tests ref ab
