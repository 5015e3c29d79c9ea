#!/usr/bin/env bash
# Call 10: lean one-exchange 16-bit norms (CuPy probe) at 4x1000008, and redjit's
# bf16 defaults at 4x1000003 in the same call.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python3 "$here/lean_norms.py" 1000008 2>&1 | tee "$OUT/lean_norms.log"
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 4x1000003 --dtypes bf16 2>&1 | tee "$OUT/redjit-bf16.log" | grep -E "^norm_|d2d"
