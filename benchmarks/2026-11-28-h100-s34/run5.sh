#!/usr/bin/env bash
# Call 5 (session 34): the flagged states in 16-byte pairs (`redjit`, this
# session's change) against b936bfa (`redjit-b93`): gpu_norm's split tests and
# the issue shapes, memcheck on two of them; every default kernel at 64x1048576
# and 4x1000003, one process a binary and shape, alternating, two rounds; then
# PyTorch (inputs rotated over 4x L2) beside `redjit bench norm` at 4x1000003.
set -uo pipefail
W=$OUT/run5; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
T=""
for t in paired_split_twins_at_every_shift split_softmax_twins_special_values split_rows_off_the_pack_grid_small split_twins_of_every_dtype_pair split_workspace_serves_calls_of_other_row_counts split_rows_replayed_from_a_captured_graph deferred_general_twins_small prefetching_split_cohorts_small split_rows_are_bit_identical_run_to_run the_issue_shapes; do T="$T gpu_norm:$t"; done
OUT=$W/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="$T" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head -40
OUT=$W/t SANITIZE="gpu_norm:paired_split_twins_at_every_shift gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck" bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY" | head
for round in 1 2; do
  for shape in 64x1048576 4x1000003; do
    for bin in redjit-b93 redjit; do
      j=$W/r$round-$bin-$shape
      REDJIT_REQUIRE_GPU=1 stage/bin/$bin bench norm --shapes $shape --json $j.json > $j.log 2>&1 || echo "$bin $shape rc=$?"
      python3 -c "
import json,sys
d=json.load(open('$j.json'))
print(' '.join(f\"{k['name'].replace('norm_','')}={k['gbps']:.0f}\" for k in d['kernels']))" | sed "s/^/r$round $bin $shape: /"
    done
  done
done
python3 stage/scripts/torch_ref.py --families norm --norm-shapes 4x1000003 --out "$W/torch-norm.json" > "$W/torch-norm.log" 2>&1; echo "torch_ref rc=$?"
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 4x1000003 --json "$W/bench-norm.json" --compare "$W/torch-norm.json" > "$W/bench-norm.log" 2>&1; echo "bench rc=$?"
cd $OUT && tar -czf run5.tgz run5 && rm -rf run5
