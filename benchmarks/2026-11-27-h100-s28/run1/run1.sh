#!/usr/bin/env bash
# Session 28, run1: where a 4x1000003 launch's time goes. Every default at
# 4x1000003 (off the pack grid) and 4x1000008 (on it for 16-bit rows) beside
# PyTorch, the bench with cudarc's event tracking on (default) and off; then
# Nsight Compute's durations of five 4x1000003 defaults (scripts/gpu-norm-latency.sh).
set -u
cp benchmarks/2026-11-27-h100-s28/run1/run1.sh "$OUT/" 2>/dev/null
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES="4x1000003,4x1000008" bash stage/scripts/gpu-norm-check.sh
mkdir -p "$OUT/u"
for r in 1 2; do
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --untracked --shapes 4x1000003,4x1000008 --json "$OUT/u/untracked$r.json" > "$OUT/u/untracked$r.log" 2>&1
  echo "untracked $r rc=$?"
done
SHAPES=4x1000003 SPECS="norm_rmsnorm_bf16_bf16_s512x4_o2_g norm_layernorm_bf16_bf16_s512x4_o2_g norm_softmax_online_bf16_bf16_s512x8_g norm_rmsnorm_res_bf16_bf16_s512x4_o2_g norm_rmsnorm_f32_f32_s512x4_o2_g" \
  bash stage/scripts/gpu-norm-latency.sh
