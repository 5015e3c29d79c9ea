#!/usr/bin/env bash
# Session 28, run12: the gpu_norm tests whose bodies the check_runs /
# check_with_stats_at refactor touched, as concurrent processes.
set -u
cp benchmarks/2026-11-27-h100-s28/run12/run12.sh "$OUT/" 2>/dev/null
T="cluster_rows_of_every_op deferred_general_twins_small deferred_general_twins_stage_rows_off_the_grid every_layout_variant_on_strided_rows loop_rows_of_every_op prefetching_split_cohorts_take_many_rows split_rows_are_bit_identical_run_to_run split_rows_off_the_pack_grid_small split_twins_with_vectors_off_the_rows_grid"
W=$(mktemp -d)
OUT="$W" TEST_TIMEOUT=420 TEST_PARALLEL=1 GPU_TESTS="$(for t in $T; do printf 'gpu_norm:%s ' $t; done)" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
