// ---- redjit prelude: i8 --------------------------------------------------------
// Signed 8-bit integers, a load-only reduce input. A pack of 4 is one 32-bit
// word (byte k is element k, the lower address first); each byte is
// sign-extended and widened to f32, which holds every i8 exactly (as it holds
// their products, |x y| <= 2^14), so the float functors' max, min, argmax and
// argmin are exact and the integer functors of reduce_int.cuh convert back
// without loss.
__device__ __forceinline__ float rj_i8_byte_to_f32(rj_u32 w, int k) {
  // Byte k to the top, then an arithmetic shift down: the sign extension.
  return (float)((int)(w << (24 - 8 * k)) >> 24);
}
struct rj_dtype_i8 {
  static const int kBytes = 1;
  static const int kWords = 1;
  template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) {
    return rj_i8_byte_to_f32(rj_ld8<L>::b8(a + i), 0);
  }
  static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[1], float (&v)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = rj_i8_byte_to_f32(w[0], e);
  }
};
RJ_BYTE_PACK_LOADS(rj_dtype_i8)
