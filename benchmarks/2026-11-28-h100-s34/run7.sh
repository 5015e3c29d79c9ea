#!/usr/bin/env bash
# Call 7 (session 34): the pairs (`redjit`, df8c309) against b936bfa
# (`redjit-b93`) at rows of vocabulary length, whose split defaults (deferred,
# staging and loop rows) exchange flagged states too: every default kernel,
# one process a binary and shape, alternating, two rounds.
set -uo pipefail
W=$OUT/run7; mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
for round in 1 2; do
  for shape in 4096x36864 4096x50256 4096x50257; do
    for bin in redjit-b93 redjit; do
      j=$W/r$round-$bin-$shape
      REDJIT_REQUIRE_GPU=1 stage/bin/$bin bench norm --shapes $shape --json $j.json > $j.log 2>&1 || echo "$bin $shape rc=$?"
      python3 -c "
import json
d=json.load(open('$j.json'))
print(' '.join(f\"{k['name'][5:]}={k['gbps']:.0f}\" for k in d['kernels']))" | sed "s/^/r$round $bin $shape: /"
    done
  done
done
cd $OUT && tar -czf run7.tgz run7 && rm -rf run7
