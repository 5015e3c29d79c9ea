#!/usr/bin/env bash
# Session 23, 4 GPUs, run3: 4 ranks' cp.async two-stage calls to 16 MB on 32
# blocks a rank (Thresholds::narrow_max) against 4e64852 (redjit-base, 64): the
# tests that take the narrowed grid (4 ranks on GPU 0, then 4 GPUs), then the
# choice's kernel at 4-32 MB, registered and from a graph, two rounds.
set -uo pipefail
export REDJIT_REQUIRE_GPUS=4
GPUS_TESTS="gpu_all_reduce:four_ranks_narrow gpu_all_reduce:every_kernel_is_exact_at_the_grid_caps gpu_all_reduce_gpus:gpus_exact_inputs_bit_for_bit_bf16 gpu_all_reduce_gpus:gpus_a_hundred_thousand gpu_all_reduce_gpus:gpus_nccl_backend_and_routed_calls" \
TEST_TIMEOUT=200 AR_BYTES=4M,8M,16M,32M AB_ROUNDS=2 AB_MODES="registered graph" AB_BYTES=4M,8M,16M,32M AB_ALGOS=two-stage-cp \
  bash stage/scripts/gpu-ar2.sh tests ref ab
