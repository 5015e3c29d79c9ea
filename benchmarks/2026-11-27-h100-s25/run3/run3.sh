#!/usr/bin/env bash
set -uo pipefail
LIST=$(cat stage/list3) BINS="redjit-0 redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name"
