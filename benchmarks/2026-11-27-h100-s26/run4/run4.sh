set -u
L=""
ab() { local shape=$1; shift; for k in "$@"; do L="$L $shape@norm_$k@redjit-base $shape@norm_$k@redjit"; done; }
one() { local shape=$1 bin=$2; shift 2; for k in "$@"; do L="$L $shape@norm_$k@$bin"; done; }
S=8192x32768
ab $S logsoftmax_online_bf16_bf16_b512x16_x softmax_safe_bf16_bf16_b512x16_x rmsnorm_res_bf16_bf16_b512x16_x softmax_online_bf16_f32_b512x16_x rmsnorm_f32_bf16_b512x16_x rmsnorm_res_bf16_f32_b512x16_x
one $S redjit-base layernorm_res_f32_f32_b512x16_n layernorm_f32_f32_b512x16_n
one $S redjit layernorm_res_f32_f32_b512x16_x layernorm_f32_f32_b512x16_x layernorm_bf16_f32_s512x8_c2_p layernorm_bf16_f32_b512x16_x
T=8192x16384
ab $T softmax_online_bf16_bf16_b512x8_x rmsnorm_bf16_bf16_b512x8_x
one $T redjit layernorm_bf16_f32_s256x8_c2_p layernorm_bf16_f32_b512x8_x layernorm_f32_bf16_s256x8_c2_p layernorm_f32_bf16_b512x8_x layernorm_f32_bf16_b512x8_o2_x
U=32768x4096
ab $U softmax_online_bf16_bf16_b256x4_x logsoftmax_online_f32_f32_b256x4_x layernorm_bf16_f32_b256x4_x
ROUNDS=2 LIST="$L" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee $OUT/ab.txt
GPU_TESTS="gpu_norm:exact_kernels_and_their_ragged_twins gpu_norm:the_issue_shapes" TEST_PARALLEL=1 TEST_TIMEOUT=400 bash stage/scripts/gpu-run.sh some-tests 2>&1 | tail -8
