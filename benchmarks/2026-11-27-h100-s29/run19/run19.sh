#!/bin/bash
# run19: the four thinnest 262144x128 bf16 cells, default (row loads as 128-byte L2 lines) against
# `_n` (row loads past L1, no line hint), each alone, 3 rounds (c0e99c6).
cd "$(dirname "$0")/.."
N=262144x128
LIST=""
for k in layernorm_bf16_bf16_w8x4 rmsnorm_bf16_bf16_w8x4 logsoftmax_online_bf16_bf16_w8x4 softmax_online_bf16_bf16_w8x4; do LIST="$LIST $N@norm_$k $N@norm_${k}_n"; done
LIST="$LIST" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|NVIDIA" | tee $OUT/run19.log
