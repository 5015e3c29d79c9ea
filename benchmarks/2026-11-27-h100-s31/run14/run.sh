#!/usr/bin/env bash
# Call 16, the final build (`a3d9b82`): three gpu_norm tests, then 4x1000003's
# bf16 defaults (the device time left allowed no PyTorch run).
set -uo pipefail
OUT=$OUT/t TEST_PARALLEL=1 GPU_TESTS="gpu_norm:split_workspace_serves gpu_norm:paired_split_twins gpu_norm:split_rows_off_the_pack_grid" bash stage/scripts/gpu-run.sh some-tests
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 4x1000003 --dtypes bf16 --json "$OUT/bench-bf16.json" 2>&1 | tee "$OUT/bench-bf16.log" | grep -E "^norm_|d2d"
