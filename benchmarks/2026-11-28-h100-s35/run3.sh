#!/bin/bash
# run3: what the one-wave 16-bit layer norm costs by ticket (`--no-cooperative-launch`,
# stage/bin/redjit-tk wraps redjit with it) against its cooperative launch, same build,
# each kernel alone in its process, three rounds.
LIST="4x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g 4x1000003@norm_layernorm_f16_f16_s512x8_o2_g 2x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g 4x100003@norm_layernorm_bf16_bf16_s512x8_o2_g" \
BINS="redjit redjit-tk" ROUNDS=3 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
stage/bin/redjit-tk bench norm --shapes 4x1000003 --spec norm_layernorm_bf16_bf16_s512x8_o2_g 2>&1 | grep -E "cooperative|layernorm" | head -3
