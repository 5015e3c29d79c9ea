// ---- redjit prelude: norm ----------------------------------------------------
// Row operations of the norm family (softmax, log-softmax, layer norm, RMS norm)
// over a row held in registers: each thread holds kPacks packs of 4 elements,
// pack p of lane l covering elements first + (p * kLanes + l) * 4 .. + 3, so each
// unroll step of a lane group is one coalesced access. The cross-thread states are
// reduce.cuh's (rj_red_max, rj_red_sum, rj_red_lse's online (max, sum) merge,
// rj_red_welford's Chan merge) or layer norm's sums of x and x^2 (below), and so
// are the primitives that combine them; a "reducer" (group, block, or split
// across blocks) hands every thread of a row the row's merged state.
//
// Every row op has the same contract:
//   template <int P, class C, class Red>
//   void row(float (&x)[P][4], const C& c, Red& red, bool leader) const   (C an rj_chunk)
// x holds the (scaled, residual-added) row chunk; row() reduces through red and
// leaves the output values in x; the leader thread of a row writes the row's
// statistics (norms, when asked). Layer norm also takes an output (rj_out_stored)
// it stores each pack to as it makes it.
//
// Special values (softmax): a row holding NaN or +Inf, or only -Inf, gives NaN
// everywhere (what the f64 formula e^(x - max) / sum gives, and PyTorch); -Inf
// elements of any other row give 0 (log-softmax: -Inf).

// Which elements of a row chunk a thread holds.
// Positions within a row are 32-bit (a row is far below 2^32 elements; the
// launcher checks it), which saves a register pair per pack.
// W (whole packs): the launcher guarantees cols % 4 == 0 and every buffer of every
// row pack-aligned, so a pack lies wholly inside the row or wholly past it: one
// vector access or none, no element path. Without W (the general twin, `_g`),
// any alignment and length: the element path keeps a register footprint that
// cost the common case occupancy.
// E (a general twin's split chunks): a chunk may start before the row (first
// wraps below 0). A row whose buffers all lie `shift` elements past the pack
// grid, as the rows of an odd ld do, starts its packs `shift` elements early, so
// that all but its first and last packs are whole, aligned vector accesses.
// B (the prefetching block kernels): whole packs addressed as the thread's base
// plus a constant a pack, which the compiler folds into each access's immediate
// offset; it saved the registers those kernels stage their next row with.
// Elsewhere it changed ptxas's allocation and one kernel spilled, so the
// others keep an address a pack.
// X (exact, block layout): the row is exactly the chunk, so every pack is whole
// and inside it: no bounds test a pack (the launcher takes it for rows of
// exactly that length only).
// G (paired packs, NormSpec::paired_packs): a lane's packs go in
// adjacent pairs, pair q of lane l covering elements first + (q * kLanes + l) * 8
// .. + 7, so a pair inside the row is one 16-byte access (rj_row_ld, rj_row_st),
// not two of 8; a general twin's chunks then start on the row's 8-element grid
// (row_grid), and both packs of lane 0's first pair may start before the row.
// A chunk ends before end (at most cols). A kernel that balances a split
// row's chunks (NormSpec::balances) cuts the row in equal parts of at most
// L x P x 4 elements, so that a row's last chunk is not left mostly empty while
// its blocks wait on it; each chunk then ends at its own bound, elsewhere at
// cols. One bound, not a second test against the chunk's length: that test
// cost 10-25 % more instructions and spilled two split twins.
template <int L, bool W, bool E = false, bool B = false, bool X = false, int G = 1> struct rj_chunk {
  static_assert(G == 1 || G == 2, "packs alone or in pairs");
  static const bool kWhole = W;
  enum : int { kPair = G };
  rj_u32 first;  // the chunk's first element (0 unless split), less the shift
  rj_u32 cols;   // the row's length
  rj_u32 lane;   // this thread's lane in the row
  rj_u32 end;    // past the chunk's last element: at most cols
  __device__ __forceinline__ rj_u32 at(int p) const {
    return first + (((rj_u32)p / G * L + lane) * G + (rj_u32)p % G) * 4;
  }
  // at(p) in 64 bits, for a whole pack's vector access (with B: without E
  // at(p) never wraps, so it is at(0) plus a constant).
  __device__ __forceinline__ rj_u64 off(int p) const {
    return B && !E ? (rj_u64)at(0) + (rj_u64)(((rj_u32)p / G * L * G + (rj_u32)p % G) * 4) : (rj_u64)at(p);
  }
  // Below the row's start at(p) + k wraps past end.
  __device__ __forceinline__ bool ok(int p, int k) const { return W ? X || at(p) < end : at(p) + k < end; }
  // Pack p lies wholly inside the chunk. Only lane 0's first G packs can
  // start before the row (shift < 4G <= the span of a lane's packs), and wrap
  // past end.
  __device__ __forceinline__ bool whole(int p) const {
    return W ? X || at(p) < end : (!E || p >= G || at(p) < end) && at(p) + 4 <= end;
  }
  // Packs p and p + 1 (p even, paired) lie wholly inside the chunk.
  // A whole-pack kernel's pairs are whole (the launcher's grid of 8).
  __device__ __forceinline__ bool whole_pair(int p) const {
    return X || (W ? at(p) < end : (p >= G || at(p) < end) && at(p) + 8 <= end);
  }
};

// The chunk of span elements from first (a general twin's less its row's
// shift, which may wrap below 0: first + span then wraps back) inside a row of
// cols. Unbalanced (kBalanced false: span is the layout's chunk), it ends at
// the row's end or past its last pack alone: the bound is cols, no register.
template <class C, bool kBalanced> __device__ __forceinline__ C rj_chunk_of(rj_u32 first, rj_u32 span, rj_u32 cols, rj_u32 lane) {
  const rj_u32 end = first + span;
  return C{first, cols, lane, kBalanced && end < cols ? end : cols};
}

// The load kind of a row's single elements: the read-only path, but for a row
// this kernel wrote (a loop's residual sum), which takes coherent loads.
template <class L> struct rj_elem_load { typedef rj_load_nc type; };
template <> struct rj_elem_load<rj_load_plain> { typedef rj_load_plain type; };
// Two adjacent packs of a 16-bit type (paired packs) as one 16-byte access,
// the address 16-byte aligned.
template <class T, class L> __device__ __forceinline__ void rj_ld4x2(rj_u64 a, rj_u64 i, float (&v0)[4], float (&v1)[4]) {
  const rj_b128 b = L::b128(a + i * T::kBytes);
  const rj_u32 w0[2] = {b.x, b.y}, w1[2] = {b.z, b.w};
  T::unpack4(w0, v0);
  T::unpack4(w1, v1);
}
template <class T> __device__ __forceinline__ void rj_st4x2(rj_u64 a, rj_u64 i, const float (&v0)[4], const float (&v1)[4]) {
  rj_u32 w0[2], w1[2];
  T::pack4(v0, w0);
  T::pack4(v1, w1);
  rj_st_b128(a + i * T::kBytes, rj_b128{w0[0], w0[1], w1[0], w1[1]});
}
// One pack of rj_row_ld.
template <class T, class L, class C>
__device__ __forceinline__ void rj_pack_ld(rj_u64 a, const C& c, bool vec, float fill, int p, float (&x)[4]) {
  const rj_u32 e = c.at(p);
  if ((C::kWhole || vec) && c.whole(p)) {
    rj_ld4<T, L>(a, c.off(p), x);
  } else if constexpr (C::kWhole) {
#pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = fill;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = c.ok(p, k) ? rj_ld1<T, typename rj_elem_load<L>::type>(a, e + k) : fill;
  }
}
// Loads this thread's packs of the chunk from the row at a. A whole-pack chunk:
// one vector load per pack inside the row. Otherwise vec (every buffer of the row
// on the pack grid at the chunk's shift) sends whole packs through one vector
// load, and the row's partial first and last packs, and rows whose buffers lie at
// different offsets from the grid, go element by element (L: the whole packs'
// load kind). Missing elements are `fill`. Paired packs: a pair inside the row is
// one 16-byte load.
template <class T, int P, class L, class C>
__device__ __forceinline__ void rj_row_ld(rj_u64 a, const C& c, bool vec, float fill, float (&x)[P][4]) {
  if constexpr (C::kPair == 2) {
    static_assert(P % 2 == 0 && T::kWords == 2, "pairs of 16-bit packs");
#pragma unroll
    for (int p = 0; p < P; p += 2) {
      if (vec && c.whole_pair(p)) {
        rj_ld4x2<T, L>(a, c.off(p), x[p], x[p + 1]);
      } else if constexpr (C::kWhole) {
        // Whole pairs (the launcher's grid): this one lies past the row.
#pragma unroll
        for (int k = 0; k < 4; ++k) x[p][k] = x[p + 1][k] = fill;
      } else {
        rj_pack_ld<T, L>(a, c, vec, fill, p, x[p]);
        rj_pack_ld<T, L>(a, c, vec, fill, p + 1, x[p + 1]);
      }
    }
  } else {
#pragma unroll
    for (int p = 0; p < P; ++p) rj_pack_ld<T, L>(a, c, vec, fill, p, x[p]);
  }
}
template <class T, class C>
__device__ __forceinline__ void rj_pack_st(rj_u64 a, const C& c, bool vec, int p, const float (&y)[4]) {
  // Before the branch: taken inside it, the deferred softmax's general twins
  // spilled 12 bytes (ptxas 13.0).
  const rj_u32 e = c.at(p);
  if ((C::kWhole || vec) && c.whole(p)) {
    rj_st4<T>(a, c.off(p), y);
  } else if constexpr (!C::kWhole) {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (c.ok(p, k)) rj_st1<T>(a, e + k, y[k]);
  }
}
// Packs p and p + 1 of paired packs: one 16-byte store where both lie inside
// the row on the grid, else each as rj_pack_st.
template <class T, class C>
__device__ __forceinline__ void rj_pair_st(rj_u64 a, const C& c, bool vec, int p, const float (&y0)[4], const float (&y1)[4]) {
  if (vec && c.whole_pair(p)) {
    rj_st4x2<T>(a, c.off(p), y0, y1);
  } else if constexpr (!C::kWhole) {
    rj_pack_st<T>(a, c, vec, p, y0);
    rj_pack_st<T>(a, c, vec, p + 1, y1);
  }
}
template <class T, int P, class C>
__device__ __forceinline__ void rj_row_st(rj_u64 a, const C& c, bool vec, const float (&y)[P][4]) {
  if constexpr (C::kPair == 2) {
    static_assert(P % 2 == 0 && T::kWords == 2, "pairs of 16-bit packs");
#pragma unroll
    for (int p = 0; p < P; p += 2) rj_pair_st<T>(a, c, vec, p, y[p], y[p + 1]);
  } else {
#pragma unroll
    for (int p = 0; p < P; ++p) rj_pack_st<T>(a, c, vec, p, y[p]);
  }
}
// Where a row op's output goes: left in x for the caller to store (rj_out_kept),
// or stored by the row op a pack at a time as it makes them (rj_out_stored).
struct rj_out_kept {
  enum : bool { kStores = false };
};
template <class T, class C> struct rj_out_stored {
  enum : bool { kStores = true };
  rj_u64 a;
  const C& c;
  bool vec;
  __device__ __forceinline__ void operator()(int p, const float (&y)[4]) const { rj_pack_st<T>(a, c, vec, p, y); }
  // Packs p and p + 1 of paired packs: one 16-byte store inside the row.
  __device__ __forceinline__ void pair(int p, const float (&y0)[4], const float (&y1)[4]) const {
    rj_pair_st<T>(a, c, vec, p, y0, y1);
  }
};

