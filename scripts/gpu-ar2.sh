#!/usr/bin/env bash
# One device call on a machine of 2+ GPUs (nvidia-h200-x2 ...), over what
# scripts/gpu.sh staged in stage/: issue 13's correctness tests and its
# benchmarks, NCCL and PyTorch symmetric memory beside redjit in the same call.
#   bash stage/scripts/gpu-ar2.sh [topo] [ref] [bench] [bench-proc] [dtypes] [quant] [grid] [ab] [tests] [sanitize]
#   (default: topo ref bench-proc tests bench dtypes)
# AR_BYTES: the message sizes (default 8K..1G); AR_ITERS: timed batches per
# size; BENCH_MODES: of eager (inputs copied), registered, untracked
# (registered, cudarc's event tracking off), eager-untracked (inputs copied,
# tracking off), graph (default: eager registered graph); BENCH_ALGOS: the kernels (default all four). The grid step sweeps
# the grid cap (AR_GRIDS, default 32 64 96 128 blocks per rank) over
# AR_GRID_BYTES (default 1M..256M), one process per GPU, registered inputs,
# eager and from a graph. The ab step alternates stage/bin/redjit-base (gpu.sh
# with BASE_REV) and this build, AB_ROUNDS rounds (default 2), one process
# per GPU, in AB_MODES (default eager registered), over AB_BYTES (default 8K,64K,256K,1M,16M,64M),
# at each grid cap of AB_GRIDS (default: the communicator's own)
# and AB_ALGOS (default all four). Prints a summary; the
# logs and JSON go to $OUT/ar2.tgz (the device tool brings back 8 files at
# most), the summary to $OUT/summary.txt.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
mkdir -p "$RESULTS"
W=$(mktemp -d)
BIN=stage/bin
# NVLink multicast stays off (the device README: it can put the host's shared
# GPUs out of service); NCCL from PyTorch's wheel for the NCCL backend's tests.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 REDJIT_REQUIRE_GPU=1 REDJIT_REQUIRE_GPUS=${REDJIT_REQUIRE_GPUS:-2}
if [ -z "${REDJIT_NCCL_LIB:-}" ]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null) &&
    export REDJIT_NCCL_LIB="$nccl_dir"
fi
BYTES=${AR_BYTES:-8K,16K,32K,64K,128K,256K,512K,1M,2M,4M,8M,16M,32M,64M,128M,256M,512M,1G}
ALGOS=${BENCH_ALGOS:-one-shot,two-stage,two-stage-cp,push,push-ll}
ITERS=${AR_ITERS:-20}
status=0
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(topo ref bench-proc tests bench dtypes)

# The summary goes straight to $RESULTS, so a call cut off at its limit still
# brings it back; the logs are packed at the end.
SUM="$RESULTS/summary.txt"
: >"$SUM"
say() { echo "$*" | tee -a "$SUM"; }
# Runs a command bounded by $2 seconds, its output to $W/$1.log; says its status.
bounded() {
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$limit" "$@" >"$W/$name.log" 2>&1
  rc=$?
  say "$name: rc=$rc in $(($(date +%s) - t0)) s"
  [ $rc -eq 0 ] || status=1
  return $rc
}

# `redjit bench all-reduce` in each of BENCH_MODES, logged as $1-<mode>; the
# other arguments go to every run (NCCL's JSON too, if the ref step wrote it).
# BYTES, ALGOS and RJ (the binary in $BIN, default redjit) may be set for one
# call (VAR=value bench_modes ...).
bench_modes() {
  local name=$1 mode
  shift
  local cmp=()
  [ -s "$W/torch-ar.json" ] && cmp=(--compare "$W/torch-ar.json")
  for mode in ${BENCH_MODES:-eager registered graph}; do
    local extra=()
    [ "$mode" = registered ] && extra=(--registered)
    [ "$mode" = untracked ] && extra=(--registered --untracked)
    [ "$mode" = eager-untracked ] && extra=(--untracked)
    [ "$mode" = graph ] && extra=(--graph)
    bounded "$name-$mode" 100 "$BIN/${RJ:-redjit}" bench all-reduce "$@" --bytes "$BYTES" --algos "$ALGOS" \
      --iters "$ITERS" "${extra[@]}" "${cmp[@]}" --json "$W/$name-$mode.json"
    cat "$W/$name-$mode.log" >>"$SUM"
  done
}

