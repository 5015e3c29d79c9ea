#!/usr/bin/env bash
# Call 4: Nsight Compute with the stall samples an instruction (SOURCE=1) on the
# committed build's (4210da4) bf16 layer norm and RMS norm raw twins at 4x1000003:
# where layer norm's 3 us over RMS norm go.
set -uo pipefail
SOURCE=1 SECTIONS="SourceCounters WarpStateStats" PAIRS="norm_layernorm_bf16_bf16_s512x8_o2_g@4x1000003 norm_rmsnorm_bf16_bf16_s512x8_o2_g@4x1000003" bash stage/scripts/gpu-norm-ncu.sh