// ---- a row held as raw 16-bit words (NormSpec::raw_rows) ----------------------
// A 16-bit row whose values are exact in T (x as loaded, h = x + residual rounded
// to T) is held as T's words, half the registers of widened packs, and widened
// where a row op reads it. Missing elements are 0.
// Pack p's elements inside the row one by one, as 16-bit words (0 past it).
template <class L, class C> __device__ __forceinline__ void rj_pack_ld_raw_elems(rj_u64 a, const C& c, int p, rj_u32 (&w)[2]) {
  const rj_u32 e = c.at(p);
  rj_u32 h[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = c.ok(p, k) ? (rj_u32)rj_elem_load<L>::type::b16(a + (rj_u64)(e + k) * 2u) : 0u;
  w[0] = h[0] | (h[1] << 16);
  w[1] = h[2] | (h[3] << 16);
}
template <class T, class L, class C>
__device__ __forceinline__ void rj_pack_ld_raw(rj_u64 a, const C& c, bool vec, int p, rj_u32 (&w)[T::kWords]) {
  if ((C::kWhole || vec) && c.whole(p)) {
    rj_ld_words<L>(a + (rj_u64)c.off(p) * T::kBytes, w);
  } else {
    rj_pack_ld_raw_elems<L>(a, c, p, w);
  }
}
template <class T, int P, class L, class C>
__device__ __forceinline__ void rj_row_ld_raw(rj_u64 a, const C& c, bool vec, rj_u32 (&w)[P][T::kWords]) {
  static_assert(T::kBytes == 2 && P % C::kPair == 0, "16-bit words, whole pairs");
#pragma unroll
  for (int p = 0; p < P; p += C::kPair) {
    if (C::kPair == 2 && vec && c.whole_pair(p)) {
      const rj_b128 b = L::b128(a + (rj_u64)c.off(p) * T::kBytes);
      w[p][0] = b.x;
      w[p][1] = b.y;
      w[p + C::kPair - 1][0] = b.z;
      w[p + C::kPair - 1][1] = b.w;
    } else if constexpr (C::kPair == 2 && C::kWhole) {
#pragma unroll
      for (int q = 0; q < C::kPair; ++q) w[p + q][0] = w[p + q][1] = 0u;
    } else {
#pragma unroll
      for (int q = 0; q < C::kPair; ++q) rj_pack_ld_raw<T, L>(a, c, vec, p + q, w[p + q]);
    }
  }
}
template <class T, class C>
__device__ __forceinline__ void rj_pack_st_raw(rj_u64 a, const C& c, bool vec, int p, const rj_u32 (&w)[T::kWords]) {
  const rj_u32 e = c.at(p);
  if ((C::kWhole || vec) && c.whole(p)) {
    rj_st_words(a + (rj_u64)c.off(p) * T::kBytes, w);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (c.ok(p, k)) rj_st_b16(a + (rj_u64)(e + k) * 2u, rj_half(w[k / 2], k % 2));
  }
}
template <class T, int P, class C>
__device__ __forceinline__ void rj_row_st_raw(rj_u64 a, const C& c, bool vec, const rj_u32 (&w)[P][T::kWords]) {
#pragma unroll
  for (int p = 0; p < P; p += C::kPair) {
    if (C::kPair == 2 && vec && c.whole_pair(p)) {
      rj_st_b128(a + (rj_u64)c.off(p) * T::kBytes, rj_b128{w[p][0], w[p][1], w[p + C::kPair - 1][0], w[p + C::kPair - 1][1]});
    } else if constexpr (C::kPair == 1 || !C::kWhole) {
      // (A whole-pack kernel's pair past the row stores nothing.)
#pragma unroll
      for (int q = 0; q < C::kPair; ++q) rj_pack_st_raw<T>(a, c, vec, p + q, w[p + q]);
    }
  }
}
// x = x + r, rounded by R to T, in place (words of T).
template <class T, class R> __device__ __forceinline__ void rj_add_raw(rj_u32 (&x)[T::kWords], const rj_u32 (&r)[T::kWords]) {
  float a[4], b[4];
  T::unpack4(x, a);
  T::unpack4(r, b);
#pragma unroll
  for (int k = 0; k < 4; ++k) a[k] = R::round(a[k] + b[k]);
  T::pack4(a, x);
}
// The words widened again: through a volatile move, so the compiler cannot keep
// an earlier pass's widened packs live in their place (the registers raw words
// save).
template <class T> __device__ __forceinline__ void rj_unpack4_again(const rj_u32 (&w)[T::kWords], float (&v)[4]) {
  rj_u32 u[T::kWords];
#pragma unroll
  for (int i = 0; i < T::kWords; ++i) asm volatile("mov.b32 %0, %1;" : "=r"(u[i]) : "r"(w[i]));
  T::unpack4(u, v);
}
// ---- a row staged in shared memory (the prefetching layouts, `_p`) ----------
// A thread's own packs only, pack p at slots + p * stride: no other thread reads
// them, so cp.async.wait_group alone makes them visible, and the thread may
// stage the next row into them as soon as it has read them back.
template <class T> __device__ __forceinline__ void rj_cp_async_pack(rj_u32 slot, rj_u64 g) {
  static_assert(T::kWords == 4 || T::kWords == 2, "a pack is 16 or 8 bytes");
  if constexpr (T::kWords == 4) {
    rj_cp_async16(slot, g);
  } else {
    rj_cp_async8(slot, g);
  }
}
template <class T> __device__ __forceinline__ void rj_st4_shared(rj_u32 a, const float (&v)[4]) {
  rj_u32 w[T::kWords];
  T::pack4(v, w);
  if constexpr (T::kWords == 4) {
    rj_st_shared_b128(a, rj_b128{w[0], w[1], w[2], w[3]});
  } else {
    rj_st_shared_b64(a, rj_b64{w[0], w[1]});
  }
}
// Any element of pack p lies in the row.
template <class C> __device__ __forceinline__ bool rj_pack_in_row(const C& c, int p) {
  return c.ok(p, 0) || c.ok(p, 1) || c.ok(p, 2) || c.ok(p, 3);
}
// A general twin's chunk (E) stages its row's partial first and last packs too.
// On the grid (vec), such a pack is copied whole where its elements outside the
// row lie inside the buffer: the row before's (before, r > 0) or after's (after,
// r + 1 < rows), or the gap of a longer ld; the reads mask them. Else, and off
// the grid, the pack's elements are loaded one by one (a synchronous load: only
// at the buffer's ends on the grid).
template <class T, int P, class C>
__device__ __forceinline__ void rj_row_stage(rj_u32 slots, rj_u32 stride, rj_u64 a, const C& c, bool vec = true,
                                             bool before = false, bool after = false) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const rj_u32 slot = slots + (rj_u32)p * stride;
    if ((C::kWhole || vec) && c.whole(p)) {
      rj_cp_async_pack<T>(slot, a + c.off(p) * T::kBytes);
    } else if constexpr (!C::kWhole) {
      if (!rj_pack_in_row(c, p)) continue;
      if (vec && (c.ok(p, 0) || before) && (c.ok(p, 3) || after)) {
        // at(p) is below 0 (wrapped) for a pack starting before the row.
        rj_cp_async_pack<T>(slot, a + (rj_u64)(rj_i64)(int)c.at(p) * T::kBytes);
      } else {
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = c.ok(p, k) ? rj_ld1<T, rj_load_nc>(a, c.at(p) + k) : 0.0f;
        rj_st4_shared<T>(slot, v);
      }
    }
  }
}
template <class T> __device__ __forceinline__ void rj_ld4_shared(rj_u32 a, float (&v)[4]) {
  rj_u32 w[T::kWords];
  if constexpr (T::kWords == 4) {
    const rj_b128 b = rj_ld_shared_b128(a);
    w[0] = b.x; w[1] = b.y; w[2] = b.z; w[3] = b.w;
  } else {
    const rj_b64 b = rj_ld_shared_b64(a);
    w[0] = b.x; w[1] = b.y;
  }
  T::unpack4(w, v);
}
// Pack p of the staged row, its elements outside the row 0 (a general twin's
// partial packs hold the row's neighbours).
template <class T, class C>
__device__ __forceinline__ void rj_pack_ld_staged(rj_u32 slot, const C& c, int p, float (&v)[4]) {
  if (c.whole(p)) {
    rj_ld4_shared<T>(slot, v);
  } else if constexpr (!C::kWhole) {
    if (rj_pack_in_row(c, p)) {
      rj_ld4_shared<T>(slot, v);
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = c.ok(p, k) ? v[k] : 0.0f;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = 0.0f;
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = 0.0f;
  }
}
template <class T, int P, class C>
__device__ __forceinline__ void rj_row_ld_staged(rj_u32 slots, rj_u32 stride, const C& c, float (&x)[P][4]) {
#pragma unroll
  for (int p = 0; p < P; ++p) rj_pack_ld_staged<T>(slots + (rj_u32)p * stride, c, p, x[p]);
}
// The fused residual add from staged packs: x = x + residual rounded by R, a
// pack at a time, so the residual takes 4 registers, not a row's.
template <class T, class R, int P, class C>
__device__ __forceinline__ void rj_row_add_staged(rj_u32 slots, rj_u32 stride, const C& c, float (&x)[P][4]) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if (c.whole(p) || (!C::kWhole && rj_pack_in_row(c, p))) {
      float h[4];
      rj_pack_ld_staged<T>(slots + (rj_u32)p * stride, c, p, h);
#pragma unroll
      for (int k = 0; k < 4; ++k) x[p][k] = R::round(x[p][k] + h[k]);
    }
  }
}
// Where a row's per-column vectors (weight, bias) lie against its chunk's pack
// grid. vec: every row stream is on that grid, so its whole packs take vector
// accesses; the vectors' own grid is then m elements before the pack (0: the
// same grid). A row of an odd ld starts off the grid, its chunks start early
// by its shift, and a weight on its own grid lies 1-3 elements off theirs: two
// vector loads and a pick, where the element path took four scalar loads a
// pack: up to 6 % faster for 16-bit layer and RMS norm at 4x1000003 (rows 1-3
// off the grid; H100, commit e9f942b).
struct rj_col_grid {
  bool vec;
  rj_u32 m;
};

