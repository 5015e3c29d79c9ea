set -u
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x@wide $S@norm_layernorm_f32_f32_s512x8_p_x@wf
$S@norm_layernorm_res_f32_f32_s512x4_p_x@redjit $S@norm_layernorm_res_f32_f32_s512x4_p_x@wf $S@norm_layernorm_res_f32_f32_s512x4_p_x@f64
4096x65536@norm_layernorm_f32_f32_s512x8_p_x@wide 4096x65536@norm_layernorm_f32_f32_s512x8_p_x@wf" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh
