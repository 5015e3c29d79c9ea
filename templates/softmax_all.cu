// ---- {{ name }} ----
{%- if stage == "stats" %}
// softmax_all (issue 11), stats stage: the (max, sum e^(s x - max)) state of a whole
// {{ input }} array of n elements, s the scale. Each thread feeds a fixed, strided share
// (packs of {{ pack }}, {{ unroll }} in flight), the block reduces, and with more than one block
// each writes a partial; the last block to arrive merges the partials in block order
// and stores the state (two f32: max, sum) to stats. No float atomics: the same grid
// gives the same bits every run.
namespace {{ name }}_impl {
typedef rj_red_lse_scaled<rj_acc_f32> Op;
typedef Op::S S;
typedef rj_dtype_{{ input }} T;
const int kThreads = {{ threads }};
const int kUnroll = {{ unroll }};
const int kPack = {{ pack }};
}  // namespace {{ name }}_impl

extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    const void* __restrict__ x_ptr, void* __restrict__ stats_ptr, void* __restrict__ counters_ptr,
    void* __restrict__ partials_ptr, rj_u64 n, float scale) {
  using namespace {{ name }}_impl;
  Op op;
  op.scale = scale;
  const rj_u64 x = rj_cvta_global(x_ptr), stats = rj_cvta_global(stats_ptr);
  const rj_u64 lanes = (rj_u64)gridDim.x * kThreads;
  S acc = rj_feed_range<Op, T, 1, kUnroll, kPack>(op, op.identity(), x, 0, 0, n, (rj_u64)blockIdx.x * kThreads + threadIdx.x, lanes);
  acc = rj_block_reduce<kThreads>(op, acc);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) rj_st_state(stats, acc);
    return;
  }
  const rj_u64 partials = rj_cvta_global(partials_ptr);
  if (!rj_arrive_last(rj_cvta_global(counters_ptr), gridDim.x, partials + (rj_u64)blockIdx.x * sizeof(S), acc, threadIdx.x == 0)) return;
  const S total = rj_merge_partials<kThreads>(op, partials, gridDim.x);
  if (threadIdx.x == 0) rj_st_state(stats, total);
}
{%- else %}
// softmax_all (issue 11), normalise stage: {% if log %}log-softmax (s x - max) - ln sum{% else %}softmax e^(s x - max) / sum{% endif %} of every
// element of a whole {{ input }} array into {{ output }}, from the stats stage's state read from
// device memory (so the two launches need no host round trip). Elements before both
// buffers reach a common 16-byte boundary go one per thread, then vectors of {{ vec }}
// elements (16-byte loads and stores, {{ vec_unroll }} vectors in flight per thread, grid
// strides), then the tail one per thread. Plain loads (not .nc): y may be x itself
// (in place), each element read and then written by the same thread.
namespace {{ name }}_impl {
typedef rj_dtype_{{ input }} TI;
typedef rj_dtype_{{ output }} TO;
typedef rj_softmax_all_map<{% if log %}true{% else %}false{% endif %}> Map;
const int kThreads = {{ threads }};
const int kVec = {{ vec }};
const int kUnroll = {{ vec_unroll }};
}  // namespace {{ name }}_impl

extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    const void* x_ptr, void* y_ptr, const void* __restrict__ stats_ptr, rj_u64 n, float scale) {
  using namespace {{ name }}_impl;
  const rj_u64 x = rj_cvta_global(x_ptr), y = rj_cvta_global(y_ptr);
  const Map f(rj_ld_state<rj_md>(rj_cvta_global(stats_ptr)));
  const rj_u64 lane = (rj_u64)blockIdx.x * kThreads + threadIdx.x;
  const rj_u64 lanes = (rj_u64)gridDim.x * kThreads;
  const rj_u64 head = rj_vec_head<TI, TO, kVec>(x, y, n);
  for (rj_u64 i = lane; i < head; i += lanes) rj_st1<TO>(y, i, f(rj_mul_rn(rj_ld1<TI, rj_load_plain>(x, i), scale)));
  const rj_u64 vecs = (n - head) / kVec;
  rj_u64 v = lane;
  for (; v + (kUnroll - 1) * lanes < vecs; v += kUnroll * lanes) {
    float e[kUnroll][kVec];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) rj_ld_vec<TI, rj_load_plain, kVec>(x, head + (v + u * lanes) * kVec, e[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) e[u][k] = f(rj_mul_rn(e[u][k], scale));
      rj_st_vec<TO, kVec>(y, head + (v + u * lanes) * kVec, e[u]);
    }
  }
  for (; v < vecs; v += lanes) {
    float e[kVec];
    rj_ld_vec<TI, rj_load_plain, kVec>(x, head + v * kVec, e);
#pragma unroll
    for (int k = 0; k < kVec; ++k) e[k] = f(rj_mul_rn(e[k], scale));
    rj_st_vec<TO, kVec>(y, head + v * kVec, e);
  }
  for (rj_u64 i = head + vecs * kVec + lane; i < n; i += lanes) rj_st1<TO>(y, i, f(rj_mul_rn(rj_ld1<TI, rj_load_plain>(x, i), scale)));
}
{%- endif %}
