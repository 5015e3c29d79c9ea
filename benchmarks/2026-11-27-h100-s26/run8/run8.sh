set -u
S=4096x49152
SHARED=1 ROUNDS=2 LIST="$S@norm_layernorm_res_bf16_bf16_l512x4 $S@norm_layernorm_res_bf16_bf16_s512x8_p_x 4096x57344@norm_layernorm_res_bf16_bf16_l512x4 4096x57344@norm_layernorm_res_bf16_bf16_s512x8_p_x" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee $OUT/ab.txt
export TEST_PARALLEL=1
NORM_TESTS="gpu_norm:loop_rows_of_every_op gpu_norm:the_ladders_loop_rows gpu_norm:mixed_rows_of_vocabulary_length gpu_norm:exact_kernels_and_their_ragged_twins" \
NORM_SANITIZE="gpu_norm:loop_rows_small" \
NORM_SHAPES="4096x33000,4096x36864,4096x50256" \
bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/check.txt | cut -c1-2500
