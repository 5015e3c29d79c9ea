#!/usr/bin/env bash
# Call 3 (session 33): the one-wave cooperative launch for layer norm only
# (NormSpec::one_wave; the other kernels' PTX is 712dcb5's), redjit-co, against
# 712dcb5 (redjit). Each kernel alone, two rounds; then gpu_norm tests on
# redjit-co's build (the new captured-graph test among them) and memcheck and
# racecheck on the captured-graph test.
set -uo pipefail
L="4x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g 4x1000003@norm_layernorm_f16_f16_s512x8_o2_g 2x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g 64x1048573@norm_layernorm_bf16_bf16_s512x8_o2_g 4x1000003@norm_softmax_online_bf16_bf16_s512x8_g"
LIST="$L" BINS="redjit redjit-co" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:split_rows_replayed_from_a_captured_graph gpu_norm:split_workspace_serves gpu_norm:the_issue_shapes gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_rows_are_bit_identical gpu_norm:layer_norm_rows_off_zero" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|FAIL|panicked" | head -40
OUT=$OUT/t SANITIZE="gpu_norm:split_rows_replayed_from_a_captured_graph" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
