#!/usr/bin/env bash
# Call 4 (session 33): probes on 03ebf3b. redjit-l2: the raw norms' row-0
# blocks ask L2 for every row's weight and bias columns as they start
# (prefetch.global.L2, a line a thread). redjit-nc: the one-wave layer norm
# launched without the cooperative attribute (its block index still its item;
# what the cooperative launch itself costs). Against 03ebf3b (redjit-co). Each
# kernel alone, two rounds.
set -uo pipefail
L=""
for k in layernorm_bf16_bf16_s512x8_o2_g layernorm_f16_f16_s512x8_o2_g rmsnorm_bf16_bf16_s512x8_o2_g rmsnorm_res_bf16_bf16_s512x8_o2_g layernorm_res_bf16_bf16_s512x8_o2_g; do L="$L 4x1000003@norm_$k@redjit-co 4x1000003@norm_$k@redjit-l2"; done
L="$L 64x1048573@norm_layernorm_bf16_bf16_s512x8_o2_g@redjit-co 64x1048573@norm_layernorm_bf16_bf16_s512x8_o2_g@redjit-l2"
L="$L 4x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g@redjit-nc 2x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g@redjit-co 2x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g@redjit-nc"
LIST="$L" BINS="redjit-co" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh
