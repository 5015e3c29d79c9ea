// ---- redjit prelude: reduce --------------------------------------------------
// Reduction functors, one per op, and the primitives that combine their states
// over a lane group, a warp and a block (seeds 001 and 002), reused by the
// softmax and norm kernels. Every functor has the same contract, so a kernel
// never special-cases an op:
//   typedef ... S;                          the running state (32-bit words)
//   typedef ... R;                          the result: float, or rj_i64 (an index)
//   S identity() const                      merging it changes nothing
//   float value(float x) const              an element as it enters (dot: value(x, y))
//   S feed(S acc, float v, rj_u64 i) const  acc with value v of element i added
//   S feed_n<N>(S acc, const float (&v)[N], I index) const
//                                           acc with the values v[k] of elements
//                                           index(k) added (a pack, or a thread's
//                                           packs in flight): one update per group
//                                           where an op has a cheaper one
//   S merge(S a, S b) const                 two states combined
//   R finalize(S acc, rj_u64 n) const       the result over n elements
// and, optionally,
//   S group_total<G>(S s) const             every lane of an aligned group of G
//                                           lanes gets the group's state, where an
//                                           op has a cheaper form than G - 1
//                                           pairwise merges (rj_group_total
//                                           takes it)
// merge is symmetric to the bit (merge(a, b) == merge(b, a)): in an xor butterfly
// each pair of lanes combines the same two states in either order, so every lane
// ends with the same bits, any lane may be read, and every warp of a block can
// re-reduce the per-warp states itself (the result reaches all threads without a
// broadcast barrier). Products that feed a sum go through rj_mul_rn where a
// contracted FMA would round differently in the two orders.
//
// A thread feeds its elements in increasing index order (every kernel walks its
// share forwards), and feed_n's index(k) increases with k: so feed and feed_n
// may settle a tie by keeping what they hold (the lower index) without
// comparing indices. Only merge sees states in any order.
//
// NaN policy (PyTorch's): sum, mean, var, dot propagate NaN; max and min return
// NaN when any element is NaN (max.NaN / min.NaN, canonical NaN); argmax and
// argmin return the index of the first NaN.
//
// No float atomics anywhere: with the grid the launcher derives from the device
// and the size, the same input gives the same bits run after run.

// ---- accumulation policies: the rounding of every add. f32 is the default. The
// 16-bit ones are the seed's low-precision variants (f16 input with f16
// accumulation, bf16 with bf16), lossy by design: each partial sum keeps 11 (f16)
// or 8 (bf16) significant bits. An f32 add then a rounding to f16/bf16 is the
// correctly rounded 16-bit add: f32's 24 bits are at least 2p + 2 for both, so
// the double rounding is innocuous.
struct rj_acc_f32 {
  static __device__ __forceinline__ float round(float x) { return x; }
};
struct rj_acc_bf16 {
  static __device__ __forceinline__ float round(float x) { return rj_bits_as_f32((rj_u32)rj_f32_to_bf16_rn(x) << 16); }
};
struct rj_acc_f16 {
  static __device__ __forceinline__ float round(float x) { return rj_f16_to_f32(rj_f32_to_f16_rn(x)); }
};

__device__ __forceinline__ float rj_neg_inf() { return rj_bits_as_f32(0xff800000u); }
__device__ __forceinline__ float rj_max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rj_min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// div.full: within 2 ulp, a fraction of div.rn's cost; Welford divides per element.
__device__ __forceinline__ float rj_div_full(float a, float b) {
  float r;
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// 1 / x within 1 ulp in one MUFU instruction. Chan's merge weighs by n_a / n
// and n_a n_b / n through it instead of three divisions (div.rn: a dependent
// Newton sequence with a slow-path branch) at each of a block and cluster tree's
// ~11 levels, which a small array's variance waits on in series.
__device__ __forceinline__ float rj_rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// e^x and ln(x) through ex2/lg2 (about 2 ulp; no toolkit math header).
__device__ __forceinline__ float rj_exp(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(rj_mul_rn(x, 1.4426950408889634f)));
  return r;
}
__device__ __forceinline__ float rj_log(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return rj_mul_rn(r, 0.6931471805599453f);
}

// ---- sums: sum, mean, sum of squares, dot ------------------------------------
template <class A> struct rj_red_sum {
  typedef float S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return 0.0f; }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const { return A::round(acc + v); }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
