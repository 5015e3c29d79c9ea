#!/bin/bash
# run11: the warp layout's row loads with an L2 prefetch-size hint (ld.global.nc.L2::128B / 256B;
# probe: REDJIT_PROBE_ROWPF=128/256 chose the warp layout row loads kind; binaries base, r128, r256) against
# without, every default at 262144x128 (f32, bf16, two f16), alone, 3 rounds.
cd "$(dirname "$0")/.."
N=262144x128
LIST=""
for k in softmax_safe_f32_f32_w32x1 softmax_online_f32_f32_w32x1 logsoftmax_online_f32_f32_w32x1 layernorm_f32_f32_w16x2 layernorm_res_f32_f32_w32x1 rmsnorm_f32_f32_w32x1 rmsnorm_res_f32_f32_w32x1 \
  softmax_safe_bf16_bf16_w8x4 softmax_online_bf16_bf16_w8x4 logsoftmax_online_bf16_bf16_w8x4 layernorm_bf16_bf16_w8x4 layernorm_res_bf16_bf16_w16x2 rmsnorm_bf16_bf16_w8x4 rmsnorm_res_bf16_bf16_w16x4 \
  layernorm_f16_f16_w8x4 rmsnorm_f16_f16_w8x4; do LIST="$LIST $N@norm_$k"; done
LIST="$LIST" BINS="base r128 r256" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run11.log
