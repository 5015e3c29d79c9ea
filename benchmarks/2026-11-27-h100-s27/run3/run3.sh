set -u
S=64x1048576
M=256x262144
N=4096x65536
LIST="$S@norm_layernorm_f32_f32_s512x4_p@redjit $S@norm_layernorm_f32_f32_s512x8_p_x@wide $S@norm_layernorm_f32_f32_s256x8_o2_p_x@wn
$S@norm_layernorm_res_f32_f32_s512x4_p_x@redjit $S@norm_layernorm_res_f32_f32_s256x4_o2_p_x@wn
$S@norm_layernorm_bf16_bf16_s512x8_p_x@redjit $S@norm_layernorm_bf16_bf16_s512x16_p_x@redjit
$S@norm_layernorm_f16_f16_s512x8_p_x@redjit $S@norm_layernorm_f16_f16_s512x16_p_x@redjit
$M@norm_layernorm_f32_f32_s512x4_p@redjit $M@norm_layernorm_f32_f32_s512x8_p_x@wide
$M@norm_layernorm_bf16_bf16_s512x8_p_x@redjit $M@norm_layernorm_bf16_bf16_s512x16_p_x@redjit
$N@norm_layernorm_f32_f32_s512x4_p@redjit $N@norm_layernorm_f32_f32_s512x8_p_x@wide
$N@norm_layernorm_bf16_bf16_s512x8_p_x@redjit $N@norm_layernorm_bf16_bf16_s512x16_p_x@redjit" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh
