// ---- redjit prelude: bf16 ------------------------------------------------
// Widening is exact (bf16 is the top half of an f32). Narrowing to nearest is
// cvt.rn (ties to even, NaN to the canonical NaN), two at a time. Stochastic
// rounding adds 16 random bits below the kept mantissa, then truncates, so x
// rounds up with probability (x - down) / (up - down); a carry past the largest
// finite value gives Inf, as rounding up there should. NaN gives the canonical
// NaN (as cvt.rn does); +-Inf and +-0 stay.
__device__ __forceinline__ rj_u16 rj_f32_to_bf16_rn(float x) {
  rj_u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
// lo goes to the low half (the lower address), hi to the high half.
__device__ __forceinline__ rj_u32 rj_f32x2_to_bf16x2_rn(float lo, float hi) {
  rj_u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ rj_u16 rj_f32_to_bf16_sr(float x, rj_u32 r) {
  const rj_u32 u = rj_f32_as_bits(x);
  const rj_u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;
  if (a == 0x7f800000u) return (rj_u16)(u >> 16);
  return (rj_u16)((u + (r & 0xffffu)) >> 16);
}
struct rj_dtype_bf16 {
  static const int kBytes = 2;
  static const int kWords = 2;
  template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) {
    return rj_bits_as_f32((rj_u32)L::b16(a + i * 2) << 16);
  }
  static __device__ __forceinline__ void st1(rj_u64 a, rj_u64 i, float x) { rj_st_b16(a + i * 2, rj_f32_to_bf16_rn(x)); }
  static __device__ __forceinline__ void st1_sr(rj_u64 a, rj_u64 i, float x, rj_u32 r) { rj_st_b16(a + i * 2, rj_f32_to_bf16_sr(x, r)); }
  static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[2], float (&v)[4]) {
    v[0] = rj_bits_as_f32(w[0] << 16); v[1] = rj_bits_as_f32(w[0] & 0xffff0000u);
    v[2] = rj_bits_as_f32(w[1] << 16); v[3] = rj_bits_as_f32(w[1] & 0xffff0000u);
  }
  static __device__ __forceinline__ void pack4(const float (&v)[4], rj_u32 (&w)[2]) {
    w[0] = rj_f32x2_to_bf16x2_rn(v[0], v[1]);
    w[1] = rj_f32x2_to_bf16x2_rn(v[2], v[3]);
  }
  static __device__ __forceinline__ void pack4_sr(const float (&v)[4], const rj_u32 (&r)[4], rj_u32 (&w)[2]) {
    w[0] = (rj_u32)rj_f32_to_bf16_sr(v[0], r[0]) | ((rj_u32)rj_f32_to_bf16_sr(v[1], r[1]) << 16);
    w[1] = (rj_u32)rj_f32_to_bf16_sr(v[2], r[2]) | ((rj_u32)rj_f32_to_bf16_sr(v[3], r[3]) << 16);
  }
};
