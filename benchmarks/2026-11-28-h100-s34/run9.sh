#!/usr/bin/env bash
# Call 9 (session 34): the scripts' new paths. torch_ref.py's rotated inputs in
# the families run1 did not take (reduce_copy, reduce, softmax_all; 1M
# elements, eager only, few iterations: a check that they run, not figures),
# then gpu-norm-ab.sh's DEFAULTS mode: the final build against b936bfa at
# 2x1000003, one round.
set -uo pipefail
W=$OUT/run9; mkdir -p "$W"
python3 stage/scripts/torch_ref.py --families reduce_copy,reduce,softmax_all --sizes 1M --no-compile --transports bf16 --iters 5 --out "$W/torch-small.json" > "$W/torch-small.log" 2>&1
echo "torch_ref rc=$?"
python3 -c "
import json
d=json.load(open('$W/torch-small.json'))
print('copy', d['copy'])
print(len(d['entries']), 'entries; rotations:', sorted({(e.get('family','reduce_copy'), e['rotations']) for e in d['entries']}))"
OUT=$W DEFAULTS=1 SHAPES=2x1000003 BINS="redjit-b93 redjit" ROUNDS=1 bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^name\|^NVIDIA"
cd $OUT && tar -czf run9.tgz run9 && rm -rf run9
