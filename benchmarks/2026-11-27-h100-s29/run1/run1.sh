#!/bin/bash
# run1: warp layout block size probe at 262144x128 (threads 64/128/256/512, bound scaled to keep
# the registers a thread). Binaries: stage/bin/t<threads> = REDJIT_CACHE_DIR=/tmp/rjcache-t<n>
# REDJIT_PROBE_WARP_THREADS=<n> redjit-probe (a build whose WARP_LAYOUT_THREADS came from that
# variable and whose warp launch bound was bound * 256 / threads; not kept).
cd "$(dirname "$0")/.."
LIST="262144x128@norm_layernorm_bf16_bf16_w8x4 262144x128@norm_rmsnorm_bf16_bf16_w8x4 262144x128@norm_layernorm_f16_f16_w8x4" \
BINS="t64 t128 t256 t512" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | tee $OUT/run1.log
