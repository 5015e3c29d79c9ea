#!/usr/bin/env bash
# Call 5, the final build: GPU tests, memcheck and racecheck on the new kernels'
# tests, and 4x1000003's defaults beside PyTorch eager and torch.compile.
set -uo pipefail
NORM_TESTS="gpu_norm:paired_split_twins gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths gpu_norm:every_layout_variant_on_strided_rows" \
NORM_SANITIZE="gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:paired_split_twins" \
NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