#pragma unroll
    for (int k = 0; k < N; ++k) acc = A::round(acc + v[k]);
    return acc;
  }
  __device__ __forceinline__ S merge(S a, S b) const { return A::round(a + b); }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc; }
};
template <class A> struct rj_red_mean : rj_red_sum<A> {
  __device__ __forceinline__ float finalize(float acc, rj_u64 n) const { return A::round(rj_div_rn(acc, (float)n)); }
};
template <class A> struct rj_red_sumsq : rj_red_sum<A> {
  __device__ __forceinline__ float value(float x) const { return A::round(x * x); }
};
template <class A> struct rj_red_dot : rj_red_sum<A> {
  __device__ __forceinline__ float value(float x, float y) const { return A::round(x * y); }
};

// ---- max, min (the accumulation policy plays no part: comparisons are exact) --
template <class A> struct rj_red_max {
  typedef float S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return rj_neg_inf(); }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const { return rj_max_nan(acc, v); }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
#pragma unroll
    for (int k = 0; k < N; ++k) acc = rj_max_nan(acc, v[k]);
    return acc;
  }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_max_nan(a, b); }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc; }
};
template <class A> struct rj_red_min {
  typedef float S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return -rj_neg_inf(); }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const { return rj_min_nan(acc, v); }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
#pragma unroll
    for (int k = 0; k < N; ++k) acc = rj_min_nan(acc, v[k]);
    return acc;
  }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_min_nan(a, b); }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc; }
};

// ---- argmax, argmin: (value, index); index -1 is the empty state ------------
struct rj_argval {
  float v;
  rj_u32 pad;
  rj_i64 i;
};
// Whether a beats b: the empty state loses; a NaN beats every number and the
// lower index wins between NaNs (the first NaN); else the larger (kMax) or smaller
// value, the lower index on a tie (-0 ties +0, as in PyTorch). A strict order on
// distinct indices, so merge is symmetric.
template <bool kMax>
__device__ __forceinline__ bool rj_arg_beats(const rj_argval& a, const rj_argval& b) {
  if (b.i < 0) return true;
  if (a.i < 0) return false;
  const bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) return an && (!bn || a.i < b.i);
  if (a.v == b.v) return a.i < b.i;
  return kMax ? a.v > b.v : a.v < b.v;
}
// feed and feed_n rely on the increasing order of a thread's elements: a value
// beats what is held when nothing is held yet, or when the held value is a
// number and the new one is a NaN or strictly better; a tie keeps the held
// (lower) index.
template <bool kMax> struct rj_red_arg {
  typedef rj_argval S;
  typedef rj_i64 R;
  __device__ __forceinline__ S identity() const { return rj_argval{0.0f, 0u, -1}; }
  __device__ __forceinline__ float value(float x) const { return x; }
  static __device__ __forceinline__ bool beats_held(const S& acc, float v) {
    return acc.i < 0 || (acc.v == acc.v && (v != v || (kMax ? v > acc.v : v < acc.v)));
  }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64 i) const {
    if (beats_held(acc, v)) acc = rj_argval{v, 0u, (rj_i64)i};
    return acc;
  }
  // The group's best by max.NaN / min.NaN (one instruction per element); only
  // when it beats the held value is the group searched for the first element
  // equal to it (or the first NaN). A tie between -0 and +0 finds the first
  // zero, as comparisons treat them alike.
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I index) const {
    float m = v[0];
#pragma unroll
    for (int k = 1; k < N; ++k) m = kMax ? rj_max_nan(m, v[k]) : rj_min_nan(m, v[k]);
    if (beats_held(acc, m)) {
      const bool nan = m != m;
      int first = N - 1;
#pragma unroll
      for (int k = N - 2; k >= 0; --k)
        if (nan ? v[k] != v[k] : v[k] == m) first = k;
      acc = rj_argval{m, 0u, (rj_i64)index(first)};
    }
    return acc;
  }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_arg_beats<kMax>(a, b) ? a : b; }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc.i; }
};
template <class A> struct rj_red_argmax : rj_red_arg<true> {};
template <class A> struct rj_red_argmin : rj_red_arg<false> {};

