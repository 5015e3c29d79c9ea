#!/usr/bin/env bash
# Session 28, 4 GPUs, run1: the HEAD build (the all-reduce unchanged since
# 7db60ed but for 9f55c38's grid-cap refactor, never run on 4 GPUs): the
# multi-GPU tests on 4 GPUs (one process; one process per GPU through IPC),
# NCCL and symmetric memory, then every kernel one process per GPU,
# registered and from a graph, 8 KB to 256 MB.
set -uo pipefail
cp benchmarks/2026-11-27-h200x4-s28/run1/run1.sh "$OUT/" 2>/dev/null
export REDJIT_REQUIRE_GPUS=4
GPUS_TESTS="gpu_all_reduce_gpus gpu_all_reduce_ipc:one_process_per_gpu" TEST_TIMEOUT=300 \
AR_BYTES=8K,64K,256K,1M,4M,16M,64M,256M BENCH_MODES="registered graph" \
  bash stage/scripts/gpu-ar2.sh topo tests ref bench-proc
