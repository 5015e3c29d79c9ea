set -u
export TEST_PARALLEL=1
NORM_TESTS="gpu_norm:exact_kernels_and_their_ragged_twins gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths gpu_norm:mixed_rows_of_vocabulary_length gpu_norm:the_issue_shapes" \
NORM_SANITIZE="gpu_norm:exact_kernels_small" \
NORM_SHAPES="32768x4096,8192x16384,8192x32768,262144x128" \
bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/check.txt | cut -c1-3000
