#!/bin/bash
# run6: the final build (13fdb72): every gpu_norm test (35) as concurrent processes, gpu_nms,
# gpu_softmax_all.
T=""
for t in every_op_and_dtype_pair_at_odd_row_lengths every_layout_variant_on_strided_rows layer_norm_rows_off_zero softmax_special_values_large_magnitudes_and_scale split_softmax_twins_special_values split_rows_off_the_pack_grid_small paired_split_twins_at_every_shift split_twins_with_vectors_off_the_rows_grid split_twins_of_every_dtype_pair prefetching_blocks_take_many_rows_each prefetching_split_cohorts_take_many_rows deferred_general_twins_stage_rows_off_the_grid the_launcher_picks_the_staging_twin_for_many_long_rows softmax_rows_of_vocabulary_lengths split_rows_in_balanced_chunks cluster_rows_of_every_op loop_rows_of_every_op loop_rows_small mixed_rows_of_vocabulary_length cluster_rows_small the_ladders_cluster_rows the_ladders_loop_rows deferred_general_twins_small prefetching_split_cohorts_small layer_norm_rows_of_larger_chunks exact_kernels_and_their_ragged_twins exact_kernels_small exact_split_cohorts_and_their_twins split_workspace_serves_calls_of_other_row_counts split_rows_replayed_from_a_captured_graph one_wave_rows_without_a_cooperative_launch split_rows_on_an_sm_partition split_rows_are_bit_identical_run_to_run the_issue_shapes bad_calls_are_errors_not_launches ; do T="$T gpu_norm:$t"; done
t0=$(date +%s)
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="$T gpu_nms gpu_softmax_all" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|FAIL|panicked" | head -60
echo "tests done in $(($(date +%s) - t0)) s"
cd $OUT && tar -czf t.tgz t && rm -rf t
