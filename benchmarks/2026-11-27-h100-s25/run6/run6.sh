#!/usr/bin/env bash
set -uo pipefail
LIST=$(cat stage/list6) BINS="redjit-0 redjit-a redjit-b" ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab6.txt 2>&1
python3 - <<'PY'
import collections,os
d=collections.defaultdict(list)
for l in open(os.environ['OUT']+'/ab6.txt'):
    p=l.split()
    if len(p)>=7 and p[0] in('r1','r2'): d[(p[3],p[2],p[1])].append(p[6])
for k,v in sorted(d.items()): print(*k,'/'.join(v))
PY
