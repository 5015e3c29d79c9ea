set -u
# redjit: this session's e164c6f; nob: the same with layer norm's bias never
# loaded (bv = 0 in rj_norm_layer_t::row's finishing loop), a speed probe only.
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x@redjit $S@norm_layernorm_f32_f32_s512x8_p_x@nob $S@norm_rmsnorm_f32_f32_s512x8_p@redjit $S@norm_rmsnorm_f32_f32_s512x8_p_x@redjit" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh
