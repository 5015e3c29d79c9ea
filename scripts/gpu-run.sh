#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there), from the repo root, over what
# scripts/gpu.sh staged in stage/. One device call does the whole batch:
#   bash scripts/gpu-run.sh [selftest] [tests] [jit] [bench] [macro] [bench-all] [norm]
#                           [some-tests] [reduce] [all-reduce] [nms] [softmax-all] [norm-quick] [norm-variants] [sanitize]
#                           [misaligned] [gpus] [candle] [fused-norm]
#   (default: the first five; bench-all is a sweep of every family with PyTorch and a plot)
# Results and logs go to $OUT (the device tool's output folder) or /tmp/redjit-out.
set -uo pipefail
OUT="${OUT:-/tmp/redjit-out}"
mkdir -p "$OUT"
BIN=stage/bin
export REDJIT_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
# NVLink multicast stays off on the multi-GPU machines (the device README: a
# program that uses it can put the host's shared GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The NCCL backend (gpu_all_reduce_nccl) loads NCCL from PyTorch's wheel
# (nvidia/nccl/lib/libnccl.so.2) unless REDJIT_NCCL_LIB already names one; with
# REDJIT_REQUIRE_GPU=1 a missing NCCL fails that test, naming what it tried.
if [ -z "${REDJIT_NCCL_LIB:-}" ]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null) \
    && export REDJIT_NCCL_LIB="$nccl_dir"
