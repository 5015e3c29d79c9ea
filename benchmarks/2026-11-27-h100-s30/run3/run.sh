# run3 (call 11): HEAD (redjit, 758efe4) against two probe builds of flagged one-pass split states:
# flagwide = redjit-flag with PROBE_WIDE=1 (states read over the warps, rj_red_fetch_wide),
# redjit-flag = warp 0's batches (rj_red_fetch, one slot a lane ahead). Probe builds read
# PROBE_* variables in NormSpec (not committed). Each kernel alone in its process, two rounds.
LIST="4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_softmax_online_f32_f32_s512x8_g 4x1000003@norm_logsoftmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g 4x1000008@norm_softmax_online_bf16_bf16_s512x8" BINS="redjit flagwide redjit-flag" ROUNDS=2 bash scripts/gpu-norm-ab.sh
