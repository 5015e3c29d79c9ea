set -u
LO=""; LN=""
for S in 4096x33000 4096x36864 4096x50256; do
  LO="$LO $S@norm_layernorm_res_bf16_bf16_s512x8_p $S@norm_layernorm_res_bf16_bf16_l512x4 $S@norm_layernorm_res_f32_f32_s512x4_p $S@norm_layernorm_res_f32_f32_l512x8 $S@norm_rmsnorm_res_bf16_bf16_s512x8_p $S@norm_rmsnorm_res_f32_f32_s512x4_p"
  LN="$LN $S@norm_layernorm_res_bf16_bf16_l512x4 $S@norm_layernorm_res_bf16_bf16_l512x8 $S@norm_layernorm_res_f32_f32_l512x8 $S@norm_layernorm_res_f32_f32_l512x4 $S@norm_rmsnorm_res_bf16_bf16_l512x4 $S@norm_rmsnorm_res_bf16_bf16_l512x8 $S@norm_rmsnorm_res_f32_f32_l512x8 $S@norm_rmsnorm_res_f32_f32_l512x4"
done
for r in 1 2; do
SHARED=1 ROUNDS=1 BINS=redjit-old TAG="old$r" LIST="$LO" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee -a $OUT/ab.txt
SHARED=1 ROUNDS=1 BINS=redjit TAG="new$r" LIST="$LN" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee -a $OUT/ab.txt
done
