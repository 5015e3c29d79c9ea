// ---- {{ name }} ----
// All-reduce + residual + RMS norm (issue 60): {{ world }} ranks, {{ dtype }} rows of whole 16-byte packs.
// Start barrier; block b owns rows b, b + grid, ... on every rank; a thread holds
// {{ norm_packs }} pack(s) of its row and every rank's packs of them. For each row:
//   a = sum over ranks in rank order 0..{{ world - 1 }} in f32, rounded to {{ dtype }} (the
//       plain all-reduce's output, bit for bit),
//   h = a + residual in f32, rounded to {{ dtype }}, stored over the residual,
//   y = h * rstd * w, rstd = 1 / sqrt(sum(h^2) / cols + eps) (the norm family's
//       RMS norm + residual on the same h), each step rounded;
{%- if fp8 == "qd" %}
//   y stored as e4m3(y / s), s = max(max|y| / 448, 1 / (448 x 512)) written to
//       scale[row];
{%- elif fp8 == "qs" %}
//   y stored as e4m3(y / s), s the one given scale;
{%- else %}
//   y stored as {{ dtype }};
{%- endif %}
// then the end barrier (no rank rewrites its input while a peer still reads it).
// Every rank runs the same sums in the same order: every rank's residual, y
// (and scales) are the same bits.
namespace {{ name }}_impl {
typedef rj_dtype_{{ dtype }} T;
typedef {{ op_functor }} Op;
static const int kRanks = {{ world }};
static const int kElts = {{ pack_elts }};
static const int kThreads = {{ threads }};
static const int kPacks = {{ norm_packs }};
// Groups of 4 values a thread holds (rj_fp8_scale_row's row layout).
static const int kGroups = kPacks * kElts / 4;

// Which of a thread's groups lie in the row (rj_fp8_scale_row asks).
struct Cols {
  rj_u64 row_packs;
  __device__ __forceinline__ bool ok(int g, int) const {
    return threadIdx.x + (rj_u64)(g / (kElts / 4)) * kThreads < row_packs;
  }
};
// The whole block's reduction, every thread gets it.
struct Red {
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    return rj_block_reduce<kThreads>(f, s);
  }
};
}  // namespace {{ name }}_impl

