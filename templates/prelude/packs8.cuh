// ---- redjit prelude: byte loads -----------------------------------------------
// The 8-bit loads of the 1-byte element types (fp8, i8), one per load kind of
// packs.cuh, apart from it so that kernels without a 1-byte type keep their text.
// Whole packs of 1-byte types use packs.cuh's word loads; only the element path
// (a misaligned head, a tail) reads single bytes, which a 16-bit load could not
// do without touching a byte past the buffer. The byte is zero-extended; each
// dtype file widens it.
typedef unsigned char rj_u8;

template <class L> struct rj_ld8;
#define RJ_DEFINE_LOAD8(KIND, QUAL)                                               \
  template <> struct rj_ld8<KIND> {                                              \
    static __device__ __forceinline__ rj_u32 b8(rj_u64 a) {                      \
      rj_u32 v;                                                                  \
      asm volatile("ld" QUAL ".u8 %0, [%1];" : "=r"(v) : "l"(a));                \
      return v;                                                                  \
    }                                                                            \
  };
RJ_DEFINE_LOAD8(rj_load_volatile, ".volatile.global")
RJ_DEFINE_LOAD8(rj_load_plain, ".global")
RJ_DEFINE_LOAD8(rj_load_nc, ".global.nc")
#undef RJ_DEFINE_LOAD8

// A pack of 4 one-byte elements is one 32-bit word. packs.cuh's rj_ld4 reads a
// pack through rj_ld_words, which has the 2- and 4-word packs only and finds no
// later overload (its argument is an array of a fundamental type: no
// argument-dependent lookup), so each 1-byte dtype file specialises rj_ld4 for
// its struct and every load kind with this macro, after the struct.
#define RJ_BYTE_PACK_LOAD(T, L)                                                             \
  template <> __device__ __forceinline__ void rj_ld4<T, L>(rj_u64 a, rj_u64 i, float (&v)[4]) { \
    const rj_u32 w[1] = {L::b32(a + i)};                                                    \
    T::unpack4(w, v);                                                                       \
  }
#define RJ_BYTE_PACK_LOADS(T)              \
  RJ_BYTE_PACK_LOAD(T, rj_load_volatile) \
  RJ_BYTE_PACK_LOAD(T, rj_load_plain)    \
  RJ_BYTE_PACK_LOAD(T, rj_load_nc)

// ---- fp8 formats (a dtype file names its format: RJ_FP8_DTYPE(e4m3)) ----------
// Widening goes through f16, exactly: cvt.rn.f16x2.<F>x2 (sm_89+) turns two
// bytes into two f16 (the lower byte into the lower half; every e4m3 and e5m2
// value is an f16 value, so the .rn never rounds), then cvt.f32.f16. A NaN stays
// a NaN and an infinity infinite (PyTorch's NaN policy then applies in the
// functors). A pack of 4 is one 32-bit word (byte k is element k).
__device__ __forceinline__ float rj_f16x2_half_to_f32(rj_u32 h2, int upper) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((rj_u16)(upper ? h2 >> 16 : h2)));
  return f;
}
#define RJ_FP8_DTYPE(F)                                                                            \
  __device__ __forceinline__ rj_u32 rj_##F##x2_to_f16x2(rj_u32 two) {                              \
    rj_u32 h;                                                                                      \
    asm("cvt.rn.f16x2." #F "x2 %0, %1;" : "=r"(h) : "h"((rj_u16)two));                           \
    return h;                                                                                      \
  }                                                                                                \
  struct rj_dtype_##F {                                                                            \
    static const int kBytes = 1;                                                                   \
    static const int kWords = 1;                                                                   \
    template <class L> static __device__ __forceinline__ float ld1(rj_u64 a, rj_u64 i) {           \
      return rj_f16x2_half_to_f32(rj_##F##x2_to_f16x2(rj_ld8<L>::b8(a + i)), 0);                   \
    }                                                                                              \
    static __device__ __forceinline__ void unpack4(const rj_u32 (&w)[1], float (&v)[4]) {          \
      const rj_u32 lo = rj_##F##x2_to_f16x2(w[0] & 0xffffu), hi = rj_##F##x2_to_f16x2(w[0] >> 16); \
      v[0] = rj_f16x2_half_to_f32(lo, 0);                                                          \
      v[1] = rj_f16x2_half_to_f32(lo, 1);                                                          \
      v[2] = rj_f16x2_half_to_f32(hi, 0);                                                          \
      v[3] = rj_f16x2_half_to_f32(hi, 1);                                                          \
    }                                                                                              \
  };                                                                                               \
  RJ_BYTE_PACK_LOADS(rj_dtype_##F)
