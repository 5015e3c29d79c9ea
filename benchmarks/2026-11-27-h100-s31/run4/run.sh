#!/usr/bin/env bash
# Call 4: the two-pass split twins take their next ticket as they start an item
# (redjit-ahead) against the session's start (redjit): GPU tests on the new build
# first, then each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:paired_split_twins gpu_norm:the_issue_shapes" bash stage/scripts/gpu-run.sh some-tests
L=""
for s in 4x1000003 64x1048573; do
  for d in bf16 f16 f32; do
    for k in rmsnorm layernorm; do L="$L $s@norm_${k}_${d}_${d}_s512x4_o2_g"; done
  done
done
LIST="$L" BINS="redjit redjit-ahead" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