// Launched with exactly {{ threads }} threads per block ({{ norm_min_blocks }} an SM: a smaller block
// puts more rows in flight), the same grid on every rank, at most kArMaxBlocks. The input table is read from device memory as the one-shot
// kernel's (a graph captured before the peers' input addresses are known reads
// the slot the communicator fills after capture). residual, weight and out are
// this rank's, 16-byte aligned (the launcher checks); scale_ptr is rows f32 (qd),
// one f32 (qs) or unused.
extern "C" __global__ void __launch_bounds__({{ threads }}, {{ norm_min_blocks }}) {{ name }}(
    const rj_ar_ptrs* __restrict__ in_table, rj_ar_ptrs sig, void* residual_ptr, const void* weight_ptr,
    void* out_ptr, float* scale_ptr, rj_u32 rank, rj_u64 rows, rj_u64 cols, float eps, rj_u64 timeout_ns,
    rj_u32* error_ptr) {
  using namespace {{ name }}_impl;
  const rj_ar_ptrs in = *in_table;
  const Op op = {0.0f};
  const rj_u64 residual = rj_cvta_global(residual_ptr);
  const rj_u64 weight = rj_cvta_global(weight_ptr);
  const rj_u64 out = rj_cvta_global(out_ptr);
  const rj_u64 error = rj_cvta_global(error_ptr);
{%- if fp8 %}
  const rj_u64 scale = rj_cvta_global(scale_ptr);
{%- else %}
  (void)scale_ptr;
{%- endif %}
  const rj_u64 row_packs = cols / kElts;
  const Cols c = {row_packs};

  if (!rj_ar_barrier<kRanks>(sig, rank, timeout_ns, error, kArStart)) return;
  for (rj_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
    const rj_u64 first = row * row_packs;
    // Every load of the row's packs (every rank's, the residual's and the
    // weight's) issued before the first add.
    rj_b128 v[kPacks][kRanks], r[kPacks], w[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const rj_u64 j = threadIdx.x + (rj_u64)k * kThreads;
      if (j < row_packs) {
#pragma unroll
        for (int q = 0; q < kRanks; ++q) v[k][q] = rj_load_plain::b128(in.p[q] + (first + j) * 16u);
        r[k] = rj_load_plain::b128(residual + (first + j) * 16u);
        w[k] = rj_load_nc::b128(weight + j * 16u);
      }
    }
    float y[kGroups][4];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const rj_u64 j = threadIdx.x + (rj_u64)k * kThreads;
      float h[kElts];
      if (j < row_packs) {
        float acc[kElts];
        rj_ar_unpack16<T>(v[k][0], acc);
#pragma unroll
        for (int e = 0; e < kElts; ++e) acc[e] = op.pre(acc[e]);
#pragma unroll
        for (int q = 1; q < kRanks; ++q) {
          float x[kElts];
          rj_ar_unpack16<T>(v[k][q], x);
#pragma unroll
          for (int e = 0; e < kElts; ++e) acc[e] = op.apply(acc[e], op.pre(x[e]));
        }
        float a[kElts], res[kElts];
#pragma unroll
        for (int e = 0; e < kElts; ++e) acc[e] = op.post(acc[e]);
        rj_ar_unpack16<T>(rj_ar_pack16<T>(acc), a);
        rj_ar_unpack16<T>(r[k], res);
#pragma unroll
        for (int e = 0; e < kElts; ++e) h[e] = rj_add_rn(a[e], res[e]);
        const rj_b128 packed = rj_ar_pack16<T>(h);
        rj_st_b128(residual + (first + j) * 16u, packed);
        rj_ar_unpack16<T>(packed, h);
#pragma unroll
        for (int e = 0; e < kElts; ++e) ss += rj_mul_rn(h[e], h[e]);
      } else {
#pragma unroll
        for (int e = 0; e < kElts; ++e) h[e] = 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kElts; ++e) y[k * (kElts / 4) + e / 4][e % 4] = h[e];
    }
    ss = Red()(rj_red_sum<rj_acc_f32>(), ss);
    const float rstd = rj_rsqrt_rn(rj_div_rn(ss, (float)cols) + eps);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      float wv[kElts];
      rj_ar_unpack16<T>(w[k], wv);
#pragma unroll
      for (int e = 0; e < kElts; ++e) {
        float& o = y[k * (kElts / 4) + e / 4][e % 4];
        o = rj_mul_rn(rj_mul_rn(o, rstd), wv[e]);
      }
    }
{%- if fp8 %}
    rj_fp8_scale_row<{% if fp8 == "qd" %}true{% else %}false{% endif %}>(y, c, Red(), threadIdx.x == 0, scale, row);
{%- else %}
    (void)c;
{%- endif %}
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const rj_u64 j = threadIdx.x + (rj_u64)k * kThreads;
      if (j >= row_packs) continue;
{%- if fp8 %}
      // 8 e4m3 values: one 8-byte store.
      rj_u32 lo[1], hi[1];
      rj_dtype_e4m3_sat::pack4(y[k * 2], lo);
      rj_dtype_e4m3_sat::pack4(y[k * 2 + 1], hi);
      rj_st_b64(out + (first + j) * kElts, rj_b64{lo[0], hi[0]});
{%- else %}
      float o[kElts];
#pragma unroll
      for (int e = 0; e < kElts; ++e) o[e] = y[k * (kElts / 4) + e / 4][e % 4];
      rj_st_b128(out + (first + j) * 16u, rj_ar_pack16<T>(o));
{%- endif %}
    }
  }
  rj_ar_barrier<kRanks>(sig, rank, timeout_ns, error, kArEnd);
}
