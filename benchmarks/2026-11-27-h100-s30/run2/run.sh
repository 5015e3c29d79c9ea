# run2 (call 8): Nsight Compute, per-instruction stall samples, on the bf16 softmax split kernels
PAIRS="norm_softmax_online_bf16_bf16_s512x8_g@4x1000003 norm_softmax_online_bf16_bf16_s512x8@4x1000008" SOURCE=1 SECTIONS="SourceCounters" bash scripts/gpu-norm-ncu.sh
timeout 100 stage/bin/redjit bench norm --shapes 4x1000008 --dtypes bf16 --spec norm_softmax_online_bf16_bf16_s512x8 --spec norm_softmax_online_bf16_bf16_s512x8_g --spec norm_logsoftmax_online_bf16_bf16_s512x8
