#!/usr/bin/env bash
set -uo pipefail
TEST_PARALLEL=1 TEST_TIMEOUT=500 GPU_TESTS="gpu_norm:loop_rows_of_every_op gpu_norm:the_ladders_loop_rows gpu_norm:the_ladders_cluster_rows gpu_norm:mixed_rows_of_vocabulary_length gpu_norm:every_layout_variant_on_strided_rows gpu_norm:layer_norm_rows_off_zero gpu_norm:bad_calls_are_errors_not_launches" \
  bash stage/scripts/gpu-run.sh some-tests 2>&1 | grep -E "rc=|test result|panicked|FAILED" | head -30
SANITIZE="gpu_norm:loop_rows_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=200 \
  bash stage/scripts/gpu-run.sh sanitize 2>&1 | grep -E "rc="
LIST=$(cat stage/list5) SHARED=1 ROUNDS=2 bash stage/scripts/gpu-norm-ab.sh > $OUT/ab5.txt 2>&1
python3 - <<'PY'
import collections,os
d=collections.defaultdict(list)
for l in open(os.environ['OUT']+'/ab5.txt'):
    p=l.split()
    if len(p)>=7 and p[0] in('r1','r2'): d[(p[3],p[2])].append(p[6])
for (shape,name),v in d.items(): print(shape,name[5:],'/'.join(v))
PY
