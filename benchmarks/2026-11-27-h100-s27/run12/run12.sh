set -u
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x $S@norm_layernorm_res_f32_f32_s512x4_p_x $S@norm_layernorm_bf16_bf16_s512x16_p_x" BINS="redjit keep keepst" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