// A 16-bit vector on its own grid m elements before the pack's (m != 0), both
// of its packs that cover pack p inside the row: e - m wraps past cols where
// pack 0 starts before the row.
template <class C> __device__ __forceinline__ bool rj_col_shifted(const C& c, int p, rj_u32 e, rj_col_grid g) {
  return g.vec && g.m != 0 && c.whole(p) && e - g.m + 8u <= c.cols && e >= g.m;
}
// The words of such a vector at pack element e: its two packs, shifted into place.
template <class T>
__device__ __forceinline__ void rj_col_ld_shifted(rj_u64 a, rj_u32 e, rj_col_grid g, rj_u32 (&w)[T::kWords]) {
  const rj_u64 at = a + (rj_u64)(e - g.m) * T::kBytes;
  rj_u32 lo[T::kWords], hi[T::kWords];
  rj_ld_words<rj_load_nc>(at, lo);
  rj_ld_words<rj_load_nc>(at + 4u * T::kBytes, hi);
  rj_funnel(g.m * T::kBytes, lo, hi, w);
}
// One pack of a per-column vector (weight, bias) at the pack's elements.
template <class T, class C>
__device__ __forceinline__ void rj_col_ld4(rj_u64 a, const C& c, int p, rj_col_grid g, float (&w)[4]) {
  const rj_u32 e = c.at(p);
  // 16-bit vectors only (the caller sets m; see run_row).
  if constexpr (!C::kWhole && T::kBytes < 4) {
    // Both packs of the vector's own grid inside the row: e - m wraps past
    // cols where pack 0 starts before the row.
    // rj_col_shifted's test, written out: through the helper NVVM emitted
    // other PTX (more setp) for the widened split and staging twins, which
    // were measured as they are (commit 712dcb5).
    if (g.vec && g.m != 0 && c.whole(p) && e - g.m + 8u <= c.cols && e >= g.m) {
      // Raw words, shifted into place before the widening: fewer registers
      // than two widened packs.
      rj_u32 v[T::kWords];
      rj_col_ld_shifted<T>(a, e, g, v);
      T::unpack4(v, w);
      return;
    }
  }
  if ((C::kWhole || (g.vec && g.m == 0)) && c.whole(p)) {
    rj_ld4<T, rj_load_nc>(a, c.off(p), w);
  } else if constexpr (C::kWhole) {
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = 0.0f;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = c.ok(p, k) ? rj_ld1<T, rj_load_nc>(a, e + k) : 0.0f;
  }
}

// Pack p of a 16-bit per-column vector as raw words (rj_col_ld4's paths
// unwidened; 0 past the row): a raw row's weight and bias (rj_raw_cols).
template <class T, class C>
__device__ __forceinline__ void rj_col_ld_raw(rj_u64 a, const C& c, int p, rj_col_grid g, rj_u32 (&w)[T::kWords]) {
  static_assert(T::kBytes == 2, "a 16-bit vector");
  if constexpr (C::kWhole) {
    // Whole packs on the grid (the launcher checked): a pack is in the row or
    // past its end.
    if (c.whole(p)) {
      rj_ld_words<rj_load_nc>(a + c.off(p) * T::kBytes, w);
    } else {
#pragma unroll
      for (int k = 0; k < T::kWords; ++k) w[k] = 0u;
    }
    return;
  }
  const rj_u32 e = c.at(p);
  if (rj_col_shifted(c, p, e, g)) {
    rj_col_ld_shifted<T>(a, e, g, w);
  } else if (g.vec && g.m == 0 && c.whole(p)) {
    rj_ld_words<rj_load_nc>(a + c.off(p) * T::kBytes, w);
  } else {
    rj_pack_ld_raw_elems<rj_load_nc>(a, c, p, w);
  }
}

// Calls f(x) for each element of a raw row's packs that lies inside the row,
// in order, widened (kAgain: through rj_unpack4_again). A thread all of whose
// packs lie inside (all but those at a row's or a chunk's ends) takes a copy
// of the pass without a bound test an element: in 16-bit layer norm's raw twin
// the tests and their predicated adds were 3 of the 5 instructions an element
// of each pass. The copy made bf16 RMS and layer norm faster at 4x1000003
// (H100, commit 4210da4); the widened softmax's exp sum ran 1 % slower with it
// (an f32 twin spilled 4 bytes), and was left as it was.
template <class T, bool kAgain, bool kInside, int P, class C, class F>
__device__ __forceinline__ void rj_raw_pass(const rj_u32 (&h)[P][T::kWords], const C& c, const F& f) {
#pragma unroll
  for (int p = 0; p < P; ++p) {
    float v[4];
    if constexpr (kAgain) {
      rj_unpack4_again<T>(h[p], v);
    } else {
      T::unpack4(h[p], v);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (kInside || c.ok(p, k)) f(v[k]);
  }
}
template <class T, bool kAgain, int P, class C, class F>
__device__ __forceinline__ void rj_raw_each(const rj_u32 (&h)[P][T::kWords], const C& c, const F& f) {
  // Packs go up the row from pack 0: the first inside and the last ending
  // inside hold all between.
  if (c.whole(0) && c.whole(P - 1)) {
    rj_raw_pass<T, kAgain, true>(h, c, f);
  } else {
    rj_raw_pass<T, kAgain, false>(h, c, f);
  }
}
// Groups of a raw row's columns in flight at once (rj_raw_cols' D).
enum : int { kRawColsAhead = 2 };
// A raw row's columns of V per-column vectors (the weight, then the bias) as
// raw words, a group of packs (a pair, with paired packs) at a time, in a ring
// of D groups: rj_raw_out asks for the first D at once after the row's
// reduction, and for each later group as it stores the group D before it, so
// that a group's round trip to L2 is not waited for in turn after the one
// before (stored with its loads volatile, in order: a round trip a group).
// D = 2 pairs beat loading each pair as it is stored, and RMS norm's weight
// loaded before the reduction, for bf16 layer norm (with and without residual)
// and RMS norm + residual at 4x1000003 and 64x1048573 (H100, commit 4210da4).
// Layer norm with 3 or 4 pairs ahead, or 2 before the reduction, ran slower
// and spilled in some of its four kernels (ptxas 13.0, 64 registers).
template <class T, int V, int D, class C> struct rj_raw_cols {
  enum : int { kGroup = C::kPair };
  rj_u32 ring[D][kGroup][V][T::kWords];
  rj_u64 at[V];
  rj_col_grid grid;
  __device__ __forceinline__ rj_raw_cols(rj_u64 w, rj_u64 b, rj_col_grid g) : grid(g) {
    at[0] = w;
    at[V - 1] = V > 1 ? b : w;
  }
  // Group i (of packs i * kGroup ..) into its slot of the ring.
  __device__ __forceinline__ void load(const C& c, int i) {
#pragma unroll
    for (int q = 0; q < kGroup; ++q)
#pragma unroll
      for (int v = 0; v < V; ++v) rj_col_ld_raw<T>(at[v], c, i * kGroup + q, grid, ring[i % D][q][v]);
  }
  template <int P> __device__ __forceinline__ void first(const C& c) {
#pragma unroll
    for (int i = 0; i < D && i * kGroup < P; ++i) load(c, i);
  }
};
// A raw row's outputs: each pack widened again, made into y by f(i, q, y)
// (pack i * G + q of G a group) and stored through out as it is made, pairs
// at once (paired packs); after(i) once group i is stored.
template <class T, int P, class C, class Out, class F, class A>
__device__ __forceinline__ void rj_raw_out_each(const rj_u32 (&h)[P][T::kWords], const C& c, const Out& out, const F& f, const A& after) {
  const int G = C::kPair;
#pragma unroll
  for (int i = 0; i * G < P; ++i) {
    float y[G][4];
#pragma unroll
    for (int q = 0; q < G; ++q) {
      rj_unpack4_again<T>(h[i * G + q], y[q]);
      f(i, q, y[q]);
    }
    if constexpr (G == 2) {
      out.pair(i * G, y[0], y[G - 1]);
    } else {
      out(i * G, y[0]);
    }
    after(i);
  }
}
// The same with a row op's columns: f(y, the pack's columns' words), the
// columns' next group asked for as each is stored.
template <class T, int P, int V, int D, class C, class Out, class F>
__device__ __forceinline__ void rj_raw_out(const rj_u32 (&h)[P][T::kWords], const C& c, rj_raw_cols<T, V, D, C>& cols, const Out& out, const F& f) {
  cols.template first<P>(c);
  rj_raw_out_each<T>(
      h, c, out, [&](int i, int q, float (&y)[4]) { f(y, cols.ring[i % D][q]); },
      [&](int i) {
        if ((i + D) * C::kPair < P) cols.load(c, i + D);
      });
}

// Where a row op's per-column vectors (weight, bias) come from: global memory
// at the chunk's columns, or (a prefetching kernel, every row of whose threads
// has the same columns) this thread's slots in shared memory, staged once (pack
// p at the slots' address plus p * stride), or registers, loaded once. A row op
// asks for vector kV (0 the weight, 1 the bias) at its address a.
struct rj_cols_global {
  template <class T, int kV, class C>
  __device__ __forceinline__ void ld(rj_u64 a, const C& c, int p, rj_col_grid g, float (&v)[4]) const {
    rj_col_ld4<T>(a, c, p, g, v);
  }
};
struct rj_cols_staged {
  rj_u32 stride;
  template <class T, int kV, class C>
  __device__ __forceinline__ void ld(rj_u64 a, const C&, int p, rj_col_grid, float (&v)[4]) const {
    rj_ld4_shared<T>((rj_u32)a + (rj_u32)p * stride, v);
  }
};
// The first H packs of V vectors held as raw words (half the registers of
// widened 16-bit packs), the rest read from global memory: whole-pack chunks.
template <class T, int V, int H> struct rj_cols_held {
  rj_u32 v[V][H > 0 ? H : 1][T::kWords];
  template <class C>
  __device__ __forceinline__ void load(rj_u64 w, rj_u64 b, const C& c) {
    static_assert(C::kWhole, "whole-pack chunks");
#pragma unroll
    for (int p = 0; p < H; ++p) {
#pragma unroll
      for (int q = 0; q < V; ++q) {
        if (c.whole(p)) {
          rj_ld_words<rj_load_nc>((q == 0 ? w : b) + (rj_u64)c.off(p) * T::kBytes, v[q][p]);
        } else {
#pragma unroll
          for (int k = 0; k < T::kWords; ++k) v[q][p][k] = 0u;
        }
      }
    }
  }
  // Marks 16-bit words as made at this point of a row (after its loads are
  // asked for): their widening cannot be hoisted out of the row loop, where it
  // waited for the columns before the first row's loads went out (ncu, H200,
  // 16x4096 bf16: two round trips in turn instead of one). f32 words are used
  // as loaded: nothing to hoist.
  __device__ __forceinline__ void pin() {
    if constexpr (T::kBytes == 4) return;
#pragma unroll
    for (int q = 0; q < V; ++q)
#pragma unroll
      for (int p = 0; p < (H > 0 ? H : 1); ++p)
#pragma unroll
        for (int k = 0; k < T::kWords; ++k) asm volatile("" : "+r"(v[q][p][k]));
  }
  // The vectors' type is T (the row op's too).
  template <class, int kV, class C>
  __device__ __forceinline__ void ld(rj_u64 a, const C& c, int p, rj_col_grid g, float (&o)[4]) const {
    if (p < H) {
      T::unpack4(v[kV][p], o);
    } else {
      rj_col_ld4<T>(a, c, p, g, o);
    }
  }
};

__device__ __forceinline__ float rj_pos_inf() { return rj_bits_as_f32(0x7f800000u); }
__device__ __forceinline__ float rj_nan() { return rj_bits_as_f32(0x7fffffffu); }
__device__ __forceinline__ float rj_sqrt_rn(float x) {
  float r;
  asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// 1 / sqrt(v), each step correctly rounded. rsqrt.approx (2 ulp, inside the
// CPU twin's tolerance) was faster on short rows but left kernels of the
// compile grid spilling under their launch bounds (tests/norm_compile_grid.rs).
__device__ __forceinline__ float rj_rsqrt_rn(float v) { return rj_div_rn(1.0f, rj_sqrt_rn(v)); }

// ---- reducers: the merged state of the row in every thread of the row ----------
// kCheap: a reduction costs a few shuffles (and a block barrier), so a row op
// may reduce twice; the split reducer exchanges one state across blocks.
// kApply: the row op goes on to its output with the merged state (all but the
// publishing pass of a deferred split row, which stops at its state).
// kKnown: the merged state does not depend on the thread's (a deferred split
// row's second pass), so the row op need not compute the thread's.
// A group of G lanes (a power of two <= 32); the whole warp calls it.
template <int G> struct rj_red_group {
  enum : bool { kCheap = true, kApply = true, kKnown = false };
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    return rj_group_reduce<G>(f, s);
  }
};
// A block of kThreads per row; kTwice: row ops may reduce twice (layer norm's
// f32 pair, NormSpec::sum_pair; else Chan's merge, by measurement).
// Made for each row; `first` in the block's first row, whose first reduction
// has no earlier reader of the block's shared words to wait for (a block of one
// row then passes one barrier less). Row ops take it by reference, so `first`
// holds for that one call.
template <int kThreads, bool kTwice> struct rj_red_row_block {
  enum : bool { kCheap = kTwice, kApply = true, kKnown = false };
  mutable bool first;
  __device__ __forceinline__ explicit rj_red_row_block(bool first_row) : first(first_row) {}
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    const bool follows = !first;
    first = false;
    return rj_block_reduce<kThreads>(f, s, follows);
  }
};

