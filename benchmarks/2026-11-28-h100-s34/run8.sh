#!/usr/bin/env bash
# Call 8 (session 34): the final kernels (df8c309's build; later commits change
# comments and records only): the 23 gpu_norm tests run5 did not run, as
# concurrent processes.
set -uo pipefail
T=""
for t in every_op_and_dtype_pair_at_odd_row_lengths every_layout_variant_on_strided_rows layer_norm_rows_off_zero softmax_special_values_large_magnitudes_and_scale split_twins_with_vectors_off_the_rows_grid prefetching_blocks_take_many_rows_each prefetching_split_cohorts_take_many_rows deferred_general_twins_stage_rows_off_the_grid the_launcher_picks_the_staging_twin_for_many_long_rows softmax_rows_of_vocabulary_lengths split_rows_in_balanced_chunks cluster_rows_of_every_op loop_rows_of_every_op loop_rows_small mixed_rows_of_vocabulary_length cluster_rows_small the_ladders_cluster_rows the_ladders_loop_rows layer_norm_rows_of_larger_chunks exact_kernels_and_their_ragged_twins exact_kernels_small exact_split_cohorts_and_their_twins bad_calls_are_errors_not_launches; do T="$T gpu_norm:$t"; done
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=470 GPU_TESTS="$T" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head -60
cd $OUT && tar -czf t.tgz t && rm -rf t