// ---- variance: Welford per element, Chan's parallel merge ---------------------
// The count is a float: merge weights n_a / n are within 2^-22 relative (one
// reciprocal, two roundings), below f32 accumulation's own error; finalize divides by the exact n the launcher
// passes. The merge is written in its symmetric form
//   mean = mean_a * (n_a * r) + mean_b * (n_b * r),   r = 1 / n
//   m2   = (m2_a + m2_b) + d^2 * (n_a * n_b * r),     d = mean_b - mean_a
// (d^2 and every product are order-free; the two mean products are rounded apart
// so no FMA contraction makes the order matter).
struct rj_welford {
  float n, mean, m2;
};
template <class A> struct rj_red_welford {
  typedef rj_welford S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return rj_welford{0.0f, 0.0f, 0.0f}; }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const {
    const float n = acc.n + 1.0f;
    const float d = v - acc.mean;
    const float mean = acc.mean + rj_div_full(d, n);
    return rj_welford{n, mean, acc.m2 + d * (v - mean)};
  }
  // Chunks of up to 8 elements (N a power of two: 1 / chunk is exact): the
  // chunk's own mean and M2, then one Chan update with one reciprocal per chunk
  // instead of a division per element. From the empty state it gives the chunk's
  // (mean, M2) as computed. An Inf makes M2 NaN (Inf - Inf), as the variance of
  // such data is.
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
    static_assert((N & (N - 1)) == 0, "a group is a power of two");
    const int C = N < 8 ? N : 8;
#pragma unroll
    for (int c = 0; c < N; c += C) {
      float s = v[c];
#pragma unroll
      for (int k = 1; k < C; ++k) s += v[c + k];
      const float mean_c = s * (1.0f / C);
      float m2_c = 0.0f;
#pragma unroll
      for (int k = 0; k < C; ++k) {
        const float e = v[c + k] - mean_c;
        m2_c = fmaf(e, e, m2_c);
      }
      const float n = acc.n + (float)C;
      const float w = rj_div_full((float)C, n);
      const float d = mean_c - acc.mean;
      acc = rj_welford{n, fmaf(d, w, acc.mean), acc.m2 + m2_c + d * (d * acc.n * w)};
    }
    return acc;
  }
  // A lane group's state in two passes over its states, each a butterfly of
  // plain sums: the count and the sum give the mean, then each state's M2 about
  // it (m2 + n (mean_i - mean)^2, Chan's identity for many states at once) sums
  // to the group's. A Chan merge a level costs a reciprocal and a chain of
  // dependent multiplies; a sum costs an add, and an add is commutative to the
  // bit, so every lane ends with the same bits as merge's butterfly does.
  template <int G> __device__ __forceinline__ S group_total(S s) const {
    if constexpr (G == 1) return s;
    float n = s.n, sum = rj_mul_rn(s.n, s.mean);
#pragma unroll
    for (int m = G / 2; m >= 1; m >>= 1) {
      n = rj_add_rn(n, rj_shfl_xor(n, m));
      sum = rj_add_rn(sum, rj_shfl_xor(sum, m));
    }
    const float mean = n > 0.0f ? rj_div_rn(sum, n) : 0.0f;
    const float d = s.mean - mean;
    float m2 = s.n > 0.0f ? rj_add_rn(s.m2, rj_mul_rn(rj_mul_rn(d, d), s.n)) : 0.0f;
#pragma unroll
    for (int m = G / 2; m >= 1; m >>= 1) m2 = rj_add_rn(m2, rj_shfl_xor(m2, m));
    return rj_welford{n, mean, m2};
  }
  __device__ __forceinline__ S merge(S a, S b) const {
    if (a.n == 0.0f) return b;
    if (b.n == 0.0f) return a;
    const float n = a.n + b.n;
    const float r = rj_rcp_approx(n);
    const float d = b.mean - a.mean;
    const float mean = rj_add_rn(rj_mul_rn(a.mean, rj_mul_rn(a.n, r)), rj_mul_rn(b.mean, rj_mul_rn(b.n, r)));
    const float w = rj_mul_rn(rj_mul_rn(a.n, b.n), r);
    return rj_welford{n, mean, rj_add_rn(rj_add_rn(a.m2, b.m2), rj_mul_rn(rj_mul_rn(d, d), w))};
  }
};
template <class A> struct rj_red_varpop : rj_red_welford<A> {
  __device__ __forceinline__ float finalize(rj_welford acc, rj_u64 n) const { return rj_div_rn(acc.m2, (float)n); }
};
template <class A> struct rj_red_varsamp : rj_red_welford<A> {
  // n = 1: 0 / 0 = NaN, as PyTorch's var with correction 1.
  __device__ __forceinline__ float finalize(rj_welford acc, rj_u64 n) const { return rj_div_rn(acc.m2, (float)(n - 1)); }
};

