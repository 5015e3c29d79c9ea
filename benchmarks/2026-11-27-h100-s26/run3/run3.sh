set -u
S=8192x32768
L="$S@norm_layernorm_f32_f32_b512x16_n@redjit"
for b in redjit-bx redjit-x2 redjit-x4; do L="$L $S@norm_layernorm_f32_f32_b512x16_x@$b"; done
for b in redjit-x2 redjit-x4; do L="$L $S@norm_layernorm_f32_f32_b512x16_n_x@$b"; done
L="$L $S@norm_layernorm_res_f32_f32_b512x16_n@redjit $S@norm_layernorm_res_f32_f32_b512x16_x@redjit-x2 $S@norm_layernorm_res_f32_f32_b512x16_n_x@redjit-x2 $S@norm_layernorm_res_f32_f32_b512x16_n_x@redjit-x4"
L="$L $S@norm_layernorm_res_bf16_bf16_b512x16_n@redjit $S@norm_layernorm_res_bf16_bf16_b512x16_n_x@redjit-x2"
for b in redjit redjit-bx redjit-x2 redjit-x4; do L="$L $S@norm_layernorm_bf16_bf16_b512x16_x@$b"; done
for k in rmsnorm_f32_f32 rmsnorm_bf16_bf16 softmax_online_bf16_bf16; do for b in redjit redjit-bx; do L="$L $S@norm_${k}_b512x16_x@$b"; done; done
for b in redjit redjit-bx redjit-x2; do L="$L 8192x16384@norm_layernorm_bf16_bf16_b512x8_x@$b"; done
ROUNDS=2 LIST="$L" bash stage/scripts/gpu-norm-ab.sh 2>&1 | tee $OUT/ab.txt
