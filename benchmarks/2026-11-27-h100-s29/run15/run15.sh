#!/bin/bash
# run15: f64 sums (run14's probe) for f32 layer norm + residual's deferred kernels at other
# shapes, each alone, 3 rounds.
cd "$(dirname "$0")/.."
LIST="64x1000000@norm_layernorm_res_f32_f32_s512x4_p 256x262144@norm_layernorm_res_f32_f32_s512x4_p_x \
4096x65536@norm_layernorm_res_f32_f32_s512x4_p_x 4096x40000@norm_layernorm_res_f32_f32_s512x4_p 64x1048576@norm_layernorm_res_f32_f32_s512x4_p_x" \
BINS="base f64" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run15.log