// ---- online softmax: (max m, sum d of e^(x - m)); logsumexp = m + ln d ---------
// Seed 002's MD merge made symmetric (no "which is bigger" branch: both sides are
// scaled by e^(own max - joint max)); an infinite or NaN joint max keeps it with
// d = 1 so +inf and NaN come out as themselves, -inf (nothing yet) with d = 0.
struct rj_md {
  float m, d;
};
template <class A> struct rj_red_lse {
  typedef rj_md S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return rj_md{rj_neg_inf(), 0.0f}; }
  __device__ __forceinline__ float value(float x) const { return x; }
  // Both finite (x - x is 0 only then): seed 002's online update, one exponential.
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const {
    if (v - v == 0.0f && acc.m - acc.m == 0.0f) {
      if (v > acc.m) return rj_md{v, acc.d * rj_exp(acc.m - v) + 1.0f};
      return rj_md{acc.m, acc.d + rj_exp(v - acc.m)};
    }
    return merge(acc, rj_md{v, 1.0f});
  }
  // A group whose max and the held max are finite (or nothing is held yet):
  // rescale the held sum once to the joint max, then one exponential per
  // element. Anything else (an Inf or NaN in the group or held) goes element by
  // element.
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I index) const {
    float mg = v[0];
#pragma unroll
    for (int k = 1; k < N; ++k) mg = rj_max_nan(mg, v[k]);
    if (mg - mg == 0.0f && (acc.m - acc.m == 0.0f || acc.m == rj_neg_inf())) {
      const float m = mg > acc.m ? mg : acc.m;
      float d = acc.d * rj_exp(acc.m - m);
#pragma unroll
      for (int k = 0; k < N; ++k) d += rj_exp(v[k] - m);
      return rj_md{m, d};
    }
#pragma unroll
    for (int k = 0; k < N; ++k) acc = feed(acc, v[k], index(k));
    return acc;
  }
  // A lane group's state in two passes: the max by butterfly, then each state's
  // sum scaled to it, summed by butterfly: one exponential a lane where the
  // pairwise merge takes two a level. A max that is not finite gives what the
  // merge gives (d = 0 for -Inf, 1 for +Inf or NaN); the lanes take no branch
  // apart, as groups of a warp may hold different rows.
  template <int G> __device__ __forceinline__ S group_total(S s) const {
    if constexpr (G == 1) return s;
    float m = s.m;
#pragma unroll
    for (int k = G / 2; k >= 1; k >>= 1) m = rj_max_nan(m, rj_shfl_xor(m, k));
    const bool finite = m - m == 0.0f;
    float d = finite ? rj_mul_rn(s.d, rj_exp(s.m - m)) : 0.0f;
#pragma unroll
    for (int k = G / 2; k >= 1; k >>= 1) d = rj_add_rn(d, rj_shfl_xor(d, k));
    return rj_md{m, finite ? d : (m == rj_neg_inf() ? 0.0f : 1.0f)};
  }
  __device__ __forceinline__ S merge(S a, S b) const {
    const float m = rj_max_nan(a.m, b.m);
    if (m == rj_neg_inf()) return rj_md{m, 0.0f};
    if (m == -rj_neg_inf() || m != m) return rj_md{m, 1.0f};
    return rj_md{m, rj_add_rn(rj_mul_rn(a.d, rj_exp(a.m - m)), rj_mul_rn(b.d, rj_exp(b.m - m)))};
  }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc.m + rj_log(acc.d); }
};

// ---- state shuffles (xor butterfly), one overload per state type ---------------
__device__ __forceinline__ rj_u32 rj_shfl_xor_u32(rj_u32 v, int lane_mask) {
  rj_u32 r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(lane_mask));
  return r;
}
__device__ __forceinline__ float rj_shfl_state(float s, int m) { return rj_shfl_xor(s, m); }
__device__ __forceinline__ rj_argval rj_shfl_state(const rj_argval& s, int m) {
  const rj_u64 i = (rj_u64)s.i;
  const rj_u32 lo = rj_shfl_xor_u32((rj_u32)i, m), hi = rj_shfl_xor_u32((rj_u32)(i >> 32), m);
  return rj_argval{rj_shfl_xor(s.v, m), 0u, (rj_i64)(((rj_u64)hi << 32) | lo)};
}
__device__ __forceinline__ rj_welford rj_shfl_state(const rj_welford& s, int m) {
  return rj_welford{rj_shfl_xor(s.n, m), rj_shfl_xor(s.mean, m), rj_shfl_xor(s.m2, m)};
}
__device__ __forceinline__ rj_md rj_shfl_state(const rj_md& s, int m) { return rj_md{rj_shfl_xor(s.m, m), rj_shfl_xor(s.d, m)}; }

