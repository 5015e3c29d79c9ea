#!/bin/bash
# run14: f64 sums (probe: f64_sums() true for f32 deferred layer norms when REDJIT_PROBE_F64 is set;
# binaries base / f64 = REDJIT_CACHE_DIR=/tmp/rjcache-<name> [REDJIT_PROBE_F64=1] redjit-probe)
# against Welford with the columns held: f32 layer norm + residual s512x4_p_x and f32 layer norm
# s512x8_p_x_h6 at 64x1048576, each alone, 3 rounds.
cd "$(dirname "$0")/.."
L=64x1048576
LIST="$L@norm_layernorm_res_f32_f32_s512x4_p_x $L@norm_layernorm_f32_f32_s512x8_p_x_h6 $L@norm_layernorm_f32_f32_s512x8_p_x@base" \
BINS="base f64" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run14.log
