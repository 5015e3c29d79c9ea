#!/usr/bin/env bash
# One device call: Nsight Compute on norm kernels at given shapes, to see what
# limits them (issue, memory, latency, L2). PAIRS="spec@ROWSxCOLS ..." (the
# kernel names as the runtime prints them). ncu locks clocks to base and
# flushes caches between passes: its durations are not the bench's, its ratios
# and stall reasons are what it is for. SECTIONS adds sections (e.g.
# "SourceCounters"); BIN runs another binary under stage/bin; SOURCE=1 exports
# each report and its SASS with the stall samples an instruction (.sass.csv).
# Reports in $OUT/ncu-BIN.tgz.
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
BIN=${BIN:-redjit}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$W/gpu.txt"
for pair in ${PAIRS:?set PAIRS}; do
  spec=${pair%@*}
  shape=${pair#*@}
  base="$W/$BIN-$spec-$shape"
  REDJIT_REQUIRE_GPU=1 timeout 300 "$NCU" -k "regex:^${spec}\$" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats \
    $(for s in ${SECTIONS:-}; do echo --section "$s"; done) ${SOURCE:+-o "$base"} \
    "stage/bin/$BIN" bench norm --spec "$spec" --shapes "$shape" --iters 3 --warmup 1 \
    > "$base.txt" 2>&1 || echo "$pair rc=$?"
  if [ -n "${SOURCE:-}" ]; then
    # The report's SASS with its stall samples an instruction.
    "$NCU" -i "$base.ncu-rep" --page source --print-source sass --csv \
      > "$base.sass.csv" 2>&1 || echo "$pair source rc=$?"
    "$NCU" -i "$base.ncu-rep" --page details --print-details all \
      > "$base.details.txt" 2>&1 || true
    cat "$base.details.txt" >> "$base.txt"
  fi
  grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|Registers Per|Executed Ipc A" "$base.txt" | sed "s|^|$pair |"
done
mkdir -p "$RESULTS"
tar -C "$W" -czf "$RESULTS/ncu-$BIN.tgz" .
