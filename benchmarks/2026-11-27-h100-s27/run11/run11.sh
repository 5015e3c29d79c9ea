set -u
echo "== tests, f32 layer norm's deferred rows reread"
export REDJIT_EXP_REREAD=1
GPU_TESTS="gpu_norm:layer_norm_rows_of_larger_chunks gpu_norm:prefetching_split_cohorts_take_many_rows gpu_norm:prefetching_split_cohorts_small gpu_norm:exact_split_cohorts_and_their_twins" TEST_PARALLEL=1 TEST_TIMEOUT=300 bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|assert" | head -20
OUT=$OUT/san SANITIZE="gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|SUMMARY" | head
unset REDJIT_EXP_REREAD
echo "== A/B"
S=64x1048576
M=256x262144
N=4096x65536
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x $S@norm_layernorm_f32_f32_s512x4_p $M@norm_layernorm_f32_f32_s512x8_p_x $M@norm_layernorm_f32_f32_s512x4_p $N@norm_layernorm_f32_f32_s512x8_p_x 64x1000000@norm_layernorm_f32_f32_s512x8_p 64x1000000@norm_layernorm_f32_f32_s512x4_p" BINS="redjit rr" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
