#!/usr/bin/env bash
# Call 7: the one-pass split general twins ask L2 for their share of the row
# streams before their first ticket (redjit-pf, NormSpec::l2_prefetch, where the
# streams fit in 16 MB) against 4210da4 (redjit). Each kernel alone, two rounds.
set -uo pipefail
L=""
for k in norm_softmax_online_bf16_bf16_s512x8_g norm_logsoftmax_online_bf16_bf16_s512x8_g norm_rmsnorm_bf16_bf16_s512x8_o2_g norm_layernorm_bf16_bf16_s512x8_o2_g norm_layernorm_res_bf16_bf16_s512x8_o2_g norm_rmsnorm_res_bf16_bf16_s512x8_o2_g norm_softmax_online_f32_f32_s512x8_g norm_rmsnorm_f32_f32_s512x8_o2_g; do
  L="$L 4x1000003@$k"
done
LIST="$L" BINS="redjit redjit-pf" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