for step in "${steps[@]}"; do
  case "$step" in
  topo)
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$SUM"
    nvidia-smi topo -m 2>&1 | tee -a "$SUM"
    nvidia-smi nvlink -s -i 0 2>&1 | head -30 >"$W/nvlink.txt"
    ;;
  ref)
    # NCCL (torch.distributed, one process per GPU) and symmetric memory.
    bounded torch-ar 150 python3 stage/scripts/torch_ref.py --families all_reduce --n 1 --no-compile \
      --ar-bytes "$BYTES" --iters "$ITERS" --out "$W/torch-ar.json"
    grep -E "^ *[0-9]|NCCL|symm|rror|floor|NVLink" "$W/torch-ar.log" | tee -a "$SUM"
    ;;
  bench)
    # One process driving every GPU.
    bench_modes bench-ar
    ;;
  bench-proc)
    # One process per GPU (CUDA IPC), as NCCL and the serving frameworks run.
    bench_modes bench-ar-proc --processes --child-timeout 90
    ;;
  grid)
    for cap in ${AR_GRIDS:-32 64 96 128}; do
      BENCH_MODES="registered graph" BYTES="${AR_GRID_BYTES:-1M,4M,16M,64M,256M}" \
        bench_modes "grid-$cap" --processes --child-timeout 90 --max-blocks "$cap"
    done
    ;;
  ab)
    for round in $(seq "${AB_ROUNDS:-2}"); do
      for cap in ${AB_GRIDS:-default}; do
        grid=()
        [ "$cap" = default ] || grid=(--max-blocks "$cap")
        for b in redjit-base redjit; do
          RJ=$b BENCH_MODES="${AB_MODES:-eager registered}" BYTES="${AB_BYTES:-8K,64K,256K,1M,16M,64M}" ALGOS="${AB_ALGOS:-$ALGOS}" \
            bench_modes "ab-$round-$cap-$b" --processes --child-timeout 90 "${grid[@]}"
        done
      done
    done
    ;;
  dtypes)
    for dt in f32 f16; do
      bounded "bench-ar-proc-$dt" 60 "$BIN/redjit" bench all-reduce --processes --child-timeout 50 --dtype "$dt" --algos "$ALGOS" \
        --bytes 8K,64K,1M,16M,64M,256M --iters "$ITERS" --json "$W/bench-ar-proc-$dt.json"
      cat "$W/bench-ar-proc-$dt.log" >>"$SUM"
    done
    ;;
  quant)
    # The quantized all-reduce (f32 in and out, bf16 on the wire) beside the
    # plain f32 one, one process per GPU: time, and error against f32.
    for q in "" --quantized; do
      bounded "bench-ar-proc-f32${q:+-q}" 100 "$BIN/redjit" bench all-reduce --processes --child-timeout 90 \
        --dtype f32 $q --algos one-shot,two-stage,two-stage-cp --bytes "${QUANT_BYTES:-64K,1M,16M,64M,256M}" \
        --iters "$ITERS" --json "$W/bench-ar-proc-f32${q:+-q}.json"
      cat "$W/bench-ar-proc-f32${q:+-q}.log" >>"$SUM"
    done
    ;;
  tests)
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    for sel in ${GPUS_TESTS:-gpu_all_reduce_gpus gpu_all_reduce_ipc:one_process_per_gpu gpu_all_reduce_ipc:a_peer_process_killed}; do
      bin=${sel%%:*}
      filter=""
      [ "$sel" != "$bin" ] && filter=${sel#*:}
      # shellcheck disable=SC2086 # an empty filter is no argument
      bounded "test-$bin${filter:+-$filter}" "${TEST_TIMEOUT:-300}" "$BIN/$bin" --ignored --test-threads=1 --nocapture $filter
      grep -E "^test |test result|panicked|in [0-9.]+m?s$|GPUs|NCCL|routed|broken|error" "$W/test-$bin${filter:+-$filter}.log" |
        grep -v "^running" | head -40 | tee -a "$SUM"
    done
    ;;
  sanitize)
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    for tool in memcheck racecheck synccheck; do
      bounded "sanitize-$tool" 200 "$cs" --tool "$tool" --error-exitcode 9 "$BIN/${SANITIZE_BIN:-gpu_all_reduce_gpus}" \
        --ignored --test-threads=1 "${SANITIZE_FILTER:-gpus_random}"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" "$W/sanitize-$tool.log" | tee -a "$SUM"
    done
    ;;
  *) say "unknown step $step"; status=2 ;;
  esac
  # Packed after every step: a call cut off at its limit keeps what ran.
  tar -C "$W" -czf "$RESULTS/ar2.tgz" .
done
exit $status
