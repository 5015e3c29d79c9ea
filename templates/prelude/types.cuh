// ---- redjit prelude: types -------------------------------------------------
// Fixed-width integers and 16-bit float storage types, defined here so that NVRTC
// needs no CUDA toolkit header (no <cuda_bf16.h>: compiling it costs more than
// the whole kernel).
typedef unsigned short rj_u16;
typedef unsigned int rj_u32;
typedef unsigned long long rj_u64;
typedef long long rj_i64;

// 16-bit floats are kept as bits; arithmetic happens in f32.
struct __attribute__((aligned(2))) rj_bf16 { rj_u16 bits; };
struct __attribute__((aligned(2))) rj_f16 { rj_u16 bits; };

__device__ __forceinline__ float rj_bits_as_f32(rj_u32 b) { return __uint_as_float(b); }
__device__ __forceinline__ rj_u32 rj_f32_as_bits(float f) { return __float_as_uint(f); }

// Ld/st use .global addresses, converted once per buffer (as NCCL's cvta_to_global).
__device__ __forceinline__ rj_u64 rj_cvta_global(const void* p) {
  rj_u64 g;
  asm("cvta.to.global.u64 %0, %1;" : "=l"(g) : "l"(p));
  return g;
}
