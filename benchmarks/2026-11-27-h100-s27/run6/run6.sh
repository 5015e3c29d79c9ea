set -u
PAIRS="norm_layernorm_f32_f32_s512x8_p_x@64x1048576 norm_rmsnorm_f32_f32_s512x8_p@64x1048576" SOURCE=1 bash stage/scripts/gpu-norm-ncu.sh 2>&1 | tail -5
