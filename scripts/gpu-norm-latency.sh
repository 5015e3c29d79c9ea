#!/usr/bin/env bash
# One device call: where the time of a short norm launch goes. For each SPEC
# (kernel names as the runtime prints them) at each of SHAPES: the bench's
# median with cudarc's event tracking on (the default) and off (--untracked),
# then the kernel's own duration on the GPU under Nsight Compute at the
# clocks the bench runs at (--clock-control none, no cache flush), so that
# host launch time, per-buffer event traffic and kernel time come apart.
# BIN runs another binary under stage/bin; NO_NCU=1 leaves Nsight Compute out.
# Logs in $OUT/norm-latency-BIN.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
BIN=stage/bin/${BIN:-redjit}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$W/gpu.txt"
for spec in ${SPECS:?set SPECS}; do
  for flag in "" --untracked; do
    log="$W/bench-$spec${flag:+-untracked}.log"
    REDJIT_REQUIRE_GPU=1 "$BIN" bench norm --spec "$spec" --shapes "${SHAPES:?set SHAPES}" $flag > "$log" 2>&1 \
      || echo "$spec $flag rc=$?"
    grep -E "^norm_|d2d copy" "$log" | sed "s|^|${flag:-tracked} |"
  done
  [ -n "${NO_NCU:-}" ] && continue
  for shape in ${SHAPES//,/ }; do
    log="$W/ncu-$spec-$shape.txt"
    REDJIT_REQUIRE_GPU=1 timeout 300 "$NCU" --clock-control none --cache-control none \
      -k "regex:^norm_" --launch-skip 3 --launch-count 5 --metrics gpu__time_duration.sum \
      "$BIN" bench norm --spec "$spec" --shapes "$shape" --iters 3 --warmup 3 --untracked > "$log" 2>&1 \
      || echo "$spec $shape ncu rc=$?"
    echo "ncu $spec $shape kernel duration: $(grep -E "gpu__time_duration.sum" "$log" | awk '{print $(NF-1), $NF}' | tr '\n' ' ')"
  done
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/norm-latency-${BIN##*/}.tgz" .
