// ---- redjit prelude: f16 -------------------------------------------------
// Widening is exact (cvt.f32.f16). Narrowing to nearest is cvt.rn (ties to even,
// subnormals kept, overflow to +-Inf, NaN to the canonical NaN), two at a time.
// Stochastic rounding is exact integer arithmetic over the f32 bits, so the CPU
// twin matches bit for bit:
//   |x| >= 2^-14 (f16 normal): add 13 random bits below the kept mantissa and
//     truncate; a result >= 65536 (past the largest finite, 65504) is Inf.
//   |x| <  2^-14 (f16 subnormal, ulp 2^-24): keep floor(|x| / 2^-24) and round up
//     when a d-bit random number is below the d dropped bits (d >= 14; for
//     d > 32 the top 32 dropped bits are compared with all 32 random bits).
// NaN gives the canonical NaN (as cvt.rn does); +-Inf and +-0 stay.
__device__ __forceinline__ float rj_f16_to_f32(rj_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ rj_u16 rj_f32_to_f16_rn(float x) {
  rj_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
// lo goes to the low half (the lower address), hi to the high half.
__device__ __forceinline__ rj_u32 rj_f32x2_to_f16x2_rn(float lo, float hi) {
  rj_u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ rj_u16 rj_f32_to_f16_sr(float x, rj_u32 r) {
  const rj_u32 u = rj_f32_as_bits(x);
  const rj_u32 sign = (u >> 16) & 0x8000u;
  const rj_u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;
  if (a == 0x7f800000u) return (rj_u16)(sign | 0x7c00u);
  if (a >= 0x38800000u) {
    const rj_u32 v = (a + (r & 0x1fffu)) & ~0x1fffu;
    if (v >= 0x47800000u) return (rj_u16)(sign | 0x7c00u);
    return (rj_u16)(sign | ((((v >> 23) - 112u) << 10) | ((v >> 13) & 0x3ffu)));
  }
  const rj_u32 e = a >> 23;
  const rj_u32 m = (a & 0x7fffffu) | (e != 0 ? 0x800000u : 0u);
  const rj_u32 d = 126u - (e != 0 ? e : 1u);
  rj_u32 units, up;
  if (d < 32) {
    units = m >> d;
    up = (r >> (32 - d)) < (m & ((1u << d) - 1u)) ? 1u : 0u;
  } else {
    units = 0;
    up = (d - 32 < 32 && r < (m >> (d - 32))) ? 1u : 0u;
  }
  return (rj_u16)(sign | (units + up));
}
struct rj_dtype_f16 {
  static const int kBytes = 2;
  static const int kWords = 2;
  template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) { return rj_f16_to_f32(L::b16(a + i * 2)); }
  static __device__ __forceinline__ void st1(rj_u64 a, rj_u64 i, float x) { rj_st_b16(a + i * 2, rj_f32_to_f16_rn(x)); }
  static __device__ __forceinline__ void st1_sr(rj_u64 a, rj_u64 i, float x, rj_u32 r) { rj_st_b16(a + i * 2, rj_f32_to_f16_sr(x, r)); }
  static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[2], float (&v)[4]) {
    v[0] = rj_f16_to_f32(rj_half(w[0], 0)); v[1] = rj_f16_to_f32(rj_half(w[0], 1));
    v[2] = rj_f16_to_f32(rj_half(w[1], 0)); v[3] = rj_f16_to_f32(rj_half(w[1], 1));
  }
  static __device__ __forceinline__ void pack4(const float (&v)[4], rj_u32 (&w)[2]) {
    w[0] = rj_f32x2_to_f16x2_rn(v[0], v[1]);
    w[1] = rj_f32x2_to_f16x2_rn(v[2], v[3]);
  }
  // The same bits as rj_f32_to_f16_sr, cheaper when no element is an f16
  // subnormal: outside that range the rounded f32 (13 random bits added, then
  // truncated to f16's 10-bit mantissa) is exactly an f16, +-0, Inf or NaN, so
  // the packed cvt.rn only repacks it (65536 and up become Inf, as they should).
  // Integer rounding per element cost f16 stochastic rounding 15 % of copy
  // bandwidth against bf16's.
  static __device__ __forceinline__ void pack4_sr(const float (&v)[4], const rj_u32 (&r)[4], rj_u32 (&w)[2]) {
    float y[4];
    bool subnormal = false;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const rj_u32 u = rj_f32_as_bits(v[e]);
      const rj_u32 a = u & 0x7fffffffu;
      subnormal |= a - 1u < 0x38800000u - 1u;
      y[e] = a >= 0x7f800000u ? v[e] : rj_bits_as_f32((u + (r[e] & 0x1fffu)) & ~0x1fffu);
    }
    if (subnormal) {
      w[0] = (rj_u32)rj_f32_to_f16_sr(v[0], r[0]) | ((rj_u32)rj_f32_to_f16_sr(v[1], r[1]) << 16);
      w[1] = (rj_u32)rj_f32_to_f16_sr(v[2], r[2]) | ((rj_u32)rj_f32_to_f16_sr(v[3], r[3]) << 16);
    } else {
      w[0] = rj_f32x2_to_f16x2_rn(y[0], y[1]);
      w[1] = rj_f32x2_to_f16x2_rn(y[2], y[3]);
    }
  }
};