// ---- lane group, warp, block ---------------------------------------------------
// Reduces over each aligned group of G lanes (G a power of two <= 32); every lane
// of a group ends with its group's result. The whole warp must call it.
// An op with its own group_total<G> takes it.
template <class...> struct rj_void_t {
  typedef void type;
};
template <class Op, class = void> struct rj_has_group_total {
  static const bool value = false;
};
template <class Op>
struct rj_has_group_total<Op, typename rj_void_t<decltype(&Op::template group_total<2>)>::type> {
  static const bool value = true;
};
template <int G, class Op>
__device__ __forceinline__ typename Op::S rj_group_reduce(const Op& op, typename Op::S s) {
#pragma unroll
  for (int m = G / 2; m >= 1; m >>= 1) s = op.merge(s, rj_shfl_state(s, m));
  return s;
}
// The same result through the op's group_total where it has one. It holds a
// state's words longer than the pairwise merge (the lane's own state waits for
// the group's mean or max): the split rows' exchange takes it (faster for
// online softmax, log-softmax and 16-bit layer norm at 64x1048576; H100, commit
// 760adec), while block kernels that hold a whole row at the register limit
// spilled with it (16-bit layer norm b512x16_x: 176 bytes).
template <int G, class Op>
__device__ __forceinline__ typename Op::S rj_group_total(const Op& op, typename Op::S s) {
  if constexpr (rj_has_group_total<Op>::value) {
    return op.template group_total<G>(s);
  } else {
    return rj_group_reduce<G>(op, s);
  }
}
template <class Op>
__device__ __forceinline__ typename Op::S rj_warp_reduce(const Op& op, typename Op::S s) {
  return rj_group_reduce<32>(op, s);
}
// Every thread of a block of exactly kThreads (a multiple of 32) calls it and gets
// the block's result: warps reduce, lane 0s store to shared memory, then every
// warp reduces the kThreads / 32 warp states (each group of lanes holds all of
// them), so the result is in every lane with no second barrier. The first barrier
// keeps a previous call's readers apart from this call's writers: `follows`
// false (no call came before in this block) skips it.
template <int kThreads, class Op>
__device__ __forceinline__ typename Op::S rj_block_reduce(const Op& op, typename Op::S s, bool follows = true) {
  const int kWarps = kThreads / 32;
  __shared__ typename Op::S per_warp[kWarps];
  s = rj_warp_reduce(op, s);
  if (kWarps == 1) return s;
  if (follows) __syncthreads();
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = s;
  __syncthreads();
  s = per_warp[(threadIdx.x % 32) % kWarps];
  return rj_group_reduce<kWarps>(op, s);
}

