#!/usr/bin/env bash
# Call 10 (session 34): run9's torch_ref.py check again after its fix (the
# reduce_copy loop named a variable the rotation had removed): reduce_copy,
# reduce and softmax_all at 1M elements, eager only, five timed calls (a check
# that they run, not figures).
set -uo pipefail
W=$OUT/run10; mkdir -p "$W"
python3 stage/scripts/torch_ref.py --families reduce_copy,reduce,softmax_all --sizes 1M --no-compile --transports bf16 --iters 5 --out "$W/torch-small.json" > "$W/torch-small.log" 2>&1
echo "torch_ref rc=$?"
python3 -c "
import json
d=json.load(open('$W/torch-small.json'))
print('copy', d['copy'])
print(len(d['entries']), 'entries; (family, rotations):', sorted({(e.get('family','reduce_copy'), e['rotations']) for e in d['entries']}))"
tail -5 "$W/torch-small.log"
