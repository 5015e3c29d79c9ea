#!/usr/bin/env bash
# Session 22 run1 (H100): balanced split chunks (rj_split_span) against the
# layout's chunks (redjit-base = 722aea2). Tests, A/B, PyTorch beside, sanitizer.
set -uo pipefail
mkdir -p "$OUT/t" "$OUT/s"
OUT="$OUT/t" TEST_PARALLEL=1 TEST_TIMEOUT=240 GPU_TESTS="gpu_norm:split_rows_in_balanced_chunks gpu_norm:deferred_general_twins_stage gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair gpu_norm:prefetching_split_cohorts_take_many_rows gpu_norm:softmax_rows_of_vocabulary_lengths gpu_norm:the_launcher_picks gpu_norm:exact_split_cohorts gpu_norm:split_rows_are_bit_identical gpu_norm:split_workspace_serves" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|left|right" | head -30
LIST="4096x50257@norm_softmax_online_bf16_bf16_s256x8_p_g 4096x50257@norm_logsoftmax_online_bf16_bf16_s256x8_o3_p_g 4096x50257@norm_softmax_online_f32_f32_s256x8_p_g 4096x50257@norm_logsoftmax_online_f32_f32_s512x4_g 4096x65537@norm_softmax_online_bf16_bf16_s256x8_p_g 4096x65537@norm_logsoftmax_online_bf16_bf16_s256x8_o3_p_g 4096x50256@norm_softmax_online_bf16_bf16_s256x8_p 4096x50256@norm_logsoftmax_online_bf16_bf16_s512x4_p 4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_bf16_bf16_s512x4_o2_g 4x1000003@norm_layernorm_f32_f32_s512x4_o2_g" \
  BINS="redjit redjit-base" ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4096x50257,4096x65537,4096x50256 OUT="$OUT" bash scripts/gpu-norm-check.sh 2>&1 | grep -E "rc=" 
OUT="$OUT/s" SANITIZE="gpu_norm:deferred_general_twins_small gpu_norm:prefetching_split_cohorts_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc=|ERROR SUMMARY|hazard" | head
