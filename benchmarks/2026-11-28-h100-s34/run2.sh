#!/usr/bin/env bash
# Call 2 (session 34), build b936bfa (its test helper host_columns shared by
# check and the captured-graph test): gpu_norm tests, then memcheck on the
# captured-graph test.
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T="gpu_norm:split_rows_replayed_from_a_captured_graph gpu_norm:split_workspace_serves_calls_of_other_row_counts gpu_norm:layer_norm_rows_off_zero gpu_norm:paired_split_twins_at_every_shift gpu_norm:the_issue_shapes"
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="$T" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked|^test " | head -40
OUT=$OUT/t SANITIZE="gpu_norm:split_rows_replayed_from_a_captured_graph" SANITIZE_TOOLS="memcheck" bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY|errors" | head
cd $OUT && tar -czf t.tgz t && rm -rf t
