#!/usr/bin/env bash
set -uo pipefail
LIST=$(cat stage/list18) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab18.txt 2>&1
grep -E "^r[12] |rc=" $OUT/ab18.txt