__device__ __forceinline__ rj_u32 rj_ld_acquire_u32(rj_u64 a) {
  rj_u32 v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
  return v;
}
__device__ __forceinline__ void rj_red_release_add(rj_u64 a, rj_u32 v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
// A counter that orders nothing (work tickets, the split rows' leave count).
__device__ __forceinline__ rj_u32 rj_atom_add_relaxed(rj_u64 a, rj_u32 v) {
  rj_u32 old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ bool rj_warp_any(bool p) {
  rj_u32 r;
  asm volatile("{ .reg .pred q; setp.ne.u32 q, %1, 0; vote.sync.any.pred q, q, 0xffffffff; selp.u32 %0, 1, 0, q; }"
               : "=r"(r)
               : "r"((rj_u32)p));
  return r != 0u;
}
__device__ __forceinline__ void rj_nanosleep(rj_u32 ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

// The first half of a block reduction, for the split reducers, which go on in
// warp 0 alone: each warp's state, in shared memory, for lane l of warp 0 to
// take state l % kWarps (rj_group_total<kWarps> then merges them). Its first
// barrier keeps this call's writers from the previous call's reader (warp 0).
template <int kThreads, class F>
__device__ __forceinline__ const typename F::S* rj_warp_states(const F& f, typename F::S s) {
  __shared__ typename F::S per_warp[kThreads / 32];
  s = rj_group_total<32>(f, s);
  __syncthreads();
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = s;
  __syncthreads();
  return per_warp;
}

// The one-pass split rows that keep counters a row (NormSpec::row_counters):
// each block reduces its chunk, its first warp publishes the block's state in
// the row's slot `split` and arrives on the row's counter
// (release), then waits until all `splits` blocks of the row have arrived
// (every lane acquires: no fence), merges the row's states in one fixed order
// (lane l: states l, l + 32, ..., then the warp's tree, so every block gets the
// same bits) and hands the result to the block through shared memory. Two block
// barriers in all, and no fence in every thread: the sync of a row is on the
// critical path of every split kernel (ncu, H100, 4x1000003 bf16 with six
// barriers and a fence in every thread: 40 % of the stall samples at block
// barriers, 5 % at fences; commit 3ccd8d4). The last block to leave resets the row's two
// counters for the next launch (nothing reads them in between: relaxed).
// The wait needs every block of a row resident at once: the launcher hands items
// out in order through a ticket (a block takes an item only when it runs) and
// checks splits <= resident blocks.
template <int kThreads> struct rj_red_split_counted {
  enum : bool { kCheap = false, kApply = true, kKnown = false };
  rj_u64 arrive, leave, slots;
  rj_u32 split, splits, slot_bytes;
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    typedef typename F::S S;
    __shared__ S row_total;
    const rj_u32 lane = threadIdx.x % 32;
    const int kWarps = kThreads / 32;
    // Readers of a previous item's row_total are past it (the first barrier).
    const S* per_warp = rj_warp_states<kThreads>(f, s);
    if (threadIdx.x < 32) {
      s = rj_group_total<kWarps>(f, per_warp[lane % kWarps]);
      if (lane == 0) {
        rj_st_state(slots + (rj_u64)split * slot_bytes, s);
        rj_red_release_add(arrive, 1u);
      }
      while (rj_warp_any(rj_ld_acquire_u32(arrive) < splits)) rj_nanosleep(20);
      S total = f.identity();
      for (rj_u32 k = lane; k < splits; k += 32) total = f.merge(total, rj_ld_state<S>(slots + (rj_u64)k * slot_bytes));
      total = rj_group_total<32>(f, total);
      if (lane == 0) {
        row_total = total;
        if (rj_atom_add_relaxed(leave, 1u) == splits - 1) {
          // Every block of the row has passed the wait and read the slots.
          rj_st_b32(arrive, 0u);
          rj_st_b32(leave, 0u);
        }
      }
    }
    __syncthreads();
    return row_total;
  }
};

// ---- split rows in a thread-block cluster (`_c<N>`, sm_90+) --------------------
// The kCluster blocks of a row are one cluster. Lane k of each block's warp 0
// pushes the block's state into block k's shared memory (st.async, which
// completes bytes on block k's mbarrier), and each block's warp 0 waits on its
// own mbarrier for the kCluster states, then merges them in one fixed tree, so
// every block gets the same bits. No workspace, atomics or polling of global
// memory, and no block waits on one that is not running: the hardware
// schedules a cluster's blocks together. Not a cluster barrier: its release
// (every thread's) waits for each thread's stores of the row before to drain,
// and clusters of 2-7 blocks so ran slower than the global exchange (H200,
// 4096x50257 bf16, 8192x32768 f32; commit 522f3b3).
// Row i takes slot and mbarrier i % 2, in phase i / 2 % 2. A block pushes row
// i + 2 into a slot only after it has row i + 1's states, which every block
// pushed after it read row i's slot: two slots suffice.
// A state is up to four words (layer norm's f64 sums).
template <int kCluster> struct rj_cluster_slots {
  rj_u32 state[2][kCluster][4];
  rj_u64 full[2];
};
template <int kCluster> __device__ __forceinline__ rj_cluster_slots<kCluster>& rj_cluster_exchange() {
  __shared__ __align__(8) rj_cluster_slots<kCluster> x;
  return x;
}
template <int kThreads, int kCluster> struct rj_red_cluster {
  static_assert(kCluster >= 2 && kCluster <= 32, "a cluster row is 2 to 32 blocks");
  enum : bool { kCheap = false, kApply = true, kKnown = false };
  rj_u32 row;  // the cluster's rows before this one
  // Every thread of every block, before the first row: the mbarriers set up
  // and visible to the cluster before any block pushes into them.
  static __device__ __forceinline__ void init() {
    auto& x = rj_cluster_exchange<kCluster>();
    if (threadIdx.x == 0) {
#pragma unroll
      for (int b = 0; b < 2; ++b) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(rj_smem_addr(&x.full[b])) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    rj_cluster_sync<>();
  }
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    typedef typename F::S S;
    static_assert(sizeof(S) % 4 == 0 && sizeof(S) <= 16, "a state is 1 to 4 words");
    // kCluster rounded up to a power of two: the merge tree's lanes.
    const int kTree = kCluster <= 2 ? 2 : kCluster <= 4 ? 4 : kCluster <= 8 ? 8 : kCluster <= 16 ? 16 : 32;
    auto& x = rj_cluster_exchange<kCluster>();
    __shared__ S row_total;
    const rj_u32 lane = threadIdx.x % 32, slot = row % 2, phase = row / 2 % 2;
    // Readers of a previous row's row_total are past it (the first barrier).
    const S* per_warp = rj_warp_states<kThreads>(f, s);
    if (threadIdx.x < 32) {
      s = rj_group_total<kThreads / 32>(f, per_warp[lane % (kThreads / 32)]);
      const rj_u32 full = rj_smem_addr(&x.full[slot]);
      if (lane == 0) {
        asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(full), "r"((rj_u32)(kCluster * sizeof(S))) : "memory");
      }
      if (lane < kCluster) {
        const rj_u32 to = rj_map_rank<>(rj_smem_addr(&x.state[slot][rj_cluster_rank<>()]), lane), bar = rj_map_rank<>(full, lane);
        const rj_u32* w = reinterpret_cast<const rj_u32*>(&s);
#pragma unroll
        for (int k = 0; k < (int)(sizeof(S) / 4); ++k)
          asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(to + 4 * k), "r"(w[k]), "r"(bar) : "memory");
      }
      rj_u32 done = 0;
      while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(full), "r"(phase) : "memory");
      }
      S t = f.identity();
      if (lane < kCluster) {
        rj_u32* w = reinterpret_cast<rj_u32*>(&t);
#pragma unroll
        for (int k = 0; k < (int)(sizeof(S) / 4); ++k) w[k] = x.state[slot][lane][k];
      }
      t = rj_group_reduce<kTree>(f, t);
      if (lane == 0) row_total = t;
    }
    __syncthreads();
    return row_total;
  }
};

