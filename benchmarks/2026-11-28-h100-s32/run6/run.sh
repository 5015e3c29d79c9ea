#!/usr/bin/env bash
# Call 6: the committed build (4210da4): two gpu_norm tests not run this session,
# memcheck and racecheck on paired_split_twins_at_every_shift (raw rows at every
# shift), then 4x1000003's defaults beside PyTorch eager, torch.compile and Triton
# (gpu-norm-check.sh; table: scripts/norm_table_md.py).
set -uo pipefail
TEST_PARALLEL=1 NORM_TESTS="gpu_norm:every_layout_variant_on_strided_rows gpu_norm:split_workspace_serves" NORM_SANITIZE="gpu_norm:paired_split_twins" NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
