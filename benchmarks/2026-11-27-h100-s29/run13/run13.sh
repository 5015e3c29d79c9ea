#!/bin/bash
# run13: f32 layer norm + residual at 64x1048576 in 256-thread blocks of 8 packs (s256x8_p_x, the
# same 8192-element chunk, 8 warps a block) against s512x4_p_x, each alone, 3 rounds.
cd "$(dirname "$0")/.."
L=64x1048576
LIST="$L@norm_layernorm_res_f32_f32_s512x4_p_x $L@norm_layernorm_res_f32_f32_s256x8_p_x $L@norm_layernorm_res_f32_f32_s256x8_p_x_h0 \
$L@norm_rmsnorm_res_f32_f32_s512x4_p_x $L@norm_rmsnorm_res_f32_f32_s256x8_p_x" \
ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run13.log
