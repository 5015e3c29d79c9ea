// ---- redjit prelude: e5m2 ------------------------------------------------------
// OCP FP8 E5M2 (bias 15, IEEE-like: infinities and NaNs), a load-only reduce
// input; widened through f16 (RJ_FP8_DTYPE, prelude/packs8.cuh).
RJ_FP8_DTYPE(e5m2)
