# run10 (call 18): a probe build whose one-pass flagged kernels all load the epoch beside the
# first ticket and take later tickets at the end of an item (redjit) against 32bc62a
# (redjit-prev), two rounds; then five gpu_norm tests on the probe build.
LIST="4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_softmax_online_f32_f32_s512x8_g 4x1000003@norm_logsoftmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g 4x1000003@norm_rmsnorm_res_f32_f32_s512x4_o2_g" BINS="redjit-prev redjit" ROUNDS=2 bash scripts/gpu-norm-ab.sh
mkdir -p $OUT/t; OUT=$OUT/t TEST_TIMEOUT=300 TEST_PARALLEL=1 GPU_TESTS="gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair gpu_norm:the_issue_shapes" bash stage/scripts/gpu-run.sh some-tests
