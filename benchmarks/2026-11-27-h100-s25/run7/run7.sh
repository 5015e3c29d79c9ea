#!/usr/bin/env bash
set -uo pipefail
LIST=$(cat stage/list7) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab7.txt 2>&1
python3 - <<'PY'
import collections,os
d=collections.defaultdict(list)
for l in open(os.environ['OUT']+'/ab7.txt'):
    p=l.split()
    if len(p)>=7 and p[0] in('r1','r2'): d[(p[3],p[2])].append(p[6])
for (shape,name),v in d.items(): print(shape,name[5:],'/'.join(v))
PY
