set -u
L=""
add() { local shape=$1 base=$2; shift 2; for k in "$@"; do L="$L $shape@${base}_$k"; done; }
S=64x1048576
add $S norm_layernorm_res_f32_f32 s512x4_p_x s256x8_p_x s256x8_p
add $S norm_layernorm_f32_f32 s512x4_p s256x8_p s256x8_p_x
add $S norm_layernorm_bf16_bf16 s512x8_p_x s256x16_p_x
G=64x1048573
add $G norm_layernorm_res_f32_f32 s512x4_p_x s256x8_p_x
add $G norm_layernorm_f32_f32 s512x4_p s256x8_p
add $G norm_layernorm_bf16_bf16 s512x8_p_x s256x16_p_x
SHARED=1 ROUNDS=3 LIST="$L" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee $OUT/ab.txt
