#!/usr/bin/env bash
# Session 23 run2 (working tree: looped split kernels, `_l`): their GPU test,
# then looped layouts against the launcher's kernels, one process a shape and
# round (SHARED=1), three rounds.
set -uo pipefail
export REDJIT_REQUIRE_GPU=1 REDJIT_CACHE_DIR=/tmp/redjit-cache-tests
t0=$(date +%s)
timeout 300 stage/bin/gpu_norm --ignored --test-threads=1 looped_rows_of_every_op > $OUT/test.log 2>&1
echo "test rc=$? in $(($(date +%s) - t0)) s"; grep -E "test result|panicked|FAILED" $OUT/test.log | head
L=""
for s in b512x16_n s512x4_l s512x4_l_x s512x4_o1_l s512x8_o1_l s512x2_l s256x4_l; do L="$L 8192x32768@norm_layernorm_f32_f32_$s"; done
for s in s256x8_o2_p_g s512x4_l_g s512x8_l_g s512x2_l_g s256x4_l_g s256x8_l_g; do L="$L 4096x50257@norm_layernorm_bf16_bf16_$s"; done
for s in s256x8_o3_p_g s512x4_l_g s512x8_l_g; do L="$L 4096x50257@norm_softmax_online_bf16_bf16_$s"; done
for s in s256x8_o2_p_g s512x4_l_g s512x8_l_g; do L="$L 4096x50257@norm_layernorm_f32_f32_$s"; done
LIST="$L" SHARED=1 ROUNDS=3 OUT="$OUT" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
