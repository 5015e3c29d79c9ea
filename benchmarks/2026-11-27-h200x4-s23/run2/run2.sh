#!/usr/bin/env bash
# Session 23, 4 GPUs, run2: the two-stage kernels' grid, the communicator's
# default (64 blocks a rank) against 32, at 1-64 MB, registered inputs eager and
# from a graph, one process per GPU, NCCL in the same call. redjit and
# redjit-base are the same build (4e64852's all-reduce): four figures a cell.
set -uo pipefail
export REDJIT_REQUIRE_GPUS=4
AR_BYTES=1M,2M,4M,8M,16M,32M,64M AB_ROUNDS=2 AB_GRIDS="default 32" AB_MODES="registered graph" \
AB_BYTES=1M,2M,4M,8M,16M,32M,64M AB_ALGOS=two-stage,two-stage-cp \
  bash stage/scripts/gpu-ar2.sh ref ab
