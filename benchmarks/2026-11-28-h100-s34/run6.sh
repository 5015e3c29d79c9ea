#!/usr/bin/env bash
# Call 6 (session 34): the raw 16-bit norms ask L1 for their columns of the
# weight (and bias) before the row's exchange (`redjit-l1`, run6/l1.patch on
# 3a0b5df), against df8c309 (`redjit`; 3a0b5df differs from it in a comment); each kernel alone, two rounds.
set -uo pipefail
LIST=""
for k in layernorm_bf16_bf16 layernorm_f16_f16 layernorm_res_bf16_bf16 rmsnorm_bf16_bf16 rmsnorm_res_bf16_bf16; do LIST="$LIST 4x1000003@norm_${k}_s512x8_o2_g"; done
for k in layernorm_bf16_bf16 rmsnorm_bf16_bf16; do LIST="$LIST 64x1048573@norm_${k}_s512x8_o2_g"; done
OUT=$OUT LIST="$LIST" BINS="redjit redjit-l1" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
