# run6 (call 14): the final rule (every one-pass general twin flagged; 4 packs or fewer ask
# early; whole-pack kernels count) against the session's start, two rounds; then
# compute-sanitizer memcheck and racecheck on split_rows_off_the_pack_grid_small.
LIST="4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_softmax_online_f32_f32_s512x8_g 4x1000003@norm_logsoftmax_online_bf16_bf16_s512x8_g 4x1000003@norm_logsoftmax_online_f32_f32_s512x8_g 4x1000003@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g 4x1000003@norm_rmsnorm_res_f16_f16_s512x4_o2_g 4x1000003@norm_rmsnorm_res_f32_f32_s512x4_o2_g" BINS="redjit-head redjit" ROUNDS=2 bash scripts/gpu-norm-ab.sh
mkdir -p $OUT/s; OUT=$OUT/s SANITIZE="gpu_norm:split_rows_off_the_pack_grid_small" SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIMEOUT=240 bash stage/scripts/gpu-run.sh sanitize
