#!/usr/bin/env bash
# Call 3: paired packs (16-byte accesses for the 16-bit one-pass split twins,
# redjit-pair) against HEAD (redjit): GPU tests on the pair build first, then
# each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:the_issue_shapes gpu_norm:split_twins_of_every_dtype_pair" bash stage/scripts/gpu-run.sh some-tests
L=""
for s in 4x1000003 64x1048573; do
  for k in softmax_online_bf16_bf16_s512x8_g logsoftmax_online_bf16_bf16_s512x8_g rmsnorm_res_bf16_bf16_s512x4_o2_g softmax_online_f16_f16_s512x8_g rmsnorm_res_f16_f16_s512x4_o2_g; do
    L="$L $s@norm_$k"
  done
done
LIST="$L" BINS="redjit redjit-pair" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
