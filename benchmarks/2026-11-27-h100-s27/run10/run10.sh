set -u
S=4x1000003
T=64x1048573
L=""
for k in norm_rmsnorm_bf16_bf16_s512x4_o2_g norm_rmsnorm_bf16_bf16_s512x8_g norm_rmsnorm_bf16_bf16_s256x8_o2_g norm_rmsnorm_bf16_bf16_s256x8_o3_g norm_rmsnorm_bf16_bf16_s512x4_g norm_rmsnorm_res_bf16_bf16_s512x4_o2_g norm_rmsnorm_res_bf16_bf16_s512x8_g norm_rmsnorm_res_bf16_bf16_s256x8_o2_g norm_layernorm_bf16_bf16_s512x4_o2_g norm_layernorm_bf16_bf16_s512x8_g norm_layernorm_bf16_bf16_s256x8_o2_g; do L="$L $S@$k"; done
for k in norm_rmsnorm_bf16_bf16_s512x4_o2_g norm_rmsnorm_bf16_bf16_s256x8_o2_g norm_rmsnorm_bf16_bf16_s256x8_o3_g norm_rmsnorm_res_bf16_bf16_s512x4_o2_g norm_rmsnorm_res_bf16_bf16_s256x8_o2_g; do L="$L $T@$k"; done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
