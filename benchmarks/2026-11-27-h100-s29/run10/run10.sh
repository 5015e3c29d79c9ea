#!/bin/bash
# run10: L2 prefetch-size hints (probe): the row loads (ld.global.nc ... .L2::<n>B) and the staging
# cp.async (.L2::<n>B) at 128 and 256 bytes, and cp.async alone at 256, against the code without.
# Binaries: stage/bin/<name> = REDJIT_CACHE_DIR=/tmp/rjcache-<name> REDJIT_PROBE_L2PF=<q>
# REDJIT_PROBE_CPPF=<q> redjit-probe, a build whose source began with #define RJ_L2PF / RJ_CPPF
# from those variables, put in every vector ld and cp.async of the prelude (not kept).
cd "$(dirname "$0")/.."
N=262144x128; L=64x1048576; O=4x1000003
LIST="$N@norm_layernorm_bf16_bf16_w8x4 $N@norm_logsoftmax_online_bf16_bf16_w8x4 $N@norm_rmsnorm_bf16_bf16_w8x4 $N@norm_layernorm_f32_f32_w16x2 \
$L@norm_layernorm_res_f32_f32_s512x4_p_x $L@norm_layernorm_f32_f32_s512x8_p_x $L@norm_softmax_online_bf16_bf16_s512x8_p_x \
$O@norm_layernorm_res_bf16_bf16_s512x4_o2_g $O@norm_rmsnorm_bf16_bf16_s512x4_o2_g 32768x4096@norm_layernorm_bf16_bf16_b256x4" \
BINS="base pf256 pf128 cp256" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run10.log
