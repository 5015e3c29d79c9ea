set -u
echo "== tests, bulk staging"
export REDJIT_EXP_BULK=1
GPU_TESTS="gpu_norm:layer_norm_rows_of_larger_chunks gpu_norm:exact_split_cohorts_and_their_twins gpu_norm:prefetching_split_cohorts_small" TEST_PARALLEL=1 TEST_TIMEOUT=300 bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|assert" | head -20
OUT=$OUT/san SANITIZE="gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|SUMMARY" | head
unset REDJIT_EXP_BULK
echo "== A/B"
S=64x1048576
N=4096x65536
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x $S@norm_layernorm_res_f32_f32_s512x4_p_x $S@norm_softmax_online_f32_f32_s512x8_p_x $S@norm_logsoftmax_online_f32_f32_s512x8_p_x $S@norm_rmsnorm_f32_f32_s512x8_p_x $S@norm_rmsnorm_f32_f32_s512x8_p@redjit $N@norm_layernorm_f32_f32_s512x8_p_x $N@norm_layernorm_res_f32_f32_s512x4_p_x" BINS="redjit bulk" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh
