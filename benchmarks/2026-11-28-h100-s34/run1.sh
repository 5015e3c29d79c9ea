#!/usr/bin/env bash
# Call 1 (session 34), build b936bfa + torch_ref.py's rotation: PyTorch beside
# `redjit bench norm` at 4x1000003 with its inputs rotated over 4x L2 (as redjit
# rotates its own) and, in the same call, on the same buffers every call (as
# torch_ref.py timed before); then f32 RMS norm's split layouts at 4x1000003,
# each alone, two rounds.
set -uo pipefail
W=$OUT/run1; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
for rot in 4 0; do
  s=$(date +%s)
  python3 stage/scripts/torch_ref.py --families norm --norm-shapes 4x1000003 --l2-rotate $rot --out "$W/torch-rot$rot.json" > "$W/torch-rot$rot.log" 2>&1
  echo "torch_ref rot$rot rc=$? $(( $(date +%s) - s )) s"
  grep -E "^norm_|d2d|rotat" "$W/torch-rot$rot.log" | head -20
done
for rot in 4 0; do
  REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench norm --shapes 4x1000003 --json "$W/bench-rot$rot.json" --compare "$W/torch-rot$rot.json" > "$W/bench-rot$rot.log" 2>&1
  echo "bench vs rot$rot rc=$?"
done
grep -E "^norm_|d2d" "$W/bench-rot4.log" | head -40
L=""
for s in s512x8_o2_g s256x8_o4_g s128x8_o8_g s512x16_o1_g s256x16_o2_g s256x4_o4_g; do L="$L 4x1000003@norm_rmsnorm_f32_f32_$s"; done
OUT=$W LIST="$L" BINS="redjit" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
