// ---- redjit prelude: packs -------------------------------------------------
// The only place with inline PTX loads and stores. A load kind is a struct with
// the same four static loads, so a kernel picks it per source as a template
// argument:
//   rj_load_plain     ld.global           ordinary coherent loads
//   rj_load_volatile  ld.volatile.global  a buffer a peer GPU writes while we run:
//                                         never served from a stale L1 line
//   rj_load_nc        ld.global.nc        read-only for the whole kernel: the
//                                         non-coherent texture path
//   rj_load_stream    ld.global.nc        the same, read once: no L1 line, so
//                     .L1::no_allocate    what L1 holds (a norm's weights) stays
//   rj_load_nc_line   ld.global.nc        read-only, each L2 miss filled as a
//                     .L2::128B           whole 128-byte line (a warp's loads
//                                         that cover a line in several pieces)
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
RJ_DEFINE_LOAD_KIND(rj_load_stream, ".global.nc.L1::no_allocate", volatile)
RJ_DEFINE_LOAD_KIND(rj_load_nc_line, ".global.nc.L2::128B", volatile)
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

// ---- cp.async (sm_80+): global -> shared without passing through registers.
// 16 bytes may bypass L1 (.cg); 8 bytes must go through it (.ca). Shared
// addresses are 32-bit offsets in the shared window.
__device__ __forceinline__ rj_u32 rj_smem_addr(const void* p) {
  rj_u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void rj_cp_async16(rj_u32 smem, rj_u64 global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem), "l"(global) : "memory");
}
__device__ __forceinline__ void rj_cp_async8(rj_u32 smem, rj_u64 global) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(smem), "l"(global) : "memory");
}
__device__ __forceinline__ void rj_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void rj_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ rj_b128 rj_ld_shared_b128(rj_u32 a) {
  rj_b128 v;
  asm volatile("ld.shared.v4.u32 { %0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ rj_b64 rj_ld_shared_b64(rj_u32 a) {
  rj_b64 v;
  asm volatile("ld.shared.v2.u32 { %0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void rj_st_shared_b128(rj_u32 a, rj_b128 v) {
  asm volatile("st.shared.v4.u32 [%0], { %1,%2,%3,%4};" :: "r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void rj_st_shared_b64(rj_u32 a, rj_b64 v) {
  asm volatile("st.shared.v2.u32 [%0], { %1,%2};" :: "r"(a), "r"(v.x), "r"(v.y) : "memory");
}

// ---- packs as words: one pack is W 32-bit words (W = 4: 16 bytes, 2: 8 bytes).
template <class L> __device__ __forceinline__ void rj_ld_words(rj_u64 a, rj_u32 (&w)[4]) {
  const rj_b128 p = L::b128(a);
  w[0] = p.x; w[1] = p.y; w[2] = p.z; w[3] = p.w;
}
template <class L> __device__ __forceinline__ void rj_ld_words(rj_u64 a, rj_u32 (&w)[2]) {
  const rj_b64 p = L::b64(a);
  w[0] = p.x; w[1] = p.y;
}
__device__ __forceinline__ void rj_st_words(rj_u64 a, const rj_u32 (&w)[4]) { rj_st_b128(a, rj_b128{w[0], w[1], w[2], w[3]}); }
__device__ __forceinline__ void rj_st_words(rj_u64 a, const rj_u32 (&w)[2]) { rj_st_b64(a, rj_b64{w[0], w[1]}); }

// ---- misaligned packs at full width -------------------------------------------
// A buffer m bytes past a pack boundary (0 < m < pack bytes) keeps vector accesses:
// in each unroll step the warp's 32 lanes touch 32 consecutive packs, so each lane
// loads (stores) the aligned block under its pack and takes the bytes that cross
// into the next block from its neighbour lane through a shuffle, then shifts them
// into place with a funnel shift. Lane 31's bytes past its block are the first
// block of the next step, which lane 0 loads; past the last step they are the next
// hunk's, which lane 31 loads itself, with the others, as one more aligned block.
// On stores, only the warp's two edges use 16-bit accesses: lane 0's bytes before
// its block's end (the block's first m bytes are another warp's) and lane 31's
// bytes past its block. Loads read whole aligned blocks around the elements the
// warp step covers: up to m bytes before the buffer (inside its allocation's
// aligned block) and, at the hunk's end, into the next pack, which the kernel
// guarantees is part of the buffer (its last pack goes to the tail).
__device__ __forceinline__ rj_u32 rj_shfl_down1(rj_u32 v) {
  rj_u32 r;
  asm volatile("shfl.sync.down.b32 %0, %1, 1, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v));
  return r;
}
__device__ __forceinline__ rj_u32 rj_shfl_up1(rj_u32 v) {
  rj_u32 r;
  asm volatile("shfl.sync.up.b32 %0, %1, 1, 0, 0xffffffff;" : "=r"(r) : "r"(v));
  return r;
}
// Lane i gets lane (i + 1) % 32's v.
__device__ __forceinline__ rj_u32 rj_shfl_next(rj_u32 v, rj_u32 lane) {
  rj_u32 r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"((lane + 1) & 31));
  return r;
}
__device__ __forceinline__ rj_u32 rj_shr64(rj_u32 lo, rj_u32 hi, rj_u32 bits) {
  rj_u32 r;
  asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(bits));
  return r;
}
// o = bytes [s, s + 4W) of the 8W bytes x ++ y, for s in [0, 4W): word selects and
// one funnel shift per word (shf.r.clamp by 0 is the low word). The shift is
// uniform at run time; selects keep the words in registers.
template <int W>
__device__ __forceinline__ void rj_funnel(rj_u32 s, const rj_u32 (&x)[W], const rj_u32 (&y)[W], rj_u32 (&o)[W]) {
  const rj_u32 q = s >> 2, bits = (s & 3) * 8;
  rj_u32 c[2 * W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    c[k] = x[k];
    c[W + k] = y[k];
  }
#pragma unroll
  for (int j = 0; j < W; ++j) {
    rj_u32 lo = c[j], hi = c[j + 1];
#pragma unroll
    for (int t = 1; t < W; ++t) {
      if (q == (rj_u32)t) {
        lo = c[j + t];
        hi = c[j + t + 1 < 2 * W ? j + t + 1 : 2 * W - 1];
      }
    }
    o[j] = rj_shr64(lo, hi, bits);
  }
}
__device__ __forceinline__ rj_u16 rj_half(rj_u32 w, int upper) { return (rj_u16)(upper ? w >> 16 : w & 0xffffu); }

// The pack at x = (aligned block) + m, 0 <= m < 4W, in two steps so a loop can
// issue every block load (of every source) before the first shuffle: shuffles are
// volatile asm, ordered with the (volatile) loads, so a shuffle between two loads
// holds the second until the first one's data is back.
//   rj_ld_block: the aligned block under the pack.
//   rj_ld_edge: in lane 31, the aligned block after the block under the pack (the
//     first block of the next hunk, for the hunk's last step); zeros elsewhere.
//   rj_shift_in: the bytes past the block from the next lane, shifted into place.
//     `after` is the block past the step's last one: lane 0's block of the next
//     step (`last` false), or lane 31's edge block (`last` true). For m == 0 the
//     block is the pack. m is the same for the whole warp (a constant of the
//     kernel), so the early return never splits a warp before a shuffle.
template <class L, int W>
__device__ __forceinline__ void rj_ld_block(rj_u64 x, rj_u32 m, rj_u32 (&lo)[W]) {
  rj_ld_words<L>(x - m, lo);
}
template <class L, int W>
__device__ __forceinline__ void rj_ld_edge(rj_u64 x, rj_u32 m, rj_u32 lane, rj_u32 (&edge)[W]) {
#pragma unroll
  for (int k = 0; k < W; ++k) edge[k] = 0;
  if (m != 0 && lane == 31) rj_ld_words<L>(x - m + 4 * W, edge);
}
template <int W>
__device__ __forceinline__ void rj_shift_in(rj_u32 m, rj_u32 lane, bool last, const rj_u32 (&lo)[W], const rj_u32 (&after)[W], rj_u32 (&w)[W]) {
  if (m == 0) {
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = lo[k];
    return;
  }
  rj_u32 hi[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    if (last) {
      hi[k] = rj_shfl_down1(lo[k]);
      if (lane == 31) hi[k] = after[k];
    } else {
      hi[k] = rj_shfl_next(lane == 0 ? after[k] : lo[k], lane);
    }
  }
  rj_funnel(m, lo, hi, w);
}

// Stores the pack d at x = (aligned block) + m, 0 <= m < 4W. The block under this
// pack is the previous lane's last m bytes, then this lane's first 4W - m. m is
// the same for the whole warp (a constant of the kernel): an aligned buffer
// stores directly, and no warp splits before a shuffle.
template <int W>
__device__ __forceinline__ void rj_st_words_any(rj_u64 x, rj_u32 m, rj_u32 lane, const rj_u32 (&d)[W]) {
  if (m == 0) {
    rj_st_words(x, d);
    return;
  }
  rj_u32 prev[W], block[W];
#pragma unroll
  for (int k = 0; k < W; ++k) prev[k] = rj_shfl_up1(d[k]);
  rj_funnel(4 * W - m, prev, d, block);
  if (lane != 0) rj_st_words(x - m, block);
  if (lane == 0 || lane == 31) {
#pragma unroll
    for (int j = 0; j < 2 * W; ++j) {
      const bool head = 2u * j < 4 * W - m;
      // Lane 0 writes its head (its block's start is another warp's); lane 31 its
      // tail, which lies past its block.
      if ((lane == 0) == head) rj_st_b16(x + 2 * j, rj_half(d[j / 2], j % 2));
    }
  }
}

// ---- dtype-generic element I/O. T is a dtype struct from prelude/dtype_*.cuh,
// each with the same members: kBytes, kWords (words per 4-element pack),
// unpack4, pack4, pack4_sr (stochastic rounding with one random word per
// element), ld1<L>, st1, st1_sr.
template <class T, class L> __device__ __forceinline__ void rj_ld4(rj_u64 a, rj_u64 i, float (&v)[4]) {
  rj_u32 w[T::kWords];
  rj_ld_words<L>(a + i * T::kBytes, w);
  T::unpack4(w, v);
}
// A misaligned source's U unroll steps (packs `step` elements apart from `i`):
// every step's aligned block, then in lane 31 the block past the last step.
template <class T, class L, int U>
__device__ __forceinline__ void rj_ld4_blocks(rj_u64 a, rj_u64 i, rj_u64 step, rj_u32 m, rj_u32 lane,
                                              rj_u32 (&raw)[U][T::kWords], rj_u32 (&edge)[T::kWords]) {
#pragma unroll
  for (int u = 0; u < U; ++u) rj_ld_block<L, T::kWords>(a + (i + u * step) * T::kBytes, m, raw[u]);
  rj_ld_edge<L, T::kWords>(a + (i + (U - 1) * step) * T::kBytes, m, lane, edge);
}
// Step u's pack from those blocks: its own block and the one after it (the next
// step's, or the edge block past the last step).
template <class T, int U>
__device__ __forceinline__ void rj_ld4_step(rj_u32 m, rj_u32 lane, int u, const rj_u32 (&raw)[U][T::kWords],
                                            const rj_u32 (&edge)[T::kWords], float (&v)[4]) {
  rj_u32 w[T::kWords];
  rj_shift_in<T::kWords>(m, lane, u == U - 1, raw[u], u == U - 1 ? edge : raw[u + 1 < U ? u + 1 : u], w);
  T::unpack4(w, v);
}
template <class T> __device__ __forceinline__ void rj_st4(rj_u64 a, rj_u64 i, const float (&v)[4]) {
  rj_u32 w[T::kWords];
  T::pack4(v, w);
  rj_st_words(a + i * T::kBytes, w);
}
template <class T> __device__ __forceinline__ void rj_st4_sr(rj_u64 a, rj_u64 i, const float (&v)[4], const rj_u32 (&r)[4]) {
  rj_u32 w[T::kWords];
  T::pack4_sr(v, r, w);
  rj_st_words(a + i * T::kBytes, w);
}
template <class T>
__device__ __forceinline__ void rj_st4_any(rj_u64 a, rj_u64 i, rj_u32 m, rj_u32 lane, const float (&v)[4]) {
  rj_u32 w[T::kWords];
  T::pack4(v, w);
  rj_st_words_any<T::kWords>(a + i * T::kBytes, m, lane, w);
}
template <class T>
__device__ __forceinline__ void rj_st4_sr_any(rj_u64 a, rj_u64 i, rj_u32 m, rj_u32 lane, const float (&v)[4], const rj_u32 (&r)[4]) {
  rj_u32 w[T::kWords];
  T::pack4_sr(v, r, w);
  rj_st_words_any<T::kWords>(a + i * T::kBytes, m, lane, w);
}
template <class T, class L> __device__ __forceinline__ float rj_ld1(rj_u64 a, rj_u64 i) { return T::template ld1<L>(a, i); }
template <class T> __device__ __forceinline__ void rj_st1(rj_u64 a, rj_u64 i, float x) { T::st1(a, i, x); }
template <class T> __device__ __forceinline__ void rj_st1_sr(rj_u64 a, rj_u64 i, float x, rj_u32 r) { T::st1_sr(a, i, x, r); }