// ---- deferred split rows (the split layout's cohorts, `_p`) --------------------
// A cohort's block goes over each of its rows twice, one row apart: it publishes
// its state of row r, then finishes row r - cohorts, whose states every block of
// the cohort published an iteration earlier, so that the wait on the other
// blocks of a row, and its round trips to L2, are off the critical path (bf16
// softmax at 8192x32768: the split kernel with one block a row ran 20 points
// of copy below the block kernel with the same chunk; H100, commit 13b045a).
// A published state travels a float a 64-bit word, its high half the launch's
// flag: a 64-bit store is single-copy atomic, so a reader that sees the flag
// sees the float, and no fence, counter or reset is needed. The flag is the
// launch's epoch + 1 (the workspace keeps the epoch; the last block to leave
// advances it), so a slot of an earlier launch never matches.
// counters[0] is the launch's ticket, counters[1] the epoch, written by the
// previous launch's last block before this launch began (the flag: epoch + 1).
__device__ __forceinline__ rj_u32 rj_launch_epoch(rj_u64 counters) { return rj_load_volatile::b32(counters + 4); }
// By the last block to leave: the ticket starts again at 0, and the next
// launch's flag is not this one's (nor 0, what a fresh workspace holds).
__device__ __forceinline__ void rj_launch_done(rj_u64 counters, rj_u32 flag) {
  rj_st_b32(counters, 0u);
  rj_st_b32(counters + 4, flag == 0xfffffffeu ? 0u : flag);
}
__device__ __forceinline__ void rj_st_relaxed_b64(rj_u64 a, rj_u64 v) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(a), "l"(v) : "memory");
}
__device__ __forceinline__ rj_u64 rj_ld_relaxed_b64(rj_u64 a) {
  rj_u64 v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(a) : "memory");
  return v;
}
// Two flagged words in one 16-byte access. PTX models a vector access as one
// access an element, so each 64-bit word stays single-copy atomic and its flag
// still vouches for its float. A state of two or more words so takes half the
// memory instructions: 1-2 % faster for softmax and layer norm at 4x1000003,
// 8 % for f32 layer norm + residual's four-word f64 sums at 64x1048576 (H100,
// commit df8c309). A slot is whole 16 bytes (NormSpec::partial_bytes) from a
// 16-byte-aligned base, so every pair is aligned.
__device__ __forceinline__ void rj_st_relaxed_b64x2(rj_u64 a, rj_u64 v0, rj_u64 v1) {
  asm volatile("st.relaxed.gpu.global.v2.b64 [%0], { %1, %2};" ::"l"(a), "l"(v0), "l"(v1) : "memory");
}
__device__ __forceinline__ void rj_ld_relaxed_b64x2(rj_u64 a, rj_u64& v0, rj_u64& v1) {
  asm volatile("ld.relaxed.gpu.global.v2.b64 { %0, %1}, [%2];" : "=l"(v0), "=l"(v1) : "l"(a) : "memory");
}
template <class S> __device__ __forceinline__ void rj_st_state_flagged(rj_u64 a, const S& s, rj_u32 flag) {
  static_assert(sizeof(S) % 4 == 0, "a state is whole words");
  const rj_u32* w = reinterpret_cast<const rj_u32*>(&s);
  const int n = (int)(sizeof(S) / 4);
  const rj_u64 f = (rj_u64)flag << 32;
#pragma unroll
  for (int k = 0; k + 1 < n; k += 2) rj_st_relaxed_b64x2(a + 8 * k, w[k] | f, w[k + 1] | f);
  if (n % 2) rj_st_relaxed_b64(a + 8 * (n - 1), w[n - 1] | f);
}
// A flagged state's words as loaded.
template <class S> struct rj_flagged {
  rj_u64 w[sizeof(S) / 4];
};
template <class S> __device__ __forceinline__ rj_flagged<S> rj_ld_flagged(rj_u64 a) {
  rj_flagged<S> r;
  const int n = (int)(sizeof(S) / 4);
#pragma unroll
  for (int k = 0; k + 1 < n; k += 2) rj_ld_relaxed_b64x2(a + 8 * k, r.w[k], r.w[k + 1]);
  if (n % 2) r.w[n - 1] = rj_ld_relaxed_b64(a + 8 * (n - 1));
  return r;
}
// False while any word of the state is not this launch's.
template <class S> __device__ __forceinline__ bool rj_state_flagged(const rj_flagged<S>& r, rj_u32 flag, S& s) {
  rj_u32* w = reinterpret_cast<rj_u32*>(&s);
  bool ok = true;
#pragma unroll
  for (int k = 0; k < (int)(sizeof(S) / 4); ++k) {
    w[k] = (rj_u32)r.w[k];
    ok = ok && (rj_u32)(r.w[k] >> 32) == flag;
  }
  return ok;
}
template <class S> __device__ __forceinline__ bool rj_ld_state_flagged(rj_u64 a, rj_u32 flag, S& s) {
  return rj_state_flagged(rj_ld_flagged<S>(a), flag, s);
}
// Loads the state at a into s again every 32 ns until it is this launch's
// (ok: the first load's was).
template <class S> __device__ __forceinline__ void rj_until_flagged(rj_u64 a, rj_u32 flag, bool ok, S& s) {
  while (!ok) {
    rj_nanosleep(32);
    ok = rj_ld_state_flagged(a, flag, s);
  }
}
// Whether A and B are one type (NVRTC's --minimal has no <type_traits>).
template <class A, class B> struct rj_same {
  static const bool value = false;
};
template <class A> struct rj_same<A, A> {
  static const bool value = true;
};
// A loop row's first pass (kApply false: the row op stops at its state):
// each chunk's state of the thread joins the thread's running state, in chunk
// order; the block reduces it once the row is read. A row op reduces its
// split state only (F::S is S) where the loop layout runs it; its other
// reductions (the safe softmax's branch, which the spec keeps out of this
// layout) compile to nothing that runs.
template <class Split> struct rj_red_running {
  enum : bool { kCheap = false, kApply = false, kKnown = false };
  typedef typename Split::S S;
  mutable S total = Split().identity();
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    if constexpr (rj_same<typename F::S, S>::value) total = f.merge(total, s);
    return s;
  }
};
// A loop row's second pass: the row's state, known before its chunks load again.
template <class S> struct rj_red_known {
  enum : bool { kCheap = false, kApply = true, kKnown = true };
  S total;
  template <class F> __device__ __forceinline__ typename F::S operator()(const F&, typename F::S s) const {
    if constexpr (rj_same<typename F::S, S>::value) {
      return total;
    } else {
      return s;
    }
  }
};

