#!/usr/bin/env bash
# Call 13, the final build (RMS norm's long-row twin s512x8_o2_g): the split tests
# and the issue shapes, memcheck and racecheck on the split rows off the grid, then
# 4x1000003's defaults beside PyTorch.
set -uo pipefail
export TEST_PARALLEL=1
NORM_TESTS="gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid gpu_norm:split_twins_of_every_dtype_pair gpu_norm:split_twins_with_vectors gpu_norm:split_workspace_serves gpu_norm:split_rows_are_bit_identical gpu_norm:the_issue_shapes" \
NORM_SANITIZE="gpu_norm:split_rows_off_the_pack_grid_small" \
NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
