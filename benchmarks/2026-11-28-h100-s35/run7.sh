#!/bin/bash
# run7: be37654 (only split rows ask for the stream's SMs): the partition test, the ticket
# fallback, bad calls, and tests of the layouts that now skip the query (warp, block,
# prefetching block, exact), as concurrent processes.
T=""
for t in split_rows_on_an_sm_partition one_wave_rows_without_a_cooperative_launch bad_calls_are_errors_not_launches prefetching_blocks_take_many_rows_each exact_kernels_small softmax_special_values_large_magnitudes_and_scale split_rows_replayed_from_a_captured_graph; do T="$T gpu_norm:$t"; done
t0=$(date +%s)
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="$T" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head -30
echo "tests done in $(($(date +%s) - t0)) s"
cd $OUT && tar -czf t.tgz t && rm -rf t