// The first pass: the block's state, published in its slot of the row.
template <int kThreads> struct rj_red_publish {
  enum : bool { kCheap = false, kApply = false, kKnown = false };
  rj_u64 slot;
  rj_u32 flag;
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    const int kWarps = kThreads / 32;
    const rj_u32 lane = threadIdx.x % 32;
    const typename F::S* per_warp = rj_warp_states<kThreads>(f, s);
    if (threadIdx.x < 32) {
      s = rj_group_total<kWarps>(f, per_warp[lane % kWarps]);
      if (lane == 0) rj_st_state_flagged(slot, s, flag);
    }
    return s;
  }
};
// The row's merged state, where the second pass leaves it for the block.
template <class S> __device__ __forceinline__ S& rj_fetched_total() {
  __shared__ S total;
  return total;
}
// The row's states as each warp of the second pass totalled them (the wide form).
template <class S, int kWarps> __device__ __forceinline__ S* rj_fetched_warps() {
  __shared__ S per_warp[kWarps];
  return per_warp;
}
// The second pass: the row's states, merged in one fixed order (lane l: slots
// l, l + 32, ..., then the warp's tree, so every block gets the same bits).
// wait() merges them before the block loads the row back, so that no thread
// holds the row while warp 0 waits; the row op's reduction then only reads
// the result. Every block of the cohort is resident (the launcher checks it),
// so each slot fills. A lane's slots are read kAhead at a time, all loads in
// flight before the first is checked: one round trip to L2 for up to 32 x
// kAhead blocks (4 beat 1 by 6 points of copy for f32 softmax at 64x1048576,
// 64 blocks a row; where the registers to hold them spill, 1). The first kEarly
// of them are asked for before the block publishes its next row, so that they
// arrive meanwhile (10 points there for 16-bit layer norm), where their
// registers do not spill (H100, commit 13b045a).
template <int kThreads, int kEarly, int kAhead> struct rj_red_fetch {
  static_assert(1 <= kEarly && kEarly <= kAhead, "early slots are the first of a batch");
  enum : bool { kCheap = false, kApply = true, kKnown = true };
  rj_u64 slots;
  rj_u32 splits, slot_bytes, flag;
  // Warp 0's first kEarly slots a lane (ask: false leaves them).
  template <class F> struct Early {
    rj_flagged<typename F::S> w[kEarly];
  };
  template <class F> __device__ __forceinline__ Early<F> ask(const F&, bool ask) const {
    Early<F> e;
    if (ask && threadIdx.x < 32) {
#pragma unroll
      for (int j = 0; j < kEarly; ++j) {
        const rj_u32 k = threadIdx.x + 32 * j;
        if (k < splits) e.w[j] = rj_ld_flagged<typename F::S>(slots + (rj_u64)k * slot_bytes);
      }
    }
    return e;
  }
  template <class F> __device__ __forceinline__ void wait(const F& f, const Early<F>& early) const {
    typedef typename F::S S;
    // Written after this row's publishing pass, whose barriers every reader of
    // the previous row's total has passed.
    if (threadIdx.x < 32) {
      S total = f.identity();
      for (rj_u32 k0 = threadIdx.x; k0 < splits; k0 += 32 * kAhead) {
        S v[kAhead];
        bool ok[kAhead];
#pragma unroll
        for (int j = 0; j < kAhead; ++j) {
          const rj_u32 k = k0 + 32 * j;
          ok[j] = k >= splits || (j < kEarly && k0 == threadIdx.x
                                      ? rj_state_flagged(early.w[j < kEarly ? j : 0], flag, v[j])
                                      : rj_ld_state_flagged(slots + (rj_u64)k * slot_bytes, flag, v[j]));
        }
#pragma unroll
        for (int j = 0; j < kAhead; ++j) {
          const rj_u32 k = k0 + 32 * j;
          if (k < splits) {
            rj_until_flagged(slots + (rj_u64)k * slot_bytes, flag, ok[j], v[j]);
            total = f.merge(total, v[j]);
          }
        }
      }
      total = rj_group_total<32>(f, total);
      if (threadIdx.x == 0) rj_fetched_total<S>() = total;
    }
    __syncthreads();
  }
  template <class F> __device__ __forceinline__ typename F::S operator()(const F&, typename F::S) const {
    return rj_fetched_total<typename F::S>();
  }
};

// The second pass with the row's states spread over the warps, a slot a lane
// (lane l of warp w: slots w * 32 + l, then kThreads on), each asked for before
// the block publishes its next row: each warp holding slots totals them
// (rj_group_total), and every thread then merges the warps' totals in warp
// order, so every block gets the same bits. Against warp 0's batches it holds
// one slot's registers a thread, not kAhead, and no lane merges a batch alone:
// faster for f32 RMS norm and 16-bit layer norm, slower for f32 layer norm
// and within a point elsewhere (64x1048576, H100, commit b64f3e7); 16-bit RMS
// norm s512x16_p spilled with it.
template <int kThreads> struct rj_red_fetch_wide {
  enum : bool { kCheap = false, kApply = true, kKnown = true };
  static const int kWarps = kThreads / 32;
  rj_u64 slots;
  rj_u32 splits, slot_bytes, flag;
  template <class F> struct Early {
    rj_flagged<typename F::S> w;
  };
  template <class F> __device__ __forceinline__ Early<F> ask(const F&, bool ask) const {
    Early<F> e;
    if (ask && threadIdx.x < splits) e.w = rj_ld_flagged<typename F::S>(slots + (rj_u64)threadIdx.x * slot_bytes);
    return e;
  }
  // Written after this row's publishing pass, whose barriers every reader of
  // the previous row's totals has passed.
  template <class F> __device__ __forceinline__ void wait(const F& f, const Early<F>& early) const {
    merge<true>(f, early);
  }
  // The same with no slot asked for before: each thread's first load is made
  // here (a one-pass split row's, which asks right after it publishes).
  template <class F> __device__ __forceinline__ void wait_unasked(const F& f) const { merge<false>(f, Early<F>()); }
  template <bool kAsked, class F> __device__ __forceinline__ void merge(const F& f, const Early<F>& early) const {
    typedef typename F::S S;
    S* per_warp = rj_fetched_warps<S, kWarps>();
    const rj_u32 warp = threadIdx.x / 32;
    if (warp * 32 < splits) {
      S total = f.identity();
      for (rj_u32 k = threadIdx.x; k < splits; k += kThreads) {
        S v;
        const bool ok = kAsked && k == threadIdx.x ? rj_state_flagged(early.w, flag, v)
                                                   : rj_ld_state_flagged(slots + (rj_u64)k * slot_bytes, flag, v);
        rj_until_flagged(slots + (rj_u64)k * slot_bytes, flag, ok, v);
        total = k == threadIdx.x ? v : f.merge(total, v);
      }
      total = rj_group_total<32>(f, total);
      if (threadIdx.x % 32 == 0) per_warp[warp] = total;
    }
    __syncthreads();
  }
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S) const {
    const typename F::S* per_warp = rj_fetched_warps<typename F::S, kWarps>();
    typename F::S total = per_warp[0];
    const rj_u32 warps = (splits + 31) / 32;
    for (rj_u32 w = 1; w < warps && w < (rj_u32)kWarps; ++w) total = f.merge(total, per_warp[w]);
    return total;
  }
};

// A split row in one pass (the plain split layout): the block publishes its
// state in its slot of the row, flagged with the launch's flag
// (rj_red_publish), and its warps read the row's slots until every one is this
// launch's, a slot a thread (rj_red_fetch_wide), then merge them in one fixed
// order, so every block gets the same bits. The slots carry their flag, so the
// reads that find them filled return the states too: no counter to arrive on,
// reset or leave. Counters a row (arrive, wait, load the states, then a
// returning add on a leave counter before the block barrier) cost, in a probe
// of the exchange alone at 4x1000008 bf16, 0.6-0.7 us for the states' loads
// and 0.2-0.3 us for the leave count of a 10.8 us launch (H100, commit
// 895b7b3). kAsk: each thread's first slot is asked for as the block publishes
// (NormSpec::split_asks_early). The whole-pack kernels keep the counters
// (rj_red_split_counted, NormSpec::row_counters), for their registers. The wait needs every block of
// a row resident at once: the launcher hands items out in order through a
// ticket (a block takes an item only when it runs), or launches a grid of an
// item a block cooperatively, and checks splits <= resident blocks.
template <int kThreads, bool kAsk> struct rj_red_split {
  enum : bool { kCheap = false, kApply = true, kKnown = false };
  rj_u64 slot;                       // this block's slot of the row
  rj_red_fetch_wide<kThreads> fetch;  // the row's slots
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    rj_red_publish<kThreads>{slot, fetch.flag}(f, s);
    if (kAsk) {
      fetch.wait(f, fetch.ask(f, true));
    } else {
      fetch.wait_unasked(f);
    }
    return fetch(f, s);
  }
};

// ---- row passes over the registers ---------------------------------------------
// Sum over this thread's elements inside the row of (x - centre)^2.
template <int P, class C>
__device__ __forceinline__ float rj_row_sq_about(const float (&x)[P][4], const C& c, float centre) {
  float q = 0.0f;
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (c.ok(p, k)) {
        const float d = x[p][k] - centre;
        q += d * d;
      }
  return q;
}
// Sum over this thread's elements inside the row of e^(x - centre); kKeep
// leaves each e^(x - centre) in x, and 0 past the row.
template <bool kKeep, int P, class C>
__device__ __forceinline__ float rj_row_exp_sum(float (&x)[P][4], const C& c, float centre) {
  float s = 0.0f;
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (c.ok(p, k)) {
        const float e = rj_exp(x[p][k] - centre);
        s += e;
        if (kKeep) x[p][k] = e;
      } else if (kKeep) {
        x[p][k] = 0.0f;
      }
  return s;
}