// ---- grid: per-block partials, and the last block to arrive finishes --------
__device__ __forceinline__ void rj_fence_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ rj_u32 rj_atom_add_acq_rel(rj_u64 a, rj_u32 v) {
  rj_u32 old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory");
  return old;
}
// States cross blocks as 32-bit words: plain stores, volatile loads (the last
// block must not read a partial from a stale L1 line).
template <class S> __device__ __forceinline__ void rj_st_state(rj_u64 a, const S& s) {
  static_assert(sizeof(S) % 4 == 0 && sizeof(S) <= 16, "a state is 1 to 4 words");
  const rj_u32* w = reinterpret_cast<const rj_u32*>(&s);
#pragma unroll
  for (int k = 0; k < (int)(sizeof(S) / 4); ++k) rj_st_b32(a + 4 * k, w[k]);
}
template <class S> __device__ __forceinline__ S rj_ld_state(rj_u64 a) {
  S s;
  rj_u32* w = reinterpret_cast<rj_u32*>(&s);
#pragma unroll
  for (int k = 0; k < (int)(sizeof(S) / 4); ++k) w[k] = rj_load_volatile::b32(a + 4 * k);
  return s;
}
// N adjacent states as 16-byte words (the address 16-byte aligned, N states
// a multiple of 16 bytes): plain stores and volatile loads, as rj_st_state's
// and rj_ld_state's.
template <int N, class S> __device__ __forceinline__ void rj_st_states(rj_u64 a, const S (&s)[N]) {
  static_assert((N * sizeof(S)) % 16 == 0, "whole 16-byte words");
  const auto& w = *reinterpret_cast<const rj_u32(*)[N * sizeof(S) / 16][4]>(s);
#pragma unroll
  for (int q = 0; q < (int)(N * sizeof(S) / 16); ++q) rj_st_words(a + 16 * q, w[q]);
}
template <int N, class S> __device__ __forceinline__ void rj_ld_states(rj_u64 a, S (&s)[N]) {
  static_assert((N * sizeof(S)) % 16 == 0, "whole 16-byte words");
  auto& w = *reinterpret_cast<rj_u32(*)[N * sizeof(S) / 16][4]>(s);
#pragma unroll
  for (int q = 0; q < (int)(N * sizeof(S) / 16); ++q) rj_ld_words<rj_load_volatile>(a + 16 * q, w[q]);
}
// Threads with `writer` store their state at `slot`; the block then takes a
// ticket from the counter at `counter` (one per group of `arrivals` blocks that
// finish together). Returns true, in every thread, in the block that arrives
// last: it may read every partial of its group. That block resets the counter,
// so the next launch on the stream finds it at zero. Release: each writer's
// fence, then the barrier, then the acq_rel ticket; acquire: the ticket, the
// barrier, then a fence before the reads.
template <class S>
__device__ __forceinline__ bool rj_arrive_last(rj_u64 counter, rj_u32 arrivals, rj_u64 slot, const S& s, bool writer) {
  __shared__ rj_u32 last;
  if (writer) rj_st_state(slot, s);
  rj_fence_gpu();
  __syncthreads();
  if (threadIdx.x == 0) {
    const rj_u32 ticket = rj_atom_add_acq_rel(counter, 1u);
    last = ticket == arrivals - 1 ? 1u : 0u;
    if (last) rj_st_b32(counter, 0u);
  }
  __syncthreads();
  const bool is_last = last != 0u;
  if (is_last) rj_fence_gpu();
  return is_last;
}
// The last block's merge of the `count` states at `partials` (rj_arrive_last's
// slots): each thread merges slots threadIdx.x, + kThreads, ... in order, then
// the block's fixed tree; every thread gets the total.
template <int kThreads, class Op>
__device__ __forceinline__ typename Op::S rj_merge_partials(const Op& op, rj_u64 partials, rj_u32 count) {
  typedef typename Op::S S;
  S total = op.identity();
  for (rj_u32 b = threadIdx.x; b < count; b += kThreads) total = op.merge(total, rj_ld_state<S>(partials + (rj_u64)b * sizeof(S)));
  return rj_block_reduce<kThreads>(op, total);
}

// ---- results: f32 values, i64 indices ------------------------------------------
__device__ __forceinline__ void rj_st_result(rj_u64 a, rj_u64 i, float r) { rj_st_b32(a + i * 4, rj_f32_as_bits(r)); }
__device__ __forceinline__ void rj_st_result(rj_u64 a, rj_u64 i, rj_i64 r) {
  rj_st_b64(a + i * 8, rj_b64{(rj_u32)(rj_u64)r, (rj_u32)((rj_u64)r >> 32)});
}

