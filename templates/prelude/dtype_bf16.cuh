// ---- redjit prelude: bf16 ------------------------------------------------
// Same functions as dtype_f32.cuh. Widening is exact (bf16 is the top half of an
// f32); narrowing is cvt.rn (round to nearest even, NaN stays NaN), two at a time.
__device__ __forceinline__ float rj_bf16_to_f32(rj_u32 bits16) { return rj_bits_as_f32(bits16 << 16); }
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
template <class L> __device__ __forceinline__ float rj_ld1_bf16(rj_u64 a, rj_u64 i) {
  return rj_bf16_to_f32(L::b16(a + i * 2));
}
template <class L> __device__ __forceinline__ void rj_ld4_bf16(rj_u64 a, rj_u64 i, bool aligned, float (&v)[4]) {
  if (aligned) {
    rj_b64 p = L::b64(a + i * 2);
    v[0] = rj_bits_as_f32(p.x << 16); v[1] = rj_bits_as_f32(p.x & 0xffff0000u);
    v[2] = rj_bits_as_f32(p.y << 16); v[3] = rj_bits_as_f32(p.y & 0xffff0000u);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = rj_ld1_bf16<L>(a, i + e);
  }
}
__device__ __forceinline__ void rj_st1_bf16(rj_u64 a, rj_u64 i, float x) { rj_st_b16(a + i * 2, rj_f32_to_bf16_rn(x)); }
__device__ __forceinline__ void rj_st4_bf16(rj_u64 a, rj_u64 i, bool aligned, const float (&v)[4]) {
  rj_b64 p = {rj_f32x2_to_bf16x2_rn(v[0], v[1]), rj_f32x2_to_bf16x2_rn(v[2], v[3])};
  if (aligned) rj_st_b64(a + i * 2, p);
  else rj_st_b64_by_b16(a + i * 2, p);
}
// Stochastic rounding: add 16 random bits below the kept mantissa, then truncate,
// so x rounds up with probability (x - down) / (up - down); a carry past the
// largest finite value gives Inf, as rounding up there should. NaN gives the
// canonical NaN (as cvt.rn does); +-Inf and +-0 stay.
__device__ __forceinline__ rj_u16 rj_f32_to_bf16_sr(float x, rj_u32 r) {
  const rj_u32 u = rj_f32_as_bits(x);
  const rj_u32 a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;
  if (a == 0x7f800000u) return (rj_u16)(u >> 16);
  return (rj_u16)((u + (r & 0xffffu)) >> 16);
}
__device__ __forceinline__ void rj_st1_bf16_sr(rj_u64 a, rj_u64 i, float x, rj_u32 r) {
  rj_st_b16(a + i * 2, rj_f32_to_bf16_sr(x, r));
}
__device__ __forceinline__ void rj_st4_bf16_sr(rj_u64 a, rj_u64 i, bool aligned, const float (&v)[4], const rj_u32 (&r)[4]) {
  rj_b64 p = {(rj_u32)rj_f32_to_bf16_sr(v[0], r[0]) | ((rj_u32)rj_f32_to_bf16_sr(v[1], r[1]) << 16),
              (rj_u32)rj_f32_to_bf16_sr(v[2], r[2]) | ((rj_u32)rj_f32_to_bf16_sr(v[3], r[3]) << 16)};
  if (aligned) rj_st_b64(a + i * 2, p);
  else rj_st_b64_by_b16(a + i * 2, p);
}