// ---- softmax and log-softmax ---------------------------------------------------
// kOnline: one reduction of (max, sum e^(x - max)) states, each thread's state
// from its registers (its max, then its sum against it); else the safe two
// reductions, the max and then the sum of e^(x - max). The scale was applied at
// load (x * scale rounded once, as the twin does).
// Softmax takes one exp an element: the registers keep e^(x - m) from the sum
// (m the thread's max, online, or the row's, safe) and the output scales them,
// by e^(m - max) / d online. Two exps an element made 16-bit rows in 512-thread
// blocks issue-bound (bf16 8192x32768, H100; commit 3bfb475).
// Log-softmax needs no exp in its output.
template <bool kOnline, bool kLog> struct rj_norm_softmax {
  // The state the blocks of a split row exchange.
  typedef rj_red_lse<rj_acc_f32> Split;
  float param;  // the scale, applied by the caller
  template <int P, class C, class Red>
  __device__ __forceinline__ void row(float (&x)[P][4], const C& c, const Red& red, bool) const {
    static_assert(kOnline || Red::kApply, "a deferred split row is online: one state to publish");
    float m = rj_neg_inf();
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c.ok(p, k)) m = rj_max_nan(m, x[p][k]);
    float mx, d, lift = 1.0f;
    // Softmax: after the sum x holds e^(x - m) for the elements inside the row,
    // 0 elsewhere (online: also where the thread's max is not finite; the row's
    // result is then NaN, or 0 for a thread of -Inf only).
    if (kOnline && Red::kKnown) {
      // The row's state comes whole: e^(x - max) from x itself, one exp an
      // element, and no thread state (the thread's max above feeds nothing
      // then, nor do the norms' thread sums: the compiler drops them).
      const rj_md s = red(rj_red_lse<rj_acc_f32>(), rj_md{rj_neg_inf(), 0.0f});
      mx = s.m;
      d = (mx == rj_pos_inf() || mx != mx) ? rj_nan() : s.d;
      if (!kLog) {
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
          for (int k = 0; k < 4; ++k) x[p][k] = rj_exp(x[p][k] - mx);
      }
    } else if (kOnline) {
      // This thread's state: a finite max keeps its sum; -Inf (nothing, or only
      // -Inf) is the empty state; +Inf or NaN keeps d = 1 as rj_red_lse does.
      float dl = m == rj_neg_inf() ? 0.0f : 1.0f;
      const bool finite = m - m == 0.0f;
      if (finite) {
        dl = rj_row_exp_sum<!kLog>(x, c, m);
      } else if (!kLog) {
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
          for (int k = 0; k < 4; ++k) x[p][k] = 0.0f;
      }
      const rj_md s = red(rj_red_lse<rj_acc_f32>(), rj_md{m, dl});
      if (!Red::kApply) return;
      mx = s.m;
      if (finite) lift = rj_exp(m - mx);
      // NaN or +Inf in the row: NaN everywhere.
      d = (mx == rj_pos_inf() || mx != mx) ? rj_nan() : s.d;
    } else {
      mx = red(rj_red_max<rj_acc_f32>(), m);
      d = red(rj_red_sum<rj_acc_f32>(), rj_row_exp_sum<!kLog>(x, c, mx));
    }
    if (kLog) {
      // (x - max) - ln d; an all -Inf row: -Inf - -Inf is NaN.
      const float lnd = rj_log(d);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int k = 0; k < 4; ++k) x[p][k] = (x[p][k] - mx) - lnd;
    } else {
      // lift = e^(m - max) (online, m finite), else 1; a thread whose max
      // is not finite holds zeros, and a row whose max is not finite has d NaN.
      const float f = rj_div_rn(lift, d);
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int k = 0; k < 4; ++k) x[p][k] = rj_mul_rn(x[p][k], f);
    }
  }
  // The one-pass split rows' online form over a row of raw words of T
  // (rj_row_ld_raw), its outputs stored through out as they are made
  // (rj_raw_out_each): x = scale * v rounded once, as the widened row's, at
  // each widening; the thread's max, then its sum of e^(x - max), exchanged,
  // and each output e^(x - row max) / sum made from the row's state (a second
  // exponential an element, where the widened row keeps e^(x - thread max)
  // in the registers raw words save). Log-softmax: (x - max) - ln sum.
  // The safe form (a block's row): the row's max, then its sum of
  // e^(x - max), each a reduction, and each output made as the widened row's
  // is (the same exponentials, sum order and products).
  template <class T, int P, class C, class Red, class Out>
  __device__ __forceinline__ void row_raw(const rj_u32 (&h)[P][T::kWords], const C& c, const Red& red, bool, const Out& out) const {
    static_assert(Red::kApply && !Red::kKnown, "a row whose reduction applies");
    float m = rj_neg_inf();
    rj_raw_each<T, false>(h, c, [&](float v) { m = rj_max_nan(m, rj_mul_rn(v, param)); });
    float mx, d;
    if constexpr (!kOnline) {
      mx = red(rj_red_max<rj_acc_f32>(), m);
      float dl = 0.0f;
      rj_raw_each<T, true>(h, c, [&](float v) { dl += rj_exp(rj_mul_rn(v, param) - mx); });
      d = red(rj_red_sum<rj_acc_f32>(), dl);
    } else {
      // A finite max keeps its sum; -Inf (nothing, or only -Inf) is the empty
      // state; +Inf or NaN keeps d = 1 as rj_red_lse does.
      float dl = m == rj_neg_inf() ? 0.0f : 1.0f;
      if (m - m == 0.0f) {
        dl = 0.0f;
        rj_raw_each<T, true>(h, c, [&](float v) { dl += rj_exp(rj_mul_rn(v, param) - m); });
      }
      const rj_md s = red(rj_red_lse<rj_acc_f32>(), rj_md{m, dl});
      mx = s.m;
      // NaN or +Inf in the row: NaN everywhere; only -Inf: e^(-Inf - -Inf) is NaN.
      d = (mx == rj_pos_inf() || mx != mx) ? rj_nan() : s.d;
    }
    // Log-softmax: ln sum; softmax: 1 / sum.
    const float g = kLog ? rj_log(d) : rj_div_rn(1.0f, d);
    rj_raw_out_each<T>(
        h, c, out,
        [&](int, int, float (&y)[4]) {
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const float x = rj_mul_rn(y[k], param) - mx;
            y[k] = kLog ? x - g : rj_mul_rn(rj_exp(x), g);
          }
        },
        [](int) {});
  }
};

