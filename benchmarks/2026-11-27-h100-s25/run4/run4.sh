#!/usr/bin/env bash
set -uo pipefail
LIST=$(cat stage/list4) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name"
