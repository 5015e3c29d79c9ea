// ---- redjit prelude: peer memory (all-reduce) ------------------------------
// The pointer table, the signal barrier and 16-byte packs of any dtype, for
// kernels that read and write other ranks' memory (peer-mapped or IPC-opened
// allocations, or, in the test placement, other buffers of the same GPU).

// One device address per rank, passed by value as a kernel parameter (no device
// table to keep in sync with the host). A kernel's tables hold its world's
// entries only: the driver copies a parameter's declared size from the host's
// 8-entry table, and fewer bytes keep the parameters in fewer lines of the
// parameter bank, each of which a warp waits for. rj_ar_ptrs is the 8-entry
// form the one-shot kernels read from device memory.
template <int R>
struct rj_ar_table { rj_u64 p[R]; };
typedef rj_ar_table<8> rj_ar_ptrs;

// Entry i of a table, for an i known only at run time: a chain of selects keeps
// the table in the parameter space. Indexing it copies it to local memory, and
// so did plain C selects, which the compiler turned back into an indexed load:
// the selects are PTX.
template <int R, int N>
__device__ __forceinline__ rj_u64 rj_ar_pick(const rj_ar_table<N>& t, rj_u32 i) {
  static_assert(R <= N, "a table holds every rank picked from it");
  rj_u64 r = t.p[0];
#pragma unroll
  for (int k = 1; k < R; ++k)
    asm("{ .reg .pred p; setp.eq.u32 p, %2, %3; selp.b64 %0, %1, %4, p; }"
        : "=l"(r) : "l"(t.p[k]), "r"(i), "r"((rj_u32)k), "l"(r));
  return r;
}

// Signal buffer layout; codegen's spec::all_reduce::signal computes the same
// offsets (a test compares these constants with it):
//   flag[kSlots][kMaxBlocks][kMaxRanks] u32 -- flag[s][b][r] is written only by rank r
//   counter[kMaxBlocks] u32                 -- counter[b] only by this rank's block b
static const rj_u32 kArMaxRanks = 8;
static const rj_u32 kArMaxBlocks = 128;
static const rj_u32 kArSlots = 2;
__device__ __forceinline__ rj_u64 rj_ar_flag_off(rj_u32 slot, rj_u32 block, rj_u32 from) {
  return (rj_u64)(((slot * kArMaxBlocks + block) * kArMaxRanks + from) * 4u);
}
__device__ __forceinline__ rj_u64 rj_ar_counter_off(rj_u32 block) {
  return (rj_u64)((kArSlots * kArMaxBlocks * kArMaxRanks + block) * 4u);
}