fi
# A selection "bin[:filter]" of the GPU tests (a filter is a test-name
# substring), bounded by TEST_TIMEOUT seconds (default 120), logged to
# $OUT/<bin>[-<filter>].log; prints its status and any failing lines.
run_sel() {
  local sel=$1 bin=${1%%:*} filter="" t0 rc log
  [ "$sel" != "$bin" ] && filter=${sel#*:}
  log="$OUT/$bin${filter:+-$filter}.log"
  t0=$(date +%s)
  timeout "${TEST_TIMEOUT:-120}" "$BIN/$bin" --ignored --test-threads=1 $filter >"$log" 2>&1
  rc=$?
  echo "$sel: rc=$rc in $(($(date +%s) - t0)) s"
  grep -E "^test |test result|panicked" "$log" | grep -v " ... ok$" | head -20
  return $rc
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(selftest tests jit bench macro)
status=0

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"

for step in "${steps[@]}"; do
  case "$step" in
  selftest)
    echo "== redjit selftest"
    REDJIT_CACHE_DIR=/tmp/redjit-cache-selftest "$BIN/redjit" selftest 2>&1 | tee "$OUT/selftest.log" || status=1
    ;;
  tests)
    # Every GPU test binary as concurrent processes (their NVRTC compiles run
    # in parallel; serial, gpu_norm alone passed the 10-minute call limit), the
    # largest, gpu_norm, in TEST_SHARDS (default 6) groups of its tests; the
    # all-reduce binaries one after another (their barrier timeouts are timed).
    echo "== GPU tests"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    mkdir -p "$OUT/tests"
    one() { # log-name binary [args...]
      local name=$1 t0=$(date +%s)
      shift
      timeout "${TEST_TIMEOUT:-540}" "$@" --ignored --test-threads=1 >"$OUT/tests/$name.log" 2>&1
      local rc=$?
      echo "$name: rc=$rc in $(($(date +%s) - t0)) s, $(grep -E '^test result' "$OUT/tests/$name.log" | tail -1)"
      return $rc
    }
    pids=()
    shards=${TEST_SHARDS:-6}
    mapfile -t norm_tests < <("$BIN/gpu_norm" --list --ignored 2>/dev/null | sed -n 's/: test$//p')
    for ((k = 0; k < shards; k++)); do
      sel=()
      for ((i = k; i < ${#norm_tests[@]}; i += shards)); do sel+=("${norm_tests[i]}"); done
      [ ${#sel[@]} -gt 0 ] && { one "gpu_norm-$k" "$BIN/gpu_norm" --exact "${sel[@]}" & pids+=($!); }
    done
    for t in "$BIN"/gpu_*; do
      case "$(basename "$t")" in gpu_norm | gpu_all_reduce*) continue ;; esac
      one "$(basename "$t")" "$t" &
      pids+=($!)
    done
    (
      st=0
      for t in "$BIN"/gpu_all_reduce*; do one "$(basename "$t")" "$t" || st=1; done
      exit $st
    ) &
    pids+=($!)
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    cat "$OUT"/tests/*.log >"$OUT/tests.log"
    grep -hE "panicked|FAILED" "$OUT"/tests/*.log | head -20
    rm -rf "$OUT/tests"
    ;;
  jit)
    echo "== JIT latency (each phase a fresh process)"
    dir=$(mktemp -d)
    {
      for i in $(seq 11); do
        "$BIN/redjit" bench jit --phase cold --cache-dir "$dir" || status=1
        "$BIN/redjit" bench jit --phase warm --cache-dir "$dir" || status=1
      done
      for i in 1 2 3; do
        "$BIN/redjit" bench jit --phase batch --batch 16 --cache-dir "$dir" || status=1
      done
    } 2>&1 | tee -a "$OUT/jit.log"
    ;;
  bench)
    echo "== PyTorch reference, then redjit, same machine, same call"
    python3 stage/scripts/torch_ref.py --out "$OUT/torch.json" 2>&1 | tee "$OUT/torch.log" || status=1
    "$BIN/redjit" bench reduce-copy --unroll 1,2,4,8 --json "$OUT/bench.json" --compare "$OUT/torch.json" 2>&1 | tee "$OUT/bench.log" || status=1
    ;;
  macro)
    echo "== #[reduce_copy] example: cold then warm start-up (fresh cache dir), each a fresh process"
    # A subshell (it is piped into tee): it exits with its own status.
    (
      st=0
      dir=$(mktemp -d)
      for phase in cold warm; do
        t0=$(date +%s%N)
        REDJIT_CACHE_DIR="$dir" "$BIN/redjit-example-collectives" || st=1
        echo "process wall ($phase, incl. the CPU check of 2^24 + 3 elements): $((($(date +%s%N) - t0) / 1000000)) ms"
      done
      echo "-- 5 more cold/warm pairs, small n (start-up spread)"
      for i in 1 2 3 4 5; do
        dir=$(mktemp -d)
        for phase in cold warm; do
          t0=$(date +%s%N)
          REDJIT_CACHE_DIR="$dir" "$BIN/redjit-example-collectives" 4099 | grep -E "^startup:|MISMATCH"
          [ "${PIPESTATUS[0]}" -eq 0 ] || st=1
          echo "process wall ($phase): $((($(date +%s%N) - t0) / 1000000)) ms"
        done
      done
      exit $st
    ) 2>&1 | tee "$OUT/macro.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    echo "== #[reduce_copy] GPU tests"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-macro-tests
    for t in "$BIN/macro_gpu" "$BIN/example"; do
      "$t" --ignored --test-threads=1 2>&1 | tee -a "$OUT/macro-tests.log" | grep -E "^test |test result|panicked|seed" || status=1
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    ;;
  bench-all)
    echo "== PyTorch reference (reduce_copy + reduce, size sweep), then redjit bench all, same call"
    sizes=2^20,2^22,2^24,2^26,2^28
    python3 stage/scripts/torch_ref.py --families reduce_copy,reduce --sizes "$sizes" --compile-sizes 2^28 \
      --out "$OUT/torch-all.json" 2>&1 | tee "$OUT/torch-all.log" || status=1
    # The plot needs a TTF font; without one it is drawn later from the JSON
    # (redjit report bench-all.json --plot ...).
    plot=()
    if [ -n "${REDJIT_PLOT_FONT:-}" ] || ls /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf >/dev/null 2>&1; then
      plot=(--plot "$OUT/bench-all.svg")
    fi
    "$BIN/redjit" bench all --sizes "$sizes" --json "$OUT/bench-all.json" --compare "$OUT/torch-all.json" \
      "${plot[@]}" 2>&1 | tee "$OUT/bench-all.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  reduce)
    # Issue 5's figures: full-array ops at REDUCE_SIZES (2^16 for the per-call
    # cost, 2^28 for bandwidth), row/column sums, PyTorch eager in the same
    # call; then 2^16 again with the launches replayed from a CUDA graph, and
    # back to back with cudarc's event tracking off.
    sizes=${REDUCE_SIZES:-2^16,2^28}
    echo "== PyTorch eager (reduce), then redjit bench reduce at $sizes, same call"
    python3 stage/scripts/torch_ref.py --families reduce --sizes "$sizes" --no-compile \
      --out "$OUT/torch-reduce.json" 2>&1 | tee "$OUT/torch-reduce.log" || status=1
    "$BIN/redjit" bench reduce --sizes "$sizes" --json "$OUT/bench-reduce.json" --compare "$OUT/torch-reduce.json" 2>&1 | tee "$OUT/bench-reduce.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    "$BIN/redjit" bench reduce --sizes 2^16 --shapes none --timing graph 2>&1 | tee -a "$OUT/bench-reduce.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    "$BIN/redjit" bench reduce --sizes 2^16 --shapes none --untracked 2>&1 | tee -a "$OUT/bench-reduce.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  norm)
    echo "== PyTorch + Triton reference (norm family), then redjit bench norm (default and every layout variant), same call"
    python3 stage/scripts/torch_ref.py --families norm --out "$OUT/torch-norm.json" 2>&1 | tee "$OUT/torch-norm.log" || status=1
    "$BIN/redjit" bench norm --json "$OUT/bench-norm.json" --compare "$OUT/torch-norm.json" 2>&1 | tee "$OUT/bench-norm.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    "$BIN/redjit" bench norm --variants --json "$OUT/bench-norm-variants.json" --compare "$OUT/torch-norm.json" 2>&1 | tee "$OUT/bench-norm-variants.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  some-tests)
    # GPU_TESTS="bin[:filter] ..." (a filter is a test-name substring), each
    # bounded by TEST_TIMEOUT seconds (default 120): a short call's selection.
    # TEST_PARALLEL=1 runs the selections as concurrent processes (the tests are
    # mostly NVRTC compiles on the host; the disk cache's writes are atomic).
    echo "== selected GPU tests: ${GPU_TESTS:-}"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    pids=()
    for sel in ${GPU_TESTS:-}; do
      if [ "${TEST_PARALLEL:-0}" = 1 ]; then
        run_sel "$sel" &
        pids+=($!)
      else
        run_sel "$sel" || status=1
      fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    ;;
  gpus)
    # Needs 2+ GPUs (nvidia-h200-x2 ...): the all-reduce with one rank per GPU
    # (one process; one process per GPU through IPC; a killed peer; NCCL over
    # the same GPUs). REDJIT_REQUIRE_GPUS makes fewer GPUs a failure.
    echo "== multi-GPU all-reduce tests"
    nvidia-smi topo -m 2>&1 | tee "$OUT/topo.txt"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests REDJIT_REQUIRE_GPUS=${REDJIT_REQUIRE_GPUS:-2}
    for sel in ${GPUS_TESTS:-gpu_all_reduce_gpus gpu_all_reduce_ipc:one_process_per_gpu gpu_all_reduce_ipc:a_peer_process_killed}; do
      TEST_TIMEOUT=${TEST_TIMEOUT:-300} run_sel "$sel" || status=1
    done
    ;;
  all-reduce)
    # Needs 2+ GPUs (nvidia-h200-x2 ...): NCCL through torch.distributed, then
    # redjit's kernels on the same GPUs, eager and from a CUDA graph.
    echo "== NCCL (torch.distributed), then redjit bench all-reduce, same call"
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
    python3 stage/scripts/torch_ref.py --families all_reduce --n 1 --no-compile \
      --ar-bytes "${AR_BYTES:-8K,64K,256K,1M,4M,16M,64M,256M}" --out "$OUT/torch-ar.json" 2>&1 | tee "$OUT/torch-ar.log" || status=1
    for mode in "" --graph; do
      "$BIN/redjit" bench all-reduce --bytes "${AR_BYTES:-8K,64K,256K,1M,4M,16M,64M,256M}" $mode \
        --compare "$OUT/torch-ar.json" --json "$OUT/bench-ar${mode:+-graph}.json" 2>&1 | tee -a "$OUT/bench-ar.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    ;;
  fused-norm)
    # Needs 2+ GPUs: NCCL then torch.compile's add + RMS norm, then redjit's
    # fused all-reduce + residual + RMS norm beside its plain all-reduce and
    # the two-launch pair, one process a GPU, from CUDA graphs.
    echo "== NCCL + torch.compile add + RMS norm, then redjit bench all-reduce --fused-norm, same call"
    python3 stage/scripts/torch_ref.py --families all_reduce_norm --n 1048576 \
      --out "$OUT/torch-all-reduce-norm.json" 2>&1 | tee "$OUT/torch-all-reduce-norm.log" || status=1
    "$BIN/redjit" bench all-reduce --fused-norm --graph --processes --child-timeout 400 \
      --json "$OUT/bench-all-reduce-norm.json" 2>&1 | tee "$OUT/bench-all-reduce-norm.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  nms)
    echo "== torchvision.ops.nms, then redjit bench nms, same call"
    python3 stage/scripts/torch_ref.py --families nms --n 1048576 --nms-boxes 20000,100000 --out "$OUT/torch-nms.json" 2>&1 | tee "$OUT/torch-nms.log" || status=1
    "$BIN/redjit" bench nms --sizes 20000,100000 --json "$OUT/bench-nms.json" --compare "$OUT/torch-nms.json" 2>&1 | tee "$OUT/bench-nms.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  softmax-all)
    echo "== PyTorch whole-array softmax, then redjit bench softmax-all, same call"
    python3 stage/scripts/torch_ref.py --families softmax_all --n 268435456 --out "$OUT/torch-softmax-all.json" 2>&1 | tee "$OUT/torch-softmax-all.log" || status=1
    "$BIN/redjit" bench softmax-all --json "$OUT/bench-softmax-all.json" --compare "$OUT/torch-softmax-all.json" 2>&1 | tee "$OUT/bench-softmax-all.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  sanitize)
    # compute-sanitizer over small configurations of each family (the tools slow
    # kernels by orders of magnitude): SANITIZE="bin:filter ..." overrides.
    echo "== compute-sanitizer memcheck / racecheck / synccheck"
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
    for sel in ${SANITIZE:-gpu_reduce_copy:each_buffer_misaligned_small gpu_reduce_copy:bad_calls gpu_reduce:bad_calls gpu_norm:bad_calls gpu_nms:hand_cases gpu_softmax_all:bad_calls gpu_all_reduce:one_small}; do
      bin=${sel%%:*}
      filter=${sel#*:}
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        log="$OUT/sanitize-$bin-$filter-$tool.log"
        timeout "${SANITIZE_TIMEOUT:-120}" "$cs" --tool "$tool" --error-exitcode 9 "$BIN/$bin" --ignored --test-threads=1 "$filter" >"$log" 2>&1
        rc=$?
        echo "$bin:$filter $tool: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
        [ $rc -eq 0 ] || status=1
      done
    done
    ;;
  norm-quick)
    # The default ladder against a PyTorch/Triton JSON of an earlier call of the
    # same machine kind (TORCH_NORM_JSON), without re-running PyTorch.
    echo "== redjit bench norm against ${TORCH_NORM_JSON:-}"
    "$BIN/redjit" bench norm --json "$OUT/bench-norm.json" ${TORCH_NORM_JSON:+--compare "$TORCH_NORM_JSON"} 2>&1 | tee "$OUT/bench-norm.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  norm-variants)
    echo "== redjit bench norm --variants at ${NORM_SHAPES:-32768x4096,8192x16384,262144x128}"
    timeout "${VARIANTS_TIMEOUT:-90}" "$BIN/redjit" bench norm --variants --shapes "${NORM_SHAPES:-32768x4096,8192x16384,262144x128}" \
      --json "$OUT/bench-norm-variants.json" 2>&1 | tee "$OUT/bench-norm-variants.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    ;;
  misaligned)
    # Issue 3's misaligned figures: every mix of per-buffer offsets (bench
    # reduce-copy --misaligned), against the aligned kernel in the same process
    # (MISALIGNED_SPECS overrides the list).
    echo "== redjit bench reduce-copy --misaligned"
    for spec in ${MISALIGNED_SPECS:-reduce_copy_u4_f32_bf16_Ta_T_sum_sr reduce_copy_u4_f32_f16_Ta_T_sum_sr reduce_copy_u4_f32_bf16_AA_T_sum_sr reduce_copy_u4_f32_bf16_Ta_T_sum_rn reduce_copy_u4_f32_bf16_TA_A_sum_rn}; do
      "$BIN/redjit" bench reduce-copy --misaligned --spec "$spec" --json "$OUT/misaligned-$spec.json" 2>&1 | tee -a "$OUT/misaligned.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    ;;
  candle)
    # redjit-candle (issue 59): its GPU tests, its bench beside candle's own
    # kernels, and the transformer-block example. candle's CUDA build links
    # cuBLAS, cuRAND, the runtime and NCCL by soname: PyTorch's CUDA 13 wheels
    # hold them.
    echo "== redjit-candle"
    [ -f stage/candle.tar.xz ] && tar -xJf stage/candle.tar.xz -C "$BIN"
    nv=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])')
    export LD_LIBRARY_PATH="$nv/cu13/lib:$nv/nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export REDJIT_CACHE_DIR=/tmp/redjit-cache-candle
    t0=$(date +%s)
    timeout "${TEST_TIMEOUT:-300}" "$BIN/candle_gpu" --ignored --test-threads=3 >"$OUT/candle-gpu.log" 2>&1 || status=1
    echo "candle_gpu: rc=$? in $(($(date +%s) - t0)) s"
    grep -E "^test |test result|panicked" "$OUT/candle-gpu.log" | head -30
    "$BIN/candle_cpu" >"$OUT/candle-cpu.log" 2>&1 || status=1
    grep "test result" "$OUT/candle-cpu.log"
    "$BIN/candle_bench" ${CANDLE_BENCH_ARGS:-} --out "$OUT/candle-bench.jsonl" 2>&1 | tee "$OUT/candle-bench.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    for t in ${CANDLE_BLOCK_TOKENS:-128 1024}; do
      "$BIN/candle_block" "$t" 2>&1 | tee -a "$OUT/candle-block.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
    # The record: benchmarks/<gpu>/bench-candle.json (`redjit report` reads it).
    python3 - "$OUT" <<'PY'
import datetime, json, re, sys
out = sys.argv[1]
ops = [json.loads(l) for l in open(f"{out}/candle-bench.jsonl") if l.strip()]
blocks = [json.loads(l) for l in open(f"{out}/candle-block.log") if l.startswith('{"example"')]
lock = open("candle/Cargo.lock").read()
version = re.search(r'name = "candle-core"\nversion = "([^"]+)"', lock).group(1)
json.dump({"date": datetime.date.today().isoformat(), "gpu": ops[0]["gpu"] if ops else "",
           "candle_version": version, "candle_ops": ops, "candle_blocks": blocks},
          open(f"{out}/bench-candle.json", "w"), indent=1)
PY
    ;;
  *) echo "unknown step $step"; status=2 ;;
  esac
done
exit $status
