set -u
echo "== tests, wide fetch for every layer norm"
REDJIT_EXP_WIDE=1 GPU_TESTS="gpu_norm:prefetching_split_cohorts" TEST_PARALLEL=1 TEST_TIMEOUT=300 bash stage/scripts/gpu-run.sh some-tests 2>&1 | tail -6
echo "== A/B"
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x4_p@redjit $S@norm_layernorm_f32_f32_s512x4_p@wide $S@norm_layernorm_f32_f32_s512x8_p_x@wide $S@norm_layernorm_f32_f32_s512x4_p_x@wide $S@norm_layernorm_res_f32_f32_s512x4_p_x@redjit $S@norm_layernorm_res_f32_f32_s512x4_p_x@wide $S@norm_layernorm_bf16_bf16_s512x8_p_x@redjit $S@norm_layernorm_bf16_bf16_s512x16_p_x@redjit" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh
