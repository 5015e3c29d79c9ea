// ---- redjit prelude: softmax_all ---------------------------------------------
// Softmax and log-softmax over a whole array, two kernels a call (issue 11):
//   stats      the array's rj_red_lse state (max m, sum d of e^(s x - m)) through
//              reduce.cuh's full-array walk (rj_feed_range, rj_block_reduce, the
//              last-block finish), every element entering as s x rounded to f32;
//              the state is stored whole (two f32), never folded into m + ln d,
//              whose ulp at |m| ~ 1e4 would cost 5e-4 relative in every y.
//   normalize  each element from that state, read from device memory:
//              softmax e^(s x - m) * (1 / d), log-softmax (s x - m) - ln d, the
//              row softmax's arithmetic (norm.cuh) to the rounding.
// Special values as the row softmax: NaN or +Inf anywhere, or only -Inf, gives NaN
// everywhere; -Inf elements of any other array give 0 (log-softmax: -Inf).

// rj_red_lse whose elements enter scaled: value(x) = s x, one rounding (no FMA
// with the subtraction of the max). feed_n sums a group's exponentials apart and
// adds the group's sum to the held one, so a thread's chain of rounded adds is
// its groups plus one group, not its elements (2^28 elements on 1056 blocks: 78
// adds, not 1000); feed, merge and the special values are rj_red_lse's.
template <class A> struct rj_red_lse_scaled : rj_red_lse<A> {
  typedef rj_md S;
  float scale;
  __device__ __forceinline__ float value(float x) const { return rj_mul_rn(x, scale); }
  template <int N, class I> __device__ __forceinline__ S feed_n(S acc, const float (&v)[N], I index) const {
    float mg = v[0];
#pragma unroll
    for (int k = 1; k < N; ++k) mg = rj_max_nan(mg, v[k]);
    if (mg - mg == 0.0f && (acc.m - acc.m == 0.0f || acc.m == rj_neg_inf())) {
      const float m = mg > acc.m ? mg : acc.m;
      float g = 0.0f;
#pragma unroll
      for (int k = 0; k < N; ++k) g += rj_exp(v[k] - m);
      return rj_md{m, acc.d * rj_exp(acc.m - m) + g};
    }
#pragma unroll
    for (int k = 0; k < N; ++k) acc = this->feed(acc, v[k], index(k));
    return acc;
  }
};

// The normalise stage's per-element map, built once per thread from the state.
template <bool kLog> struct rj_softmax_all_map {
  float m;  // the array's max of s x
  float k;  // softmax: 1 / d; log-softmax: ln d
  __device__ __forceinline__ explicit rj_softmax_all_map(rj_md s) {
    m = s.m;
    // NaN or +Inf in the array: NaN everywhere (rj_red_lse kept d = 1 for them).
    // Only -Inf: m = -Inf, d = 0, and -Inf - -Inf makes every element NaN.
    const float d = (m == -rj_neg_inf() || m != m) ? rj_bits_as_f32(0x7fffffffu) : s.d;
    k = kLog ? rj_log(d) : rj_div_rn(1.0f, d);
  }
  // xs = s x, rounded to f32 as the stats stage fed it.
  __device__ __forceinline__ float operator()(float xs) const {
    return kLog ? (xs - m) - k : rj_mul_rn(rj_exp(xs - m), k);
  }
};

// 16 / T::kBytes elements narrowed into one 16-byte vector (the inverse of
// reduce.cuh's rj_unpack16).
template <class T> __device__ __forceinline__ void rj_pack16(const float (&v)[16 / T::kBytes], rj_u32 (&w)[4]) {
#pragma unroll
  for (int g = 0; g < 4 / T::kWords; ++g) {
    float q[4];
    rj_u32 part[T::kWords];
#pragma unroll
    for (int e = 0; e < 4; ++e) q[e] = v[g * 4 + e];
    T::pack4(q, part);
#pragma unroll
    for (int k = 0; k < T::kWords; ++k) w[g * T::kWords + k] = part[k];
  }
}

// kVec adjacent elements from element i of a (16-byte aligned there): one or two
// 16-byte loads.
template <class T, class L, int kVec> __device__ __forceinline__ void rj_ld_vec(rj_u64 a, rj_u64 i, float (&v)[kVec]) {
  const int kPer = 16 / T::kBytes;
#pragma unroll
  for (int c = 0; c < kVec / kPer; ++c) {
    rj_u32 w[4];
    float part[kPer];
    rj_ld_words<L>(a + (i + c * kPer) * T::kBytes, w);
    rj_unpack16<T>(w, part);
#pragma unroll
    for (int e = 0; e < kPer; ++e) v[c * kPer + e] = part[e];
  }
}
template <class T, int kVec> __device__ __forceinline__ void rj_st_vec(rj_u64 a, rj_u64 i, const float (&v)[kVec]) {
  const int kPer = 16 / T::kBytes;
#pragma unroll
  for (int c = 0; c < kVec / kPer; ++c) {
    float part[kPer];
    rj_u32 w[4];
#pragma unroll
    for (int e = 0; e < kPer; ++e) part[e] = v[c * kPer + e];
    rj_pack16<T>(part, w);
    rj_st_words(a + (i + c * kPer) * T::kBytes, w);
  }
}

// Elements before both buffers sit on a 16-byte boundary at the same element: the
// first h < kVec with x + h TI::kBytes and y + h TO::kBytes both 16-byte aligned,
// or n (no such h: the whole array goes element by element). The same for every
// thread.
template <class TI, class TO, int kVec> __device__ __forceinline__ rj_u64 rj_vec_head(rj_u64 x, rj_u64 y, rj_u64 n) {
#pragma unroll
  for (int h = 0; h < kVec; ++h)
    if ((x + (rj_u64)h * TI::kBytes) % 16 == 0 && (y + (rj_u64)h * TO::kBytes) % 16 == 0) return (rj_u64)h < n ? (rj_u64)h : n;
  return n;
}
