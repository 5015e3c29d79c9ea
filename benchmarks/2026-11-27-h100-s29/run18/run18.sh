#!/bin/bash
# run18: redjit's own reduce_copy kernels (every type configuration) at 4000012 elements a buffer:
# how fast a kernel moves 4x1000003's bytes, beside the d2d copy of the same size.
cd "$(dirname "$0")/.."
REDJIT_REQUIRE_GPU=1 stage/bin/redjit bench reduce-copy --sizes 4000012 --json $OUT/rc.json 2>&1 | tee $OUT/run18.log
