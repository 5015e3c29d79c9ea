# run7 (call 15): eleven gpu_norm tests on the final build, then PyTorch eager, torch.compile
# and redjit's defaults at 4x1000003 in one call (table.md: norm_table_md.py).
mkdir -p $OUT/t; OUT=$OUT/t TEST_TIMEOUT=420 TEST_PARALLEL=1 GPU_TESTS="gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_with_vectors gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_rows_in_balanced gpu_norm:the_issue_shapes gpu_norm:every_op_and_dtype_pair_at_odd gpu_norm:softmax_special_values gpu_norm:softmax_rows_of_vocabulary gpu_norm:mixed_rows_of_vocabulary" bash stage/scripts/gpu-run.sh some-tests
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4x1000003 bash scripts/gpu-norm-check.sh
