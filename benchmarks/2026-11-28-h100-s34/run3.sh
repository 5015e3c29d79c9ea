#!/usr/bin/env bash
# Call 3 (session 34): where 16-bit layer norm's raw split rows spend their time
# beside RMS norm's, 4x1000003 bf16, each kernel alone, two rounds. Probes of
# norm_layernorm_bf16_bf16_s512x8_o2_g, each a patch of layer norm's row_raw
# (run3/*.patch; most give wrong results, for timing only): arith (y = x * rstd
# * w: no mean, no bias), fma (y = fma((x - mean) * rstd, w, b)), nobias (no
# bias loaded), onepass (the thread's sums in one pass, m2 = sq - sum * mean),
# sumx (the exchange one float, not a Welford state).
set -uo pipefail
LN=4x1000003@norm_layernorm_bf16_bf16_s512x8_o2_g
LIST="$LN@redjit $LN@redjit-arith $LN@redjit-fma $LN@redjit-nobias $LN@redjit-onepass $LN@redjit-sumx 4x1000003@norm_rmsnorm_bf16_bf16_s512x8_o2_g@redjit"
OUT=$OUT LIST="$LIST" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
