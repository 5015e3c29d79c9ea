#!/bin/bash
# run5: split_rows_on_an_sm_partition again (run4's failed at its last step: the refused
# call lacked the bias layer norm needs), plain and under memcheck.
t0=$(date +%s)
OUT=$OUT/t TEST_TIMEOUT=200 GPU_TESTS="gpu_norm:split_rows_on_an_sm_partition" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head
grep -E "panicked" -A3 $OUT/t/gpu_norm-split_rows_on_an_sm_partition.log | head
OUT=$OUT/t SANITIZE="gpu_norm:split_rows_on_an_sm_partition" SANITIZE_TOOLS="memcheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY" | head
echo "all done in $(($(date +%s) - t0)) s"
cd $OUT && tar -czf t.tgz t && rm -rf t
