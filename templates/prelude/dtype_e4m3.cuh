// ---- redjit prelude: e4m3 ------------------------------------------------------
// OCP FP8 E4M3 (bias 7, no infinities; S.1111.111 is NaN, largest 448), a load-only reduce input. A pack
// of 4 is one 32-bit word (byte k is element k, the lower address first).
// Widening goes through f16, exactly: cvt.rn.f16x2.e4m3x2 (sm_89+) turns two
// bytes into two f16 (the lower byte into the lower half; every e4m3 value is an
// f16 value, so the .rn never rounds), then cvt.f32.f16. A NaN stays a NaN
// (PyTorch's NaN policy then applies in the functors).
__device__ __forceinline__ rj_u32 rj_e4m3x2_to_f16x2(rj_u32 two) {
  rj_u32 h;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"((rj_u16)two));
  return h;
}
__device__ __forceinline__ float rj_e4m3_half_to_f32(rj_u32 h2, int upper) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((rj_u16)(upper ? h2 >> 16 : h2)));
  return f;
}
struct rj_dtype_e4m3 {
  static const int kBytes = 1;
  static const int kWords = 1;
  template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) {
    return rj_e4m3_half_to_f32(rj_e4m3x2_to_f16x2(rj_ld8<L>::b8(a + i)), 0);
  }
  static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[1], float (&v)[4]) {
    const rj_u32 lo = rj_e4m3x2_to_f16x2(w[0] & 0xffffu), hi = rj_e4m3x2_to_f16x2(w[0] >> 16);
    v[0] = rj_e4m3_half_to_f32(lo, 0); v[1] = rj_e4m3_half_to_f32(lo, 1);
    v[2] = rj_e4m3_half_to_f32(hi, 0); v[3] = rj_e4m3_half_to_f32(hi, 1);
  }
};
RJ_BYTE_PACK_LOADS(rj_dtype_e4m3)