__device__ __forceinline__ rj_u64 rj_globaltimer() {
  rj_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void rj_st_release_sys(rj_u64 a, rj_u32 v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory");
}
__device__ __forceinline__ rj_u32 rj_ld_acquire_sys(rj_u64 a) {
  rj_u32 v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
__device__ __forceinline__ void rj_st_relaxed_sys(rj_u64 a, rj_u32 v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" :: "l"(a), "r"(v) : "memory");
}
// With strong writes after it, each a release of what came before (a release
// pattern): one fence's wait for many flags, where a release store a flag
// waits out the last flag's round trip before the next (MEMBAR.ALL.SYS each).
__device__ __forceinline__ void rj_fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
// A peer polls what this stores (the LL push kernel's flagged lines): volatile,
// so it is neither merged nor held back, and each 8-byte half lands whole.
__device__ __forceinline__ void rj_st_volatile_b128(rj_u64 a, rj_b128 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], { %1,%2,%3,%4};" :: "l"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
// __syncthreads_and without a toolkit header.
__device__ __forceinline__ bool rj_block_all(bool p) {
  rj_u32 r;
  asm volatile("{ .reg .pred pi, po; setp.ne.u32 pi, %1, 0; bar.red.and.pred po, 0, pi; selp.u32 %0, 1, 0, po; }"
               : "=r"(r) : "r"((rj_u32)p) : "memory");
  return r != 0u;
}

// The error word's encoding (the host decodes it: all_reduce::protocol):
// bit 31 set, barrier kind in bits 24..30, the peer waited for in 16..23, the
// block in 0..15. kArData: the LL push kernel, polling for a peer's flagged data.
enum : rj_u32 { kArStart = 1, kArMiddle = 2, kArEnd = 3, kArData = 4 };
// Records in the error word that this block, waiting (`kind`) for `peer`,
// timed out.
__device__ __forceinline__ void rj_ar_timed_out(rj_u64 error, rj_u32 kind, rj_u32 peer) {
  rj_st_relaxed_sys(error, 0x80000000u | (kind << 24) | (peer << 16) | (blockIdx.x & 0xffffu));
}

// Waits (ld.acquire.sys) until the word at `at` is `want`: false, with the
// error word written, once timeout_ns has passed.
__device__ __forceinline__ bool rj_ar_wait(rj_u64 at, rj_u32 want, rj_u64 timeout_ns, rj_u64 error, rj_u32 kind,
                                           rj_u32 peer) {
  const rj_u64 t0 = rj_globaltimer();
  while (rj_ld_acquire_sys(at) != want) {
    if (rj_globaltimer() - t0 > timeout_ns) {
      rj_ar_timed_out(error, kind, peer);
      return false;
    }
  }
  return true;
}

// The signal barrier (seed 003 step 3; modelled on the CPU in
// all_reduce::protocol). Block b of every rank takes part; thread t < R talks to
// rank t:
//   c = counter[b] + 1, slot = c & 1
//   st.release.sys  peer t's flag[slot][b][rank] = c
//   spin            ld.acquire.sys own flag[slot][b][t] == c   (bounded)
// Counters only grow (u32, compared for equality, so wrap-around is harmless) and
// each barrier uses the other slot than the one before: a fast rank that is
// already at the next barrier writes c + 1 into the other slot and cannot
// overwrite the c a slow rank still watches; it cannot get two barriers ahead,
// since the one after next needs the slow rank's c + 1. Every word has one
// writer (no bytes of a shared word: vLLM PR #2760).
//
// Memory ordering. Release/acquire at system scope, not relaxed flags plus
// fences: the data a rank wrote before the barrier (its input, written by
// earlier work on its stream; its reduce-scatter slice; or nothing but its
// reads, at the end barrier) happens before its release: the CTA barrier
// (bar.sync) orders every thread's accesses before thread t's st.release, and
// release is cumulative over what happens before it. A peer's ld.acquire that
// reads c then orders that peer's later loads after those writes, and its own
// bar.sync hands this on to the rest of its block. At the end barrier the same
// release orders this rank's reads of peer memory before the peer may overwrite
// it (its next call's input or slice). .sys, not .gpu: peers are other GPUs.
//
// Bounded: a peer that does not arrive within timeout_ns (measured with
// %globaltimer) makes the waiting thread record the error word and the whole
// block return false; the kernel then returns (never __trap(), which would
// poison the context), and the host marks the communicator broken.
template <int R>
__device__ __forceinline__ bool rj_ar_barrier(const rj_ar_table<R>& sig, rj_u32 rank, rj_u64 timeout_ns,
                                              rj_u64 error, rj_u32 kind) {
  const rj_u32 b = blockIdx.x;
  const rj_u64 self = rj_ar_pick<R>(sig, rank);
  rj_u32 c = 0;
  bool ok = true;
  // Every thread's accesses before this barrier are done before any release.
  __syncthreads();
  if (threadIdx.x < (rj_u32)R) {
    c = rj_load_volatile::b32(self + rj_ar_counter_off(b)) + 1u;
    const rj_u32 slot = c & 1u;
    rj_st_release_sys(rj_ar_pick<R>(sig, threadIdx.x) + rj_ar_flag_off(slot, b, rank), c);
    ok = rj_ar_wait(self + rj_ar_flag_off(slot, b, threadIdx.x), c, timeout_ns, error, kind, threadIdx.x);
  }
  // Every thread learns whether all peers arrived; the counter is written after
  // every signalling thread has read it.
  ok = rj_block_all(ok);
  if (threadIdx.x == 0) rj_st_b32(self + rj_ar_counter_off(b), c);
  return ok;
}

// ---- LL lines (NCCL's low-latency protocol): 8 bytes of data and a flag in
// each 8-byte half of a 16-byte line, so a line's data is there when its flags
// are (each 8-byte half lands whole).
// Byte offset in a region of pack p's line h (0: its first 8 bytes, 1: its
// last 8). A group of 32 packs keeps its 32 first lines, then its 32 last ones:
// a warp's store of one half covers 512 contiguous bytes, whole sectors on the
// link, where lines side by side would fill half of each sector per store.
// The region holds whole groups (the launcher rounds ll_bytes up to 512).
__device__ __forceinline__ rj_u64 rj_ll_line(rj_u64 p, int h) {
  return ((p & ~(rj_u64)31) * 2u + (rj_u64)h * 32u + (p & 31u)) * 16u;
}
// Stores pack v as pack p's two lines, flagged c, into the region at `a`.
__device__ __forceinline__ void rj_ll_send(rj_u64 a, rj_u64 p, rj_u32 c, rj_b128 v) {
  rj_st_volatile_b128(a + rj_ll_line(p, 0), rj_b128{v.x, c, v.y, c});
  rj_st_volatile_b128(a + rj_ll_line(p, 1), rj_b128{v.z, c, v.w, c});
}
// Waits until both lines of pack p in the region at `a` carry `c`, the call's
// flag (false, with the error word written, once timeout_ns has passed), then
// gives the pack's data.
__device__ __forceinline__ bool rj_ll_recv(rj_u64 a, rj_u64 p, rj_u32 c, rj_u64 timeout_ns, rj_u64 error,
                                           rj_u32 from, rj_b128& v) {
  const rj_u64 a0 = a + rj_ll_line(p, 0), a1 = a + rj_ll_line(p, 1);
  rj_b128 lo = rj_load_volatile::b128(a0), hi = rj_load_volatile::b128(a1);
  if (lo.y != c || lo.w != c || hi.y != c || hi.w != c) {
    const rj_u64 t0 = rj_globaltimer();
    for (;;) {
      lo = rj_load_volatile::b128(a0);
      hi = rj_load_volatile::b128(a1);
      if (lo.y == c && lo.w == c && hi.y == c && hi.w == c) break;
      if (rj_globaltimer() - t0 > timeout_ns) {
        rj_ar_timed_out(error, kArData, from);
        return false;
      }
    }
  }
  v = rj_b128{lo.x, lo.z, hi.x, hi.z};
  return true;
}

// ---- 16-byte packs of a dtype: 16 / T::kBytes elements, widened to f32.
template <class T>
__device__ __forceinline__ void rj_ar_unpack16(const rj_b128 p, float (&v)[16 / T::kBytes]) {
  const rj_u32 w[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
  for (int g = 0; g < 4 / T::kWords; ++g) {
    rj_u32 ww[T::kWords];
#pragma unroll
    for (int k = 0; k < T::kWords; ++k) ww[k] = w[g * T::kWords + k];
    float vv[4];
    T::unpack4(ww, vv);
#pragma unroll
    for (int e = 0; e < 4; ++e) v[g * 4 + e] = vv[e];
  }
}
template <class T>
__device__ __forceinline__ rj_b128 rj_ar_pack16(const float (&v)[16 / T::kBytes]) {
  rj_u32 w[4];
#pragma unroll
  for (int g = 0; g < 4 / T::kWords; ++g) {
    float vv[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) vv[e] = v[g * 4 + e];
    rj_u32 ww[T::kWords];
    T::pack4(vv, ww);
#pragma unroll
    for (int k = 0; k < T::kWords; ++k) w[g * T::kWords + k] = ww[k];
  }
  return rj_b128{w[0], w[1], w[2], w[3]};
}

// cp.async and shared loads: packs.cuh.
