#!/bin/bash
# run1: the final check of issue 11 at 0f774f9: NMS against torchvision, then issue 11's
# six shapes, every default kernel (f32, bf16) beside PyTorch eager, torch.compile and
# Triton (inputs rotated over 4x L2 on both sides), one call, no tests.
mkdir -p $OUT/w
t0=$(date +%s)
OUT=$OUT/w bash stage/scripts/gpu-run.sh nms 2>&1 | grep -E "^nms|x$|rc=|Error|error" | tail -8
echo "nms done in $(($(date +%s) - t0)) s"
NORM_TESTS= NORM_SANITIZE= OUT=$OUT/w bash stage/scripts/gpu-norm-check.sh > $OUT/w/check.log 2>&1
tail -c 600 $OUT/w/check.log
echo "all done in $(($(date +%s) - t0)) s"
tar -C $OUT -czf $OUT/run1.tgz w && rm -rf $OUT/w
