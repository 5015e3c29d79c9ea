#!/usr/bin/env bash
# Call 5 (session 33): (a) redjit-rx: the raw layer norms' tickets relaxed, not
# acq_rel (ticket mode: layer norm + residual at 4x1000003, both at 64x1048573),
# against 03ebf3b (redjit); (b) the raw general twins on the 8-element grid
# (4x1000008) against off it (4x1000003), 03ebf3b; each kernel alone, two
# rounds. (c) PyTorch eager, torch.compile and Triton beside `redjit bench norm`
# at 4x1000003 on 03ebf3b (stage/bin/redjit).
set -uo pipefail
L=""
for k in layernorm_res_bf16_bf16_s512x8_o2_g layernorm_res_f16_f16_s512x8_o2_g; do L="$L 4x1000003@norm_$k"; done
L="$L 64x1048573@norm_layernorm_res_bf16_bf16_s512x8_o2_g 64x1048573@norm_layernorm_bf16_bf16_s512x8_o2_g"
LIST="$L" BINS="redjit redjit-rx" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
L=""
for k in layernorm_bf16_bf16_s512x8_o2_g rmsnorm_bf16_bf16_s512x8_o2_g softmax_online_bf16_bf16_s512x8_g; do L="$L 4x1000003@norm_$k 4x1000008@norm_$k"; done
OUT=$OUT/grid LIST="$L" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES=4x1000003 bash stage/scripts/gpu-norm-check.sh