// ---- layer norm ----------------------------------------------------------------
// The row's sum and sum of squares, merged by two adds: the one exchange of a
// layer norm whose reduction is cheap (rj_group_reduce and rj_block_reduce use
// S and merge).
struct rj_sum_sq {
  float s, q;
};
struct rj_red_sum_sq {
  typedef rj_sum_sq S;
  __device__ __forceinline__ S merge(S a, S b) const { return rj_sum_sq{a.s + b.s, a.q + b.q}; }
};
__device__ __forceinline__ rj_sum_sq rj_shfl_state(const rj_sum_sq& s, int m) {
  return rj_sum_sq{rj_shfl_xor(s.s, m), rj_shfl_xor(s.q, m)};
}
// A if B, else Z.
template <bool B, class A, class Z> struct rj_type_if {
  typedef A type;
};
template <class A, class Z> struct rj_type_if<false, A, Z> {
  typedef Z type;
};
// The same in f64, what the blocks of a deferred 16-bit split row exchange (S,
// identity, merge: the split reducers' part of the functor contract).
struct rj_sum_sq64 {
  double s, q;
};
struct rj_red_sum_sq64 {
  typedef rj_sum_sq64 S;
  __device__ __forceinline__ S identity() const { return rj_sum_sq64{0.0, 0.0}; }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_sum_sq64{a.s + b.s, a.q + b.q}; }
};
__device__ __forceinline__ double rj_shfl_xor_f64(double v, int m) {
  rj_u32 lo, hi;
  asm("mov.b64 { %0, %1}, %2;" : "=r"(lo), "=r"(hi) : "d"(v));
  lo = rj_shfl_xor_u32(lo, m);
  hi = rj_shfl_xor_u32(hi, m);
  double r;
  asm("mov.b64 %0, { %1, %2};" : "=d"(r) : "r"(lo), "r"(hi));
  return r;
}
__device__ __forceinline__ rj_sum_sq64 rj_shfl_state(const rj_sum_sq64& s, int m) {
  return rj_sum_sq64{rj_shfl_xor_f64(s.s, m), rj_shfl_xor_f64(s.q, m)};
}
// y = (x - mean) * rstd * w + b, var the population variance, rstd =
// 1 / sqrt(var + eps). Three forms, each one reduction of the row:
// - Where a reduction is cheap (a group or a block per row): the row's sum and
//   sum of squares in f32, var = E[x^2] - mean^2. Its error is a few ulps of
//   E[x^2], of the order of var's own while 9 mean^2 <= E[x^2] (|mean| at most
//   sd / sqrt(8)); past that, or with E[x^2] not finite, the row's squares are
//   summed again about its mean (exact centring), so a row far from zero costs
//   a second reduction, never accuracy. A warp whose rows include one past the
//   bound centres them all (the groups of a warp hold different rows and every
//   lane must reach each shuffle; keeping each row's own form spilled layer
//   norm + residual f32 w32x4 at its 64 registers). Against the two sums (the
//   mean, then the squares about it): f32 b512x16_n at 8192x32768 a point
//   faster, the others within the spread (H100, commit 4eaf61e).
// - Split rows and 16-bit blocks of 512 threads: each thread's (n, mean, m2)
//   about its own mean, merged by Chan's formula (rj_red_welford).
// - kSums64 (NormSpec::f64_sums, the deferred 16-bit split rows): the sum and
//   sum of squares in f64, merged by adds. Each thread sums its elements'
//   offsets d = x - x0 from its first one in f32 (x0 an element of the row, so
//   sum d^2 is at most 2 (the thread's squares about the row's mean + n var) and
//   its f32 error is the centred sum's), then moves the pair to zero in f64 (x0
//   and the sums exact, one rounding). The f64 cancellation costs about
//   2^-53 (mean / sd)^2 of var: under 1e-9 up to |mean| = 3000 sd.
template <class T, class Cols = rj_cols_global, bool kSums64 = false> struct rj_norm_layer_t {
  typedef typename rj_type_if<kSums64, rj_red_sum_sq64, rj_red_welford<rj_acc_f32>>::type Split;
  float param;  // eps
  rj_u64 w, b, mean_out, rstd_out;
  rj_u64 row_index;
  rj_col_grid grid;  // where the weight and bias lie (rj_col_ld4)
  Cols cols;
  // An output element: (x - mean) * rstd * w + b, each step rounded (no
  // contraction into an fma).
  static __device__ __forceinline__ float affine(float x, float mean, float rstd, float w, float b) {
    return rj_add_rn(rj_mul_rn(rj_mul_rn(x - mean, rstd), w), b);
  }
  template <int P, class C, class Red, class Out = rj_out_kept>
  __device__ __forceinline__ void row(float (&x)[P][4], const C& c, const Red& red, bool leader, const Out& out = Out()) const {
    const float n = (float)c.cols;
    float mean, var;
    if constexpr (Red::kCheap) {
      float sum = 0.0f, sq = 0.0f;
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (c.ok(p, k)) {
            sum += x[p][k];
            sq = fmaf(x[p][k], x[p][k], sq);
          }
      const rj_sum_sq t = red(rj_red_sum_sq(), rj_sum_sq{sum, sq});
      mean = rj_div_rn(t.s, n);
      // n mean^2 = mean * sum: one division for the variance on either path.
      const float nmm = rj_mul_rn(mean, t.s);
      float m2 = t.q - nmm;
      if (rj_warp_any(!(t.q < rj_pos_inf() && rj_mul_rn(9.0f, nmm) <= t.q)))
        m2 = red(rj_red_sum<rj_acc_f32>(), rj_row_sq_about(x, c, mean));
      var = rj_div_rn(m2, n);
    } else if constexpr (!kSums64) {
      float cnt = 0.0f, sum = 0.0f;
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (c.ok(p, k)) {
            cnt += 1.0f;
            sum += x[p][k];
          }
      const float mean_l = cnt > 0.0f ? rj_div_rn(sum, cnt) : 0.0f;
      const rj_welford s = red(rj_red_welford<rj_acc_f32>(), rj_welford{cnt, mean_l, rj_row_sq_about(x, c, mean_l)});
      mean = s.mean;
      var = rj_div_rn(s.m2, n);
    } else {
      // The first element of pack 0 inside the row (a general chunk's lane 0
      // may start before it; a thread with none holds nothing to sum).
      float x0 = 0.0f;
#pragma unroll
      for (int k = 3; k >= 0; --k)
        if (c.ok(0, k)) x0 = x[0][k];
      float cnt = 0.0f, sum = 0.0f, sq = 0.0f;
#pragma unroll
      for (int p = 0; p < P; ++p)
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (c.ok(p, k)) {
            const float d = x[p][k] - x0;
            cnt += 1.0f;
            sum += d;
            sq = fmaf(d, d, sq);
          }
      const double x0d = x0, sumd = sum;
      const rj_sum_sq64 t = red(rj_red_sum_sq64(), rj_sum_sq64{fma((double)cnt, x0d, sumd), fma(x0d, fma((double)cnt, x0d, 2.0 * sumd), (double)sq)});
      const double inv = 1.0 / (double)c.cols, mean64 = t.s * inv;
      const double var64 = fma(t.q, inv, -mean64 * mean64);
      mean = (float)mean64;
      var = var64 < 0.0 ? 0.0f : (float)var64;
    }
    if (!Red::kApply) return;
    const float rstd = rj_rsqrt_rn(var + param);
    if (leader) {
      if (mean_out) rj_st_b32(mean_out + row_index * 4, rj_f32_as_bits(mean));
      if (rstd_out) rj_st_b32(rstd_out + row_index * 4, rj_f32_as_bits(rstd));
    }
    if constexpr (Out::kStores) {
      // Each pack is stored as it is made, and the weight and bias of the
      // next G packs are loaded before this G's are used: the loads take
      // 2 x G packs' registers, not the row's. Loads and stores are volatile
      // (issued in the order written), so with the stores after the row, as
      // below, every pack's loads came first: f32 b512x16_x spilled 80 bytes
      // so (ptxas 13.0), and ran 4 points of copy above b512x16_n this way
      // (8192x32768, H100, commit 3b614f8).
      const int G = P < 4 ? P : 4;
      static_assert(P % G == 0, "whole groups of packs");
      float wv[2][G][4], bv[2][G][4];
#pragma unroll
      for (int g = 0; g <= P / G; ++g) {
        if (g < P / G) {
#pragma unroll
          for (int q = 0; q < G; ++q) {
            cols.template ld<T, 0>(w, c, g * G + q, grid, wv[g % 2][q]);
            cols.template ld<T, 1>(b, c, g * G + q, grid, bv[g % 2][q]);
          }
        }
        if (g == 0) continue;
#pragma unroll
        for (int q = 0; q < G; ++q) {
          const int p = (g - 1) * G + q, h = (g - 1) % 2;
#pragma unroll
          for (int k = 0; k < 4; ++k) x[p][k] = affine(x[p][k], mean, rstd, wv[h][q][k], bv[h][q][k]);
          if constexpr (C::kPair == 2) {
            if (q % 2 == 1) out.pair(p - 1, x[p - 1], x[p]);
          } else {
            out(p, x[p]);
          }
        }
      }
    } else {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        float wv[4], bv[4];
        cols.template ld<T, 0>(w, c, p, grid, wv);
        cols.template ld<T, 1>(b, c, p, grid, bv);
#pragma unroll
        for (int k = 0; k < 4; ++k) x[p][k] = affine(x[p][k], mean, rstd, wv[k], bv[k]);
      }
    }
  }
  // The same over a row of raw words (rj_row_ld_raw), its outputs stored
  // through out as they are made (rj_raw_out), the weight and bias asked for
  // two pairs ahead of them (rj_raw_cols): `row`'s sums (the cheap
  // reduction's or the Welford merge) in the same order.
  template <int P, class C, class Red, class Out>
  __device__ __forceinline__ void row_raw(const rj_u32 (&h)[P][T::kWords], const C& c, const Red& red, bool leader, const Out& out) const {
    static_assert(!kSums64 && rj_same<Cols, rj_cols_global>::value, "a raw row holds its own columns");
    const float n = (float)c.cols;
    float mean, var;
    if constexpr (Red::kCheap) {
      // The cheap reduction's sums, and its second pass about the mean.
      float sum = 0.0f, sq = 0.0f;
      rj_raw_each<T, false>(h, c, [&](float v) {
        sum += v;
        sq = fmaf(v, v, sq);
      });
      const rj_sum_sq t = red(rj_red_sum_sq(), rj_sum_sq{sum, sq});
      mean = rj_div_rn(t.s, n);
      const float nmm = rj_mul_rn(mean, t.s);
      float m2 = t.q - nmm;
      if (rj_warp_any(!(t.q < rj_pos_inf() && rj_mul_rn(9.0f, nmm) <= t.q))) {
        float q = 0.0f;
        rj_raw_each<T, true>(h, c, [&](float v) {
          const float d = v - mean;
          q += d * d;
        });
        m2 = red(rj_red_sum<rj_acc_f32>(), q);
      }
      var = rj_div_rn(m2, n);
    } else {
      float cnt = 0.0f, sum = 0.0f;
      rj_raw_each<T, false>(h, c, [&](float v) {
        cnt += 1.0f;
        sum += v;
      });
      const float mean_l = cnt > 0.0f ? rj_div_rn(sum, cnt) : 0.0f;
      float m2 = 0.0f;
      rj_raw_each<T, true>(h, c, [&](float v) {
        const float d = v - mean_l;
        m2 += d * d;
      });
      const rj_welford s = red(rj_red_welford<rj_acc_f32>(), rj_welford{cnt, mean_l, m2});
      mean = s.mean;
      var = rj_div_rn(s.m2, n);
    }
    if (!Red::kApply) return;
    rj_raw_cols<T, 2, kRawColsAhead, C> cols_raw(w, b, grid);
    const float rstd = rj_rsqrt_rn(var + param);
    if (leader) {
      if (mean_out) rj_st_b32(mean_out + row_index * 4, rj_f32_as_bits(mean));
      if (rstd_out) rj_st_b32(rstd_out + row_index * 4, rj_f32_as_bits(rstd));
    }
    rj_raw_out<T>(h, c, cols_raw, out, [&](float (&y)[4], const rj_u32 (&wb)[2][T::kWords]) {
      float wv[4], bv[4];
      T::unpack4(wb[0], wv);
      T::unpack4(wb[1], bv);
#pragma unroll
      for (int k = 0; k < 4; ++k) y[k] = affine(y[k], mean, rstd, wv[k], bv[k]);
    });
  }
};

// ---- RMS norm ------------------------------------------------------------------
// y = x * rstd * w, rstd = 1 / sqrt(sum(x^2) / n + eps).
template <class T, class Cols = rj_cols_global> struct rj_norm_rms_t {
  typedef rj_red_sum<rj_acc_f32> Split;
  float param;  // eps
  rj_u64 w, b, mean_out, rstd_out;
  rj_u64 row_index;
  rj_col_grid grid;  // where the weight and bias lie (rj_col_ld4)
  Cols cols;
  template <int P, class C, class Red>
  __device__ __forceinline__ void row(float (&x)[P][4], const C& c, const Red& red, bool leader) const {
    float ss = 0.0f;
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c.ok(p, k)) ss += rj_mul_rn(x[p][k], x[p][k]);
    ss = red(rj_red_sum<rj_acc_f32>(), ss);
    if (!Red::kApply) return;
    const float rstd = rj_rsqrt_rn(rj_div_rn(ss, (float)c.cols) + param);
    if (leader && rstd_out) rj_st_b32(rstd_out + row_index * 4, rj_f32_as_bits(rstd));
#pragma unroll
    for (int p = 0; p < P; ++p) {
      float wv[4];
      cols.template ld<T, 0>(w, c, p, grid, wv);
#pragma unroll
      for (int k = 0; k < 4; ++k) x[p][k] = rj_mul_rn(rj_mul_rn(x[p][k], rstd), wv[k]);
    }
  }
  // The same over a row of raw words (rj_row_ld_raw), its outputs stored through
  // out as they are made (rj_raw_out), the weight asked for two pairs ahead of
  // them (rj_raw_cols): the same sums in the same order, so the same bits.
  template <int P, class C, class Red, class Out>
  __device__ __forceinline__ void row_raw(const rj_u32 (&h)[P][T::kWords], const C& c, const Red& red, bool leader, const Out& out) const {
    static_assert(rj_same<Cols, rj_cols_global>::value, "a raw row holds its own columns");
    float ss = 0.0f;
    rj_raw_each<T, false>(h, c, [&](float v) { ss += rj_mul_rn(v, v); });
    ss = red(rj_red_sum<rj_acc_f32>(), ss);
    if (!Red::kApply) return;
    rj_raw_cols<T, 1, kRawColsAhead, C> cols_raw(w, 0, grid);
    const float rstd = rj_rsqrt_rn(rj_div_rn(ss, (float)c.cols) + param);
    if (leader && rstd_out) rj_st_b32(rstd_out + row_index * 4, rj_f32_as_bits(rstd));
    rj_raw_out<T>(h, c, cols_raw, out, [&](float (&y)[4], const rj_u32 (&wv_raw)[1][T::kWords]) {
      float wv[4];
      T::unpack4(wv_raw[0], wv);
#pragma unroll
      for (int k = 0; k < 4; ++k) y[k] = rj_mul_rn(rj_mul_rn(y[k], rstd), wv[k]);
    });
  }
};
