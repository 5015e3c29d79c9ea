// ---- redjit prelude: norms with an FP8 (e4m3) output ----------------------------
// y is stored as e4m3(y / scale): cvt.rn.satfinite rounds to nearest even and
// saturates at +-448 (sm_89+); a NaN stays NaN. A pack of 4 is one 32-bit word
// (byte k is element k).
__device__ __forceinline__ rj_u32 rj_f32x2_to_e4m3x2_sat(float lo, float hi) {
  rj_u16 h;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(hi), "f"(lo));
  return h;
}
__device__ __forceinline__ void rj_st_b8(rj_u64 a, rj_u32 v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
// The output side of e4m3 for the norm kernels' stores.
struct rj_dtype_e4m3_sat {
  static const int kBytes = 1;
  static const int kWords = 1;
  static __device__ __forceinline__ void pack4(const float (&v)[4], rj_u32 (&w)[1]) {
    w[0] = rj_f32x2_to_e4m3x2_sat(v[0], v[1]) | (rj_f32x2_to_e4m3x2_sat(v[2], v[3]) << 16);
  }
  static __device__ __forceinline__ void st1(rj_u64 a, rj_u64 i, float x) {
    rj_st_b8(a + i, rj_f32x2_to_e4m3x2_sat(x, 0.0f) & 0xffu);
  }
};
// packs.cuh's rj_st4 stores 2- and 4-word packs; a 1-word pack is one 32-bit store.
template <> __device__ __forceinline__ void rj_st4<rj_dtype_e4m3_sat>(rj_u64 a, rj_u64 i, const float (&v)[4]) {
  rj_u32 w[1];
  rj_dtype_e4m3_sat::pack4(v, w);
  rj_st_b32(a + i, w[0]);
}

// The row's y divided by its scale, in place, before the store. kPerRow: the
// scale is the row's max |y| / 448, at least 1 / (448 x 512), reduced over the
// row's threads and written by the leader to scale[row]; else the one scale at
// `scale`. The division is y * (1 / scale), the reciprocal correctly rounded,
// or (kFast) both divisions through the MUFU's reciprocal.
template <bool kPerRow, int P, class C, class Red, bool kFast = false>
__device__ __forceinline__ void rj_fp8_scale_row(float (&y)[P][4], const C& c, const Red& red, bool leader, rj_u64 scale, rj_u64 row) {
  float s;
  if (kPerRow) {
    float m = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c.ok(p, k)) m = rj_max_nan(m, fabsf(y[p][k]));
    m = red(rj_red_max<rj_acc_f32>(), m);
    s = rj_max_nan(kFast ? rj_mul_rn(m, rj_rcp_approx(448.0f)) : rj_div_rn(m, 448.0f), 1.0f / (448.0f * 512.0f));
    if (leader) rj_st_b32(scale + row * 4, rj_f32_as_bits(s));
  } else {
    s = rj_bits_as_f32(rj_load_nc::b32(scale));
  }
  const float inv = kFast ? rj_rcp_approx(s) : rj_div_rn(1.0f, s);
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < 4; ++k) y[p][k] = rj_mul_rn(y[p][k], inv);
}
