#!/bin/bash
# run3: held columns as raw words (the probe "once", with the caps HELD_CAPS now has) against base,
# every same-dtype default at four long-row shapes (one process a shape, binary and round, two
# rounds), and four mixed-dtype split kernels. base/once: the probe binary with
# REDJIT_PROBE_HELD unset / "once" (every deferred split kernel without staged columns held).
cd "$(dirname "$0")/.."
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
lines() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in d["kernels"]:
    print(f"{sys.argv[2]} {k['name']} {k['shape']} {k['gbps']:.0f} GB/s {k['pct_of_copy']:.1f} %")
PY
}
MIXED="--spec norm_rmsnorm_f32_bf16_s512x8_p --spec norm_rmsnorm_f32_f16_s512x8_p --spec norm_rmsnorm_res_bf16_f32_s512x4_p --spec norm_rmsnorm_res_f16_f32_s512x4_p"
for round in 1 2; do
  for shape in 64x1048576 64x1000000 4096x65536 256x262144; do
    for bin in base once; do
      j=$W/r$round-$bin-$shape
      REDJIT_REQUIRE_GPU=1 stage/bin/$bin bench norm --shapes $shape --dtypes f32,bf16,f16 --json $j.json > $j.log 2>&1 || echo "$bin $shape rc=$?"
      lines $j.json "r$round $bin"
    done
  done
  for bin in base once; do
    j=$W/r$round-$bin-mixed
    REDJIT_REQUIRE_GPU=1 stage/bin/$bin bench norm --shapes 64x1048576,64x1000000 $MIXED --json $j.json > $j.log 2>&1 || echo "$bin mixed rc=$?"
    lines $j.json "r$round $bin"
  done
done
tar -C $W -czf $OUT/run3.tgz .
