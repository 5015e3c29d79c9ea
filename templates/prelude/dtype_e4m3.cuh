// ---- redjit prelude: e4m3 ------------------------------------------------------
// OCP FP8 E4M3 (bias 7, no infinities; S.1111.111 is NaN, largest 448), a
// load-only reduce input; widened through f16 (RJ_FP8_DTYPE, prelude/packs8.cuh).
RJ_FP8_DTYPE(e4m3)
