set -u
echo "== tests, 5 buffers"
REDJIT_EXP_BUFFERS=5 GPU_TESTS="gpu_norm:prefetching_split_cohorts gpu_norm:split_rows_in_balanced_chunks gpu_norm:the_launcher_picks_the_staging_twin" TEST_PARALLEL=1 TEST_TIMEOUT=300 bash stage/scripts/gpu-run.sh some-tests 2>&1 | tail -12
echo "== A/B"
LIST="64x1048576@norm_layernorm_f32_f32_s512x4_p 64x1048576@norm_layernorm_bf16_bf16_s512x8_p_x 64x1048576@norm_softmax_online_bf16_bf16_s512x8_p_x 64x1048576@norm_logsoftmax_online_bf16_bf16_s512x8_p_x 64x1048576@norm_rmsnorm_f32_f32_s512x4_p 64x1048576@norm_softmax_online_f32_f32_s512x4_p_x" BINS="b3 b4 b5" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
