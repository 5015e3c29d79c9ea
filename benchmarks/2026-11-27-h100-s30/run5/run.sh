# run5 (call 13): flagged one-pass states for every one-pass split kernel, read without an
# early ask (flagall: a probe build, PROBE_FLAG_ALL=1), against the commit of run4 (redjit,
# 895b7b3: general twins of <= 4 packs, early ask) and the session's start (redjit-head,
# 758efe4). Each kernel alone in its process, two rounds.
LIST="4x1000003@norm_softmax_online_bf16_bf16_s512x8_g 4x1000003@norm_softmax_online_f32_f32_s512x8_g 4x1000003@norm_logsoftmax_online_bf16_bf16_s512x8_g 4x1000003@norm_rmsnorm_res_bf16_bf16_s512x4_o2_g 4x1000008@norm_softmax_online_bf16_bf16_s512x8 4x1000008@norm_rmsnorm_f32_f32_s512x8" BINS="redjit-head redjit flagall" ROUNDS=2 bash scripts/gpu-norm-ab.sh
