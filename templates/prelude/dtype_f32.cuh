// ---- redjit prelude: f32 -------------------------------------------------
// Every dtype file defines a struct rj_dtype_<t> with the same members (see the
// generic I/O at the end of packs.cuh); f32 is never narrowed, so its stochastic
// stores are its plain ones.
struct rj_dtype_f32 {
  static const int kBytes = 4;
  static const int kWords = 4;
  template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) { return rj_bits_as_f32(L::b32(a + i * 4)); }
  static __device__ __forceinline__ void st1(rj_u64 a, rj_u64 i, float x) { rj_st_b32(a + i * 4, rj_f32_as_bits(x)); }
  static __device__ __forceinline__ void st1_sr(rj_u64 a, rj_u64 i, float x, rj_u32) { st1(a, i, x); }
  static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[4], float (&v)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = rj_bits_as_f32(w[e]);
  }
  static __device__ __forceinline__ void pack4(const float (&v)[4], rj_u32 (&w)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) w[e] = rj_f32_as_bits(v[e]);
  }
  static __device__ __forceinline__ void pack4_sr(const float (&v)[4], const rj_u32 (&)[4], rj_u32 (&w)[4]) { pack4(v, w); }
};
