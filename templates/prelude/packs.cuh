// ---- redjit prelude: packs -------------------------------------------------
// The only place with inline PTX loads and stores. A load kind is a struct with
// the same four static loads, so a kernel picks it per source as a template
// argument:
//   rj_load_plain     ld.global           ordinary coherent loads
//   rj_load_volatile  ld.volatile.global  a buffer a peer GPU writes while we run:
//                                         never served from a stale L1 line
//   rj_load_nc        ld.global.nc        read-only for the whole kernel: the
//                                         non-coherent texture path
struct rj_b128 { rj_u32 x, y, z, w; };
struct rj_b64 { rj_u32 x, y; };

#define RJ_DEFINE_LOAD_KIND(KIND, QUAL, ASMQ)                                        \
  struct KIND {                                                                     \
    static __device__ __forceinline__ rj_b128 b128(rj_u64 a) {                      \
      rj_b128 v;                                                                    \
      asm ASMQ("ld" QUAL ".v4.u32 { %0,%1,%2,%3}, [%4];"                             \
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(a));             \
      return v;                                                                     \
    }                                                                               \
    static __device__ __forceinline__ rj_b64 b64(rj_u64 a) {                        \
      rj_b64 v;                                                                     \
      asm ASMQ("ld" QUAL ".v2.u32 { %0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(a)); \
      return v;                                                                     \
    }                                                                               \
    static __device__ __forceinline__ rj_u32 b32(rj_u64 a) {                        \
      rj_u32 v;                                                                     \
      asm ASMQ("ld" QUAL ".u32 %0, [%1];" : "=r"(v) : "l"(a));                      \
      return v;                                                                     \
    }                                                                               \
    static __device__ __forceinline__ rj_u16 b16(rj_u64 a) {                        \
      rj_u16 v;                                                                     \
      asm ASMQ("ld" QUAL ".u16 %0, [%1];" : "=h"(v) : "l"(a));                      \
      return v;                                                                     \
    }                                                                               \
  };

// Every load is volatile asm, so the compiler issues them in the order written:
// all of one source's packs, then the next source's. Left free, it hoisted the
// read-only loads of every source above the first one's adds, and an 8-source
// kernel ran out of registers and spilled.
RJ_DEFINE_LOAD_KIND(rj_load_volatile, ".volatile.global", volatile)
RJ_DEFINE_LOAD_KIND(rj_load_plain, ".global", volatile)
RJ_DEFINE_LOAD_KIND(rj_load_nc, ".global.nc", volatile)
#undef RJ_DEFINE_LOAD_KIND

__device__ __forceinline__ void rj_st_b128(rj_u64 a, rj_b128 v) {
  asm volatile("st.global.v4.u32 [%0], { %1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void rj_st_b64(rj_u64 a, rj_b64 v) {
  asm volatile("st.global.v2.u32 [%0], { %1,%2};" :: "l"(a), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ void rj_st_b32(rj_u64 a, rj_u32 v) {
  asm volatile("st.global.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void rj_st_b16(rj_u64 a, rj_u16 v) {
  asm volatile("st.global.u16 [%0], %1;" :: "l"(a), "h"(v) : "memory");
}
// A b64 pack to an address only 2-byte aligned: four 16-bit stores.
__device__ __forceinline__ void rj_st_b64_by_b16(rj_u64 a, rj_b64 v) {
  rj_st_b16(a + 0, (rj_u16)(v.x & 0xffffu));
  rj_st_b16(a + 2, (rj_u16)(v.x >> 16));
  rj_st_b16(a + 4, (rj_u16)(v.y & 0xffffu));
  rj_st_b16(a + 6, (rj_u16)(v.y >> 16));
}
