#!/bin/bash
# run2: weight/bias held in registers (probe-held.patch) at 64x1048576, then correctness under the
# probe. Binaries: stage/bin/<name> = REDJIT_CACHE_DIR=/tmp/rjcache-<name> REDJIT_PROBE_HELD=<mode>
# REDJIT_PROBE_HELD_PACKS=<H> redjit-probe; base: none; once<H>: held for the launch; row<H>:
# loaded before each finishing pass's wait (99: every pack). This probe held widened floats.
cd "$(dirname "$0")/.."
S=64x1048576
LIST="$S@norm_layernorm_f32_f32_s512x8_p_x@base $S@norm_layernorm_f32_f32_s512x8_p_x@once $S@norm_layernorm_f32_f32_s512x8_p_x@once7 $S@norm_layernorm_f32_f32_s512x8_p_x@row \
$S@norm_layernorm_res_f32_f32_s512x4_p_x@base $S@norm_layernorm_res_f32_f32_s512x4_p_x@once $S@norm_layernorm_res_f32_f32_s512x4_p_x@row \
$S@norm_layernorm_bf16_bf16_s512x16_p_x@base $S@norm_layernorm_bf16_bf16_s512x16_p_x@once7 $S@norm_layernorm_bf16_bf16_s512x16_p_x@once4 $S@norm_layernorm_bf16_bf16_s512x16_p_x@row4 \
$S@norm_layernorm_f16_f16_s512x16_p_x@base $S@norm_layernorm_f16_f16_s512x16_p_x@once2 $S@norm_layernorm_f16_f16_s512x16_p_x@once4 \
$S@norm_rmsnorm_f32_f32_s512x8_p_x@base $S@norm_rmsnorm_f32_f32_s512x8_p_x@once" \
ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | tee $OUT/run2.log
for mode in once row; do
  REDJIT_CACHE_DIR=/tmp/rjt-$mode REDJIT_PROBE_HELD=$mode REDJIT_REQUIRE_GPU=1 timeout 200 stage/bin/gpu_norm --ignored --test-threads 1 layer_norm_rows_of_larger_chunks prefetching_split_cohorts_small exact_split_cohorts_and_their_twins 2>&1 | tail -8 | sed "s/^/[$mode] /" | tee -a $OUT/run2.log
done
