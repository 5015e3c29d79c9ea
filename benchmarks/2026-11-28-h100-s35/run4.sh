#!/bin/bash
# run4: split rows on an SM partition (a green context): the new gpu_norm test
# split_rows_on_an_sm_partition, then split tests that the launcher's change (resident
# blocks counted on the stream's SMs) touches; memcheck on the partition test.
stage/bin/redjit info 2>&1 | head -12
T=""
for t in split_rows_on_an_sm_partition one_wave_rows_without_a_cooperative_launch split_rows_replayed_from_a_captured_graph paired_split_twins_at_every_shift split_workspace_serves_calls_of_other_row_counts bad_calls_are_errors_not_launches the_issue_shapes; do T="$T gpu_norm:$t"; done
t0=$(date +%s)
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="$T" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head -40
echo "tests done in $(($(date +%s) - t0)) s"
grep -E "panicked|Error|error" -A5 $OUT/t/gpu_norm-split_rows_on_an_sm_partition.log | head -30
OUT=$OUT/t SANITIZE="gpu_norm:split_rows_on_an_sm_partition" SANITIZE_TOOLS="memcheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY" | head
echo "all done in $(($(date +%s) - t0)) s"
cd $OUT && tar -czf t.tgz t && rm -rf t
