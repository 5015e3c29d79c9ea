#!/usr/bin/env bash
# Session 28, run5: interior chunks of the row-shift general twins take the
# whole-pack code (run_chunk with a whole chunk), REDJIT_EXP_INTERIOR = none /
# prefetch (the _p_g twins only; redjit) / all. Tests with `all` (every
# row-shift twin) and the default, memcheck on the new test with `all`; then
# the 16-bit twins at 4x1000003, three builds, two rounds.
set -u
cp benchmarks/2026-11-27-h100-s28/run5/run5.sh "$OUT/" 2>/dev/null
export OUT
T="split_twins_with_vectors_off_the_rows_grid split_rows_off_the_pack_grid_small split_twins_of_every_dtype_pair prefetching_split_cohorts_small"
OUT="$OUT" TEST_TIMEOUT=300 GPU_TESTS="$(for t in $T; do printf 'gpu_norm_all:%s gpu_norm:%s ' $t $t; done)" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked"
REDJIT_EXP_INTERIOR=all OUT="$OUT" SANITIZE="gpu_norm:split_twins_with_vectors_off_the_rows_grid" SANITIZE_TOOLS=memcheck SANITIZE_TIMEOUT=300 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
S=4x1000003
LIST="$S@norm_layernorm_bf16_bf16_s512x4_o2_g $S@norm_layernorm_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_bf16_bf16_s512x4_p_g
$S@norm_layernorm_res_bf16_bf16_s512x4_o2_g $S@norm_layernorm_res_bf16_bf16_s512x8_p_g $S@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g $S@norm_rmsnorm_res_bf16_bf16_s512x8_p_g
$S@norm_softmax_online_bf16_bf16_s512x8_g $S@norm_softmax_online_bf16_bf16_s512x8_o1_p_g $S@norm_logsoftmax_online_bf16_bf16_s512x8_g $S@norm_softmax_online_f32_f32_s512x8_g $S@norm_layernorm_f32_f32_s512x4_o2_g" \
BINS="redjit-none redjit redjit-all" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