// ---- feeding a contiguous range ------------------------------------------------
// One element (or pair) into the state.
template <class Op, class T, int kSrcs>
__device__ __forceinline__ typename Op::S rj_feed_one(const Op& op, typename Op::S acc, rj_u64 src0, rj_u64 src1, rj_u64 at, rj_u64 index) {
  const float x = rj_ld1<T, rj_load_nc>(src0, at);
  if constexpr (kSrcs == 2) {
    return op.feed(acc, op.value(x, rj_ld1<T, rj_load_nc>(src1, at)), index);
  } else {
    (void)src1;
    return op.feed(acc, op.value(x), index);
  }
}
// 16 / T::kBytes elements of one 16-byte load (rj_ld_words), widened to f32.
template <class T> __device__ __forceinline__ void rj_unpack16(const rj_u32 (&w)[4], float (&v)[16 / T::kBytes]) {
#pragma unroll
  for (int g = 0; g < 4 / T::kWords; ++g) {
    rj_u32 part[T::kWords];
    float q[4];
#pragma unroll
    for (int k = 0; k < T::kWords; ++k) part[k] = w[g * T::kWords + k];
    T::unpack4(part, q);
#pragma unroll
    for (int e = 0; e < 4; ++e) v[g * 4 + e] = q[e];
  }
}
// A pack of kPack elements read with one vector load and widened to f32: 4 (of
// any type), or one 16-byte load of a 16-bit type's 8.
template <class T, int kPack>
__device__ __forceinline__ void rj_ld_pack(rj_u64 a, rj_u64 i, float (&v)[kPack]) {
  if constexpr (kPack == 4) {
    rj_ld4<T, rj_load_nc>(a, i, v);
  } else {
    static_assert(kPack * T::kBytes == 16, "a pack of more than 4 elements is one 16-byte load");
    rj_u32 w[4];
    rj_ld_words<rj_load_nc>(a + i * T::kBytes, w);
    rj_unpack16<T>(w, v);
  }
}
// Feeds elements first .. first + count of the source(s) to acc, as thread `lane`
// of `lanes`; element first + k enters as index base + k (base: where the range
// starts in what the result indexes, a split row's first column). A pack is kPack
// elements read with one vector load (4 of f32 or 8 of a 16-bit type: 16 bytes;
// ReduceSpec::pack): the elements before src0's first pack boundary go one per
// lane, then whole packs (kUnroll per lane in flight, lane-strided so each unroll
// step of a warp is one coalesced access), then the tail one per lane. A second
// source that sits off src0's pack phase sends the whole range down the element
// path. Which thread feeds which element depends only on (first, count, lanes, the
// addresses), so the order is fixed.
template <class Op, class T, int kSrcs, int kUnroll, int kPack>
__device__ __forceinline__ typename Op::S rj_feed_range(const Op& op, typename Op::S acc, rj_u64 src0, rj_u64 src1,
                                                        rj_u64 first, rj_u64 count, rj_u64 lane, rj_u64 lanes,
                                                        rj_u64 base = 0) {
  const rj_u64 kPackBytes = kPack * T::kBytes;
  rj_u64 head = ((kPackBytes - (src0 + first * T::kBytes) % kPackBytes) % kPackBytes) / T::kBytes;
  if (kSrcs == 2 && (src1 + (first + head) * T::kBytes) % kPackBytes != 0) head = count;
  if (head > count) head = count;
  for (rj_u64 k = lane; k < head; k += lanes) acc = rj_feed_one<Op, T, kSrcs>(op, acc, src0, src1, first + k, base + k);
  const rj_u64 packs = (count - head) / kPack;
  const rj_u64 start = first + head;
  rj_u64 p = lane;
  for (; p + (kUnroll - 1) * lanes < packs; p += kUnroll * lanes) {
    float x[kUnroll][kPack], y[kSrcs == 2 ? kUnroll : 1][kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) rj_ld_pack<T, kPack>(src0, start + (p + u * lanes) * kPack, x[u]);
    if constexpr (kSrcs == 2) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) rj_ld_pack<T, kPack>(src1, start + (p + u * lanes) * kPack, y[u]);
    }
    // The packs in flight go in as one group: element k of the group is
    // element e of pack u, index base + head + (p + u * lanes) * kPack + e.
    float v[kUnroll * kPack];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int e = 0; e < kPack; ++e) {
        if constexpr (kSrcs == 2) {
          v[u * kPack + e] = op.value(x[u][e], y[u][e]);
        } else {
          v[u * kPack + e] = op.value(x[u][e]);
        }
      }
    }
    acc = op.feed_n(acc, v, [&](int k) { return base + head + (p + (rj_u64)(k / kPack) * lanes) * kPack + (rj_u64)(k % kPack); });
  }
  // The last packs, fewer than kUnroll a lane: up to 16 elements (two sources: 8
  // of each) loaded together, in flight at once as in the loop above, then fed
  // element by element in index order (a group update here gains nothing, and
  // ptxas spilled the warp-per-row Welford twins around it; so did more packs in
  // flight, 4 of each of two byte-sized sources, and 32 elements of the 16-bit
  // split-row argmax).
  const int kRestMost = 16 / kPack / kSrcs > 0 ? 16 / kPack / kSrcs : 1;
  const int kRest = kUnroll < kRestMost ? kUnroll : kRestMost;
  for (; p < packs; p += kRest * lanes) {
    float x[kRest][kPack], y[kSrcs == 2 ? kRest : 1][kPack];
#pragma unroll
    for (int u = 0; u < kRest; ++u) {
      if (p + u * lanes < packs) {
        rj_ld_pack<T, kPack>(src0, start + (p + u * lanes) * kPack, x[u]);
        if constexpr (kSrcs == 2) rj_ld_pack<T, kPack>(src1, start + (p + u * lanes) * kPack, y[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < kRest; ++u) {
      if (p + u * lanes < packs) {
#pragma unroll
        for (int e = 0; e < kPack; ++e) {
          const rj_u64 index = base + head + (p + u * lanes) * kPack + e;
          if constexpr (kSrcs == 2) {
            acc = op.feed(acc, op.value(x[u][e], y[u][e]), index);
          } else {
            acc = op.feed(acc, op.value(x[u][e]), index);
          }
        }
      }
    }
  }
  for (rj_u64 k = head + packs * kPack + lane; k < count; k += lanes) acc = rj_feed_one<Op, T, kSrcs>(op, acc, src0, src1, first + k, base + k);
  return acc;
}

// ---- 16-byte vectors of adjacent elements (column kernels) ---------------------

// Merges each of kVec states over the kPhases warps of a block (warp w holds
// phase w; lanes are columns) in phase order; warp 0 ends with the results.
// Up to 32 bytes of a thread's states cross shared memory a round (8 KB for
// 256 threads, which shared memory holds at full occupancy): one barrier pair
// for all of them where they fit, not one a state (this merge ends every block
// of a column kernel and again its tiles' last blocks: the kernel's tail).
// One-byte columns (kVec 16) keep a state a round: more at once spill. A
// barrier opens each round, so a previous round's (or call's) readers are done
// before the tile is written again.
template <int kPhases, int kVec, class Op>
__device__ __forceinline__ void rj_merge_phases(const Op& op, typename Op::S (&acc)[kVec]) {
  typedef typename Op::S S;
  constexpr int kFit = 32 / (int)sizeof(S);
  constexpr int kRound = (kVec > 8 || kFit < 1) ? 1 : (kFit < kVec ? kFit : kVec);
  __shared__ S tile[kPhases][kRound][32];
  const rj_u32 tx = threadIdx.x % 32, ty = threadIdx.x / 32;
#pragma unroll
  for (int j0 = 0; j0 < kVec; j0 += kRound) {
    __syncthreads();
#pragma unroll
    for (int g = 0; g < kRound; ++g)
      if (j0 + g < kVec) tile[ty][g][tx] = acc[j0 + g];
    __syncthreads();
    if (ty == 0) {
#pragma unroll
      for (int g = 0; g < kRound; ++g)
        if (j0 + g < kVec) {
#pragma unroll
          for (int k = 1; k < kPhases; ++k) acc[j0 + g] = op.merge(acc[j0 + g], tile[k][g][tx]);
        }
    }
  }
}

// ---- cluster (sm_90+): blocks of one thread-block cluster combine their block
// states through distributed shared memory, with no global workspace, atomics
// or fences. Every thread of every block of the cluster calls it with its
// block's state (rj_block_reduce's result). Block rank 0's first warp reads the
// kCluster states (lane k reads rank k) and merges them in a fixed butterfly,
// so the result (valid in that warp's lanes) has the same bits every run. The
// second barrier keeps every block's shared state alive until rank 0 has read
// it. All of it is templates: the sm_90-only PTX exists only in kernels that
// instantiate it (cluster twins, whose spec requires sm_90).
// Every thread of every block of the cluster: release this block's shared
// stores, acquire every other block's. (A template, as the rest: no sm_90 PTX
// in kernels that do not call it.)
template <int = 0> __device__ __forceinline__ void rj_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Every thread of every block of the cluster, no memory order: only that
// every block has come this far (a release would wait for the block's global
// stores to drain first).
template <int = 0> __device__ __forceinline__ void rj_cluster_arrived() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
// This block's rank in its cluster, and the address of a shared variable
// (local: this block's) in block `rank`'s shared memory.
template <int = 0> __device__ __forceinline__ rj_u32 rj_cluster_rank() {
  rj_u32 rank;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
template <int = 0> __device__ __forceinline__ rj_u32 rj_map_rank(rj_u32 local, rj_u32 rank) {
  rj_u32 remote;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
template <class S, int kWords = sizeof(S) / 4>
__device__ __forceinline__ S rj_ld_cluster_state(const S* local, rj_u32 rank) {
  const rj_u32 remote = rj_map_rank<>((rj_u32)__cvta_generic_to_shared(local), rank);
  S s;
  rj_u32* w = reinterpret_cast<rj_u32*>(&s);
#pragma unroll
  for (int k = 0; k < kWords; ++k) asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(w[k]) : "r"(remote + 4 * k) : "memory");
  return s;
}
template <int kCluster, class Op>
__device__ __forceinline__ typename Op::S rj_cluster_reduce(const Op& op, typename Op::S s) {
  static_assert(kCluster >= 1 && kCluster <= 32 && (kCluster & (kCluster - 1)) == 0, "a cluster is a power of two <= 32 blocks");
  typedef typename Op::S S;
  __shared__ S mine;
  if (threadIdx.x == 0) mine = s;
  rj_cluster_sync<>();
  if (rj_cluster_rank<>() == 0 && threadIdx.x < 32) {
    const rj_u32 lane = threadIdx.x;
    S t = rj_ld_cluster_state(&mine, lane % kCluster);
    s = rj_group_reduce<kCluster>(op, t);
  }
  rj_cluster_sync<>();
  return s;
}
