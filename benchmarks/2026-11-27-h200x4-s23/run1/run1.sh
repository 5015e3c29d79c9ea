#!/usr/bin/env bash
# Session 23, 4 GPUs: the two-stage kernel's middle barrier in two phases
# (benchmarks/2026-11-27-h200x2-s22/split-middle-barrier.patch on 4e64852) against
# 4e64852 (redjit-base): the multi-GPU tests with the patch, NCCL, then both
# two-stage kernels at 4-64 MB, default grid and 32 blocks, two rounds.
set -uo pipefail
export REDJIT_REQUIRE_GPUS=4
GPUS_TESTS="gpu_all_reduce_gpus" TEST_TIMEOUT=200 AR_BYTES=4M,16M,64M \
AB_ROUNDS=2 AB_GRIDS="default 32" AB_MODES="registered graph" AB_BYTES=4M,16M,64M AB_ALGOS=two-stage,two-stage-cp \
  bash stage/scripts/gpu-ar2.sh topo ref ab tests
