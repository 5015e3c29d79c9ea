#!/usr/bin/env bash
# Session 22 run5: short staging twins for the norms' rows of 40001 and 50257
# (off the pack grid; today the two-pass direct twin s512x4_o2_g), balanced
# chunks (this tree), one process a shape and round (SHARED=1).
set -uo pipefail
LIST="$(cat benchmarks/2026-11-27-h100-s22/ab-list5.txt)" SHARED=1 ROUNDS=2 OUT="$OUT" bash scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
