#!/usr/bin/env bash
# Call 4 (session 34): candidates from run3's split of layer norm's time, each a
# patch of templates/prelude/norm.cuh (run4/*.patch) on b936bfa, 4x1000003, each
# kernel alone, two rounds: s64 (raw layer norm's rows exchange f64 sums about
# each thread's first element, as the deferred 16-bit rows do, not a Welford
# state), early (the raw norms ask for their first groups of columns before the
# exchange), vec (flagged states sent and read in 16-byte accesses, a pair of
# flagged words each), s64early (both).
set -uo pipefail
S=4x1000003@norm_
LIST=""
add() { for b in "${@:2}"; do LIST="$LIST $S$1@$b"; done; }
add layernorm_bf16_bf16_s512x8_o2_g redjit redjit-s64 redjit-early redjit-vec redjit-s64early
add rmsnorm_bf16_bf16_s512x8_o2_g redjit redjit-early
add rmsnorm_res_bf16_bf16_s512x8_o2_g redjit redjit-early
add softmax_online_bf16_bf16_s512x8_g redjit redjit-vec
add logsoftmax_online_bf16_bf16_s512x8_g redjit redjit-vec
add layernorm_res_bf16_bf16_s512x8_o2_g redjit redjit-vec redjit-s64
add softmax_online_f32_f32_s512x8_g redjit redjit-vec
add layernorm_f32_f32_s512x4_o2_g redjit redjit-vec
OUT=$OUT LIST="$LIST" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
