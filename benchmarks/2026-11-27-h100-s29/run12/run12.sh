#!/bin/bash
# run12: the warp layout's row loads as whole 128-byte L2 lines (rj_load_nc_line): gpu_norm tests
# over every layout (the warp layout's among them) and the issue's shapes; 262144x128 beside PyTorch.
cd "$(dirname "$0")/.."
OUT=$OUT/tests TEST_TIMEOUT=400 TEST_PARALLEL=1 \
GPU_TESTS="gpu_norm:the_issue_shapes gpu_norm:every_layout_variant_on_strided_rows gpu_norm:every_op_and_dtype_pair_at_odd_row_lengths" \
bash stage/scripts/gpu-run.sh some-tests 2>&1 | tee $OUT/run12-tests.log
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=262144x128 bash stage/scripts/gpu-norm-check.sh 2>&1 | tee $OUT/run12-check.log
