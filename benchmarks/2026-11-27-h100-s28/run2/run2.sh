#!/usr/bin/env bash
# Session 28, run2: the 16-bit norms' staging general twins (_p_g) at 4x1000003
# against the defaults there (two-pass direct twins s512x4_o2_g) and the
# aligned deferred kernels at 4x1000008; two rounds, each kernel alone.
set -u
S=4x1000003 A=4x1000008
LIST="$S@norm_layernorm_bf16_bf16_s512x4_o2_g $S@norm_layernorm_bf16_bf16_s512x8_p_g $S@norm_layernorm_bf16_bf16_s512x4_p_g $A@norm_layernorm_bf16_bf16_s512x8_p
$S@norm_rmsnorm_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_bf16_bf16_s512x4_p_g $A@norm_rmsnorm_bf16_bf16_s512x16_p $A@norm_rmsnorm_bf16_bf16_s512x8_p
$S@norm_layernorm_res_bf16_bf16_s512x4_o2_g $S@norm_layernorm_res_bf16_bf16_s512x8_p_g $A@norm_layernorm_res_bf16_bf16_s512x8_p
$S@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_res_bf16_bf16_s512x8_p_g $A@norm_rmsnorm_res_bf16_bf16_s512x8_p
$S@norm_softmax_online_bf16_bf16_s512x8_g $S@norm_softmax_online_bf16_bf16_s512x8_o1_p_g $A@norm_softmax_online_bf16_bf16_s512x8_p
$S@norm_layernorm_f32_f32_s512x4_o2_g $S@norm_layernorm_f32_f32_s512x4_p_g $A@norm_layernorm_f32_f32_s512x4_p $A@norm_layernorm_f32_f32_s512x4_o2_g" \
ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
