// ---- redjit prelude: f16 -------------------------------------------------
// Same functions as dtype_f32.cuh. Widening is exact (cvt.f32.f16); narrowing is
// cvt.rn (round to nearest even, subnormals kept, overflow to +-Inf), two at a time.
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
template <class L> __device__ __forceinline__ float rj_ld1_f16(rj_u64 a, rj_u64 i) {
  return rj_f16_to_f32(L::b16(a + i * 2));
}
template <class L> __device__ __forceinline__ void rj_ld4_f16(rj_u64 a, rj_u64 i, bool aligned, float (&v)[4]) {
  if (aligned) {
    rj_b64 p = L::b64(a + i * 2);
    v[0] = rj_f16_to_f32((rj_u16)(p.x & 0xffffu)); v[1] = rj_f16_to_f32((rj_u16)(p.x >> 16));
    v[2] = rj_f16_to_f32((rj_u16)(p.y & 0xffffu)); v[3] = rj_f16_to_f32((rj_u16)(p.y >> 16));
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = rj_ld1_f16<L>(a, i + e);
  }
}
__device__ __forceinline__ void rj_st1_f16(rj_u64 a, rj_u64 i, float x) { rj_st_b16(a + i * 2, rj_f32_to_f16_rn(x)); }
__device__ __forceinline__ void rj_st4_f16(rj_u64 a, rj_u64 i, bool aligned, const float (&v)[4]) {
  rj_b64 p = {rj_f32x2_to_f16x2_rn(v[0], v[1]), rj_f32x2_to_f16x2_rn(v[2], v[3])};
  if (aligned) rj_st_b64(a + i * 2, p);
  else rj_st_b64_by_b16(a + i * 2, p);
}
