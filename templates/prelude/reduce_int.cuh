// ---- redjit prelude: exact integer reductions --------------------------------
// The i64 accumulator of integer inputs (i8): sum, mean, sum of squares, dot and
// the variances, exact. Values reach a functor as f32 (the dtype file widens
// them; f32 holds every i8 and every product of two exactly) and go back to
// int without loss. A thread's group of N elements (its packs in flight, or
// one column's rows in flight) is summed in 32 bits, |sum| <= N 2^14 < 2^31,
// and each group sum is added to the 64-bit state; states merge across lanes,
// warps, blocks and splits in 64 bits (|sum| <= n 2^14 < 2^63 for any n below
// 2^49). Integer adds are associative: every grid gives the same bits.
// Results: sum, sum of squares, dot are the exact i64; mean is the exact sum
// over n in f64, rounded once to f32; the variances are n M2 = n sum(x^2) -
// sum(x)^2 (an exact integer, formed in f64 with error-free products) over n^2
// or n (n - 1), rounded to f32. Every f64 step is an explicit .rn instruction,
// so the CPU twin gets the same bits.
struct rj_acc_i64 {};

// An f32 holding an integer of magnitude below 2^24, converted exactly.
__device__ __forceinline__ int rj_f32_to_int(float v) { return (int)v; }

__device__ __forceinline__ double rj_mul_rn_f64(double a, double b) {
  double r;
  asm("mul.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
  return r;
}
__device__ __forceinline__ double rj_add_rn_f64(double a, double b) {
  double r;
  asm("add.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
  return r;
}
__device__ __forceinline__ double rj_fma_rn_f64(double a, double b, double c) {
  double r;
  asm("fma.rn.f64 %0, %1, %2, %3;" : "=d"(r) : "d"(a), "d"(b), "d"(c));
  return r;
}
__device__ __forceinline__ double rj_div_rn_f64(double a, double b) {
  double r;
  asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));
  return r;
}
__device__ __forceinline__ float rj_f64_to_f32_rn(double a) {
  float r;
  asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(a));
  return r;
}

// The 64-bit sum state is a struct, not a bare rj_i64: reduce.cuh's shuffles
// find rj_shfl_state by argument-dependent lookup, which a fundamental type
// would not get (the float overload would be taken, silently).
struct rj_isum {
  rj_i64 v;
};
template <class A> struct rj_red_isum {
  typedef rj_isum S;
  typedef rj_i64 R;
  __device__ __forceinline__ S identity() const { return rj_isum{0}; }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const { return rj_isum{acc.v + rj_f32_to_int(v)}; }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
    static_assert(N <= (1 << 16), "a group's 32-bit sum of |v| <= 2^14 must not overflow");
    int t = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) t += rj_f32_to_int(v[k]);
    return rj_isum{acc.v + t};
  }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_isum{a.v + b.v}; }
  __device__ __forceinline__ R finalize(S acc, rj_u64) const { return acc.v; }
};
// x * x and x * y of i8 values are exact in f32 (|p| <= 2^14).
template <class A> struct rj_red_isumsq : rj_red_isum<A> {
  __device__ __forceinline__ float value(float x) const { return x * x; }
};
template <class A> struct rj_red_idot : rj_red_isum<A> {
  __device__ __forceinline__ float value(float x, float y) const { return x * y; }
};
template <class A> struct rj_red_imean : rj_red_isum<A> {
  typedef float R;
  __device__ __forceinline__ R finalize(rj_isum acc, rj_u64 n) const {
    return rj_f64_to_f32_rn(rj_div_rn_f64((double)acc.v, (double)n));
  }
};

// Variance: the exact sum and sum of squares.
struct rj_isq {
  rj_i64 s, q;
};
template <class A> struct rj_red_ivar {
  typedef rj_isq S;
  typedef float R;
  __device__ __forceinline__ S identity() const { return rj_isq{0, 0}; }
  __device__ __forceinline__ float value(float x) const { return x; }
  __device__ __forceinline__ S feed(S acc, float v, rj_u64) const {
    const int x = rj_f32_to_int(v);
    return rj_isq{acc.s + x, acc.q + x * x};
  }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I) const {
    static_assert(N <= (1 << 16), "a group's 32-bit sums of |v| <= 2^7, v^2 <= 2^14 must not overflow");
    int s = 0, q = 0;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int x = rj_f32_to_int(v[k]);
      s += x;
      q += x * x;
    }
    return rj_isq{acc.s + s, acc.q + q};
  }
  __device__ __forceinline__ S merge(S a, S b) const { return rj_isq{a.s + b.s, a.q + b.q}; }
  // n M2 = n q - s^2: both products exact as f64 pairs (product, FMA residual;
  // n, q and s are exact in f64 below 2^53), so the difference is accurate to
  // the last bits even when it cancels.
  static __device__ __forceinline__ double n_m2(const S& acc, double n) {
    const double s = (double)acc.s, q = (double)acc.q;
    const double p = rj_mul_rn_f64(n, q), ep = rj_fma_rn_f64(n, q, -p);
    const double r = rj_mul_rn_f64(s, s), er = rj_fma_rn_f64(s, s, -r);
    return rj_add_rn_f64(rj_add_rn_f64(p, -r), rj_add_rn_f64(ep, -er));
  }
};
template <class A> struct rj_red_ivarpop : rj_red_ivar<A> {
  __device__ __forceinline__ float finalize(rj_isq acc, rj_u64 n) const {
    const double dn = (double)n;
    return rj_f64_to_f32_rn(rj_div_rn_f64(rj_div_rn_f64(rj_red_ivar<A>::n_m2(acc, dn), dn), dn));
  }
};
template <class A> struct rj_red_ivarsamp : rj_red_ivar<A> {
  // n = 1: 0 / 0 = NaN, as PyTorch's var with correction 1.
  __device__ __forceinline__ float finalize(rj_isq acc, rj_u64 n) const {
    const double dn = (double)n;
    return rj_f64_to_f32_rn(rj_div_rn_f64(rj_div_rn_f64(rj_red_ivar<A>::n_m2(acc, dn), dn), (double)(n - 1)));
  }
};

// ---- state shuffles of the integer states (xor butterfly) ---------------------
__device__ __forceinline__ rj_i64 rj_shfl_i64(rj_i64 s, int m) {
  const rj_u64 u = (rj_u64)s;
  const rj_u32 lo = rj_shfl_xor_u32((rj_u32)u, m), hi = rj_shfl_xor_u32((rj_u32)(u >> 32), m);
  return (rj_i64)(((rj_u64)hi << 32) | lo);
}
__device__ __forceinline__ rj_isum rj_shfl_state(const rj_isum& s, int m) { return rj_isum{rj_shfl_i64(s.v, m)}; }
__device__ __forceinline__ rj_isq rj_shfl_state(const rj_isq& s, int m) { return rj_isq{rj_shfl_i64(s.s, m), rj_shfl_i64(s.q, m)}; }
