#!/usr/bin/env bash
# A/B: stage/bin/redjit (8-byte packs) against stage/bin/redjit-pairs (16-byte pairs), 3 rounds.
S1="--shapes 262144x128 --spec norm_softmax_online_bf16_bf16_w8x4 --spec norm_softmax_safe_bf16_bf16_w8x4 --spec norm_logsoftmax_online_bf16_bf16_w8x4 --spec norm_layernorm_bf16_bf16_w8x4 --spec norm_rmsnorm_bf16_bf16_w8x4"
S2="--shapes 8192x32768 --spec norm_softmax_online_bf16_bf16_b512x16 --spec norm_softmax_safe_bf16_bf16_b512x16 --spec norm_logsoftmax_online_bf16_bf16_b512x16 --spec norm_layernorm_bf16_bf16_b512x16 --spec norm_rmsnorm_bf16_bf16_b512x16"
S3="--shapes 32768x4096 --spec norm_softmax_online_bf16_bf16_b256x4 --spec norm_rmsnorm_bf16_bf16_b128x8 --spec norm_logsoftmax_online_bf16_bf16_b256x4"
S4="--shapes 8192x16384 --spec norm_softmax_online_bf16_bf16_b512x8 --spec norm_layernorm_bf16_bf16_b512x8 --spec norm_rmsnorm_bf16_bf16_b256x16"
for r in 1 2 3; do
  for b in redjit redjit-pairs; do
    for S in "$S1" "$S2" "$S3" "$S4"; do
      stage/bin/$b bench norm $S 2>&1 | grep -E '^norm_' | sed "s/^/$b r$r /"
    done
  done
done
