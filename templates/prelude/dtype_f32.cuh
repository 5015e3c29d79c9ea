// ---- redjit prelude: f32 -------------------------------------------------
// Every dtype file defines, for element index i of the buffer at .global address a:
//   rj_ld1_<t><L>(a, i)              one element as f32
//   rj_ld4_<t><L>(a, i, aligned, v)  four elements; one vector load when aligned
//   rj_st1_<t>(a, i, x)              one element, rounded to nearest even
//   rj_st4_<t>(a, i, aligned, v)     four elements; one vector store when aligned
template <class L> __device__ __forceinline__ float rj_ld1_f32(rj_u64 a, rj_u64 i) {
  return rj_bits_as_f32(L::b32(a + i * 4));
}
template <class L> __device__ __forceinline__ void rj_ld4_f32(rj_u64 a, rj_u64 i, bool aligned, float (&v)[4]) {
  if (aligned) {
    rj_b128 p = L::b128(a + i * 4);
    v[0] = rj_bits_as_f32(p.x); v[1] = rj_bits_as_f32(p.y);
    v[2] = rj_bits_as_f32(p.z); v[3] = rj_bits_as_f32(p.w);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = rj_ld1_f32<L>(a, i + e);
  }
}
__device__ __forceinline__ void rj_st1_f32(rj_u64 a, rj_u64 i, float x) { rj_st_b32(a + i * 4, rj_f32_as_bits(x)); }
__device__ __forceinline__ void rj_st4_f32(rj_u64 a, rj_u64 i, bool aligned, const float (&v)[4]) {
  if (aligned) {
    rj_b128 p = {rj_f32_as_bits(v[0]), rj_f32_as_bits(v[1]), rj_f32_as_bits(v[2]), rj_f32_as_bits(v[3])};
    rj_st_b128(a + i * 4, p);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) rj_st1_f32(a, i + e, v[e]);
  }
}
// f32 is never narrowed: stochastic rounding stores as round-to-nearest does.
__device__ __forceinline__ void rj_st1_f32_sr(rj_u64 a, rj_u64 i, float x, rj_u32) { rj_st1_f32(a, i, x); }
__device__ __forceinline__ void rj_st4_f32_sr(rj_u64 a, rj_u64 i, bool aligned, const float (&v)[4], const rj_u32 (&)[4]) {
  rj_st4_f32(a, i, aligned, v);
}
