#!/usr/bin/env bash
# Call 1: the cluster probe next to session 30's floor probe (its copy and lean kernels).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 "$here/cluster.py" 1000008 4 2>&1 | tee "$OUT/cluster.log"
python3 "$here/../../2026-11-27-h100-s30/run1/floor.py" 1000008 2>&1 | tee "$OUT/floor.log"
