#!/usr/bin/env bash
# run1: deferred general twins: tests, sanitizer, A/B against the old twins.
set -uo pipefail
mkdir -p "$OUT/t"
OUT="$OUT/t" TEST_TIMEOUT=300 GPU_TESTS="gpu_norm:deferred_general_twins gpu_norm:split_rows_off_the_pack_grid_small gpu_norm:split_twins_of_every_dtype_pair gpu_norm:the_issue_shapes" bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED|failed" | head -40
OUT="$OUT/t" SANITIZE="gpu_norm:deferred_general_twins_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=150 bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
for f in "$OUT"/t/sanitize-*.log; do tail -3 "$f"; done
SHARED=1 ROUNDS=2 LIST="$(cat stage/ab-list.txt)" bash scripts/gpu-norm-ab.sh
