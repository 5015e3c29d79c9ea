#!/usr/bin/env bash
# Call 15: 16-bit layer norm's long-row twins (with and without the residual) held
# as raw 16-bit words, 8 packs at 2 blocks an SM, one pass, paired (redjit-raw,
# s512x8_o2_g), against HEAD's two-pass s512x4_o2_g (redjit: `7cd3dbc`'s build, before raw RMS
# norm + residual; its layer norm kernels are HEAD's): GPU tests on the new build, memcheck and racecheck on the
# paired twins' test, then each kernel alone, two rounds.
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:layer_norm_rows_off_zero gpu_norm:the_issue_shapes" bash stage/scripts/gpu-run.sh some-tests
OUT=$OUT/t SANITIZE="gpu_norm:paired_split_twins" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
L=""
for s in 4x1000003 64x1048573; do
  for d in bf16 f16; do
    for k in layernorm layernorm_res; do
      L="$L $s@norm_${k}_${d}_${d}_s512x4_o2_g@redjit $s@norm_${k}_${d}_${d}_s512x8_o2_g@redjit-raw"
    done
  done
done
LIST="$L" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
