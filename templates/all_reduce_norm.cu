// ---- {{ name }} ----
// All-reduce + residual + RMS norm (issue 60): {{ world }} ranks, {{ dtype }} rows of whole 16-byte packs.
{%- if ll %}
// LL: every rank sends its rows as flagged lines into its peers' buffers (no barrier);
{%- elif push %}
// Push: every rank stores its rows into its peers' buffers and flags each row (no barrier);
{%- elif two_stage %}
// Two-stage: start barrier; rank r sums slice r of the rows (every rank's, read in place)
// into its scratch; middle barrier; every rank reads each row's sum from its owner's scratch;
{%- else %}
// One-shot: start barrier; every rank reads every rank's rows in place;
{%- endif %}
{%- if cluster > 1 %}
// cluster c of {{ cluster }} blocks owns rows c, c + clusters, ... on every rank, its block k
// chunk k of each row's packs in {{ cluster }} parts; a thread holds {{ norm_packs }} pack(s) of its
// chunk and every rank's packs of them. For each row:
{%- else %}
// block b owns rows b, b + grid, ... on every rank; a thread holds
// {{ norm_packs }} pack(s) of its row and every rank's packs of them. For each row:
{%- endif %}
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
{%- if two_stage %}
// No end barrier: x is last read before the middle barrier, and the scratch has
// two sets, by this rank's fused call count: a rank writes a set again two
// fused calls later, after the call between met every peer at a barrier, so
// every peer had ended the call that read it.
{%- elif not ll and not push %}
// then the end barrier (no rank rewrites its input while a peer still reads it).
{%- endif %}
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
{%- if two_stage %}
// Rows whose loads a block asks for at once: of its slice's sums (every
// rank's packs) and of the rows it normalises (each row's sum and residual).
static const int kSumRows = {{ sum_rows }};
static const int kNormRows = {{ norm_rows }};
{%- endif %}
// Reductions a row takes: its sum of squares{% if fp8 == "qd" %}, then its max |y| for the scale{% endif %}.
static const rj_u32 kReductions = {% if fp8 == "qd" %}2{% else %}1{% endif %};

// Which of a thread's groups lie in its packs [lo, hi) of the row
// (rj_fp8_scale_row asks).
struct Cols {
  rj_u64 lo, hi;
  __device__ __forceinline__ bool ok(int g, int) const {
    return lo + threadIdx.x + (rj_u64)(g / (kElts / 4)) * kThreads < hi;
  }
};
{%- if cluster > 1 %}
// The row's reduction over its cluster: each block's, then the blocks'
// through distributed shared memory (rj_red_cluster); `row` counts the
// block's reductions before this one.
typedef rj_red_cluster<kThreads, {{ cluster }}> Red;
{%- else %}
// The whole block's reduction, every thread gets it (`row`: the cluster
// reducer's count, unused here).
struct Red {
  rj_u32 row;
  template <class F> __device__ __forceinline__ typename F::S operator()(const F& f, typename F::S s) const {
    return rj_block_reduce<kThreads>(f, s);
  }
};
{%- endif %}

// 1 / sqrt(v) from the MUFU (2^-22.9, inside the CPU twin's tolerance; with
// reduce.cuh's rj_rcp_approx): one block a row waits on it before any output.
// (The norm family keeps the rounded steps: with the MUFU's, ptxas spilled
// kernels of its compile grid under their launch bounds.)
__device__ __forceinline__ float rj_rsqrt_approx(float v) {
  float r;
  asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

// One pack of every source, summed in f32 in rank order 0..kSrc - 1 (the
// all-reduce's sum, before its rounding to T).
template <int kSrc>
__device__ __forceinline__ void sum_pack(const rj_b128 (&v)[kSrc], float (&acc)[kElts]) {
  const Op op = {0.0f};
  rj_ar_unpack16<T>(v[0], acc);
#pragma unroll
  for (int e = 0; e < kElts; ++e) acc[e] = op.pre(acc[e]);
#pragma unroll
  for (int q = 1; q < kSrc; ++q) {
    float x[kElts];
    rj_ar_unpack16<T>(v[q], x);
#pragma unroll
    for (int e = 0; e < kElts; ++e) acc[e] = op.apply(acc[e], op.pre(x[e]));
  }
#pragma unroll
  for (int e = 0; e < kElts; ++e) acc[e] = op.post(acc[e]);
}

// Row `row`'s packs [lo, hi) from their packs loaded (v: every rank's, or
// with kSrc = 1 their sum; r: the residual's, w: the weight's; only those in
// [lo, hi)): the sum over ranks, h stored over the residual, the norm, y (and
// its scale, by the leader) stored. Every thread of the row's blocks calls it
// (it reduces over them), `i` the row's ordinal among the block's.
template <int kSrc>
__device__ __forceinline__ void norm_row(const rj_b128 (&v)[kPacks][kSrc], const rj_b128 (&r)[kPacks],
                                         const rj_b128 (&w)[kPacks], rj_u64 row, rj_u64 lo, rj_u64 hi,
                                         rj_u64 row_packs, rj_u64 cols, float eps, rj_u64 residual, rj_u64 out,
                                         rj_u64 scale, rj_u32 i, bool leader) {
  const Cols c = {lo, hi};
  const rj_u64 first = row * row_packs;
  float y[kGroups][4];
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const rj_u64 j = lo + threadIdx.x + (rj_u64)k * kThreads;
    float h[kElts];
    if (j < hi) {
      float acc[kElts];
      sum_pack(v[k], acc);
      float a[kElts], res[kElts];
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
  ss = Red{kReductions * i}(rj_red_sum<rj_acc_f32>(), ss);
  // The MUFU's forms: the rstd and the FP8 scale are on the block's critical
  // path (rj_rsqrt_approx).
  const float rstd = rj_rsqrt_approx(rj_mul_rn(ss, rj_rcp_approx((float)cols)) + eps);
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
  rj_fp8_scale_row<{% if fp8 == "qd" %}true{% else %}false{% endif %}, kGroups, Cols, Red, true>(y, c, Red{kReductions * i + 1u}, leader, scale, row);
{%- else %}
  (void)c;
  (void)scale;
  (void)leader;
{%- endif %}
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const rj_u64 j = lo + threadIdx.x + (rj_u64)k * kThreads;
    if (j >= hi) continue;
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

// The weight's packs, the same in every row.
__device__ __forceinline__ void load_weight(rj_u64 weight, rj_u64 row_packs, rj_b128 (&w)[kPacks]) {
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const rj_u64 j = threadIdx.x + (rj_u64)k * kThreads;
    if (j < row_packs) w[k] = rj_load_nc::b128(weight + j * 16u);
  }
}

// A block's rows in the order b, b + grid, ...
struct InTurn {
  __device__ __forceinline__ rj_u64 operator()(rj_u64 row) const { return row; }
};

// Block b's rows b, b + grid, ... (each as `order` maps it) in batches of kD,
// the next batch's loads (`load(row, v, r)`: every rank's packs, or their
// sum, and the residual's; false where a peer's never came) asked for before
// this batch's reductions and stores: a block's rows one after another would
// each wait a whole round trip. False where a load failed.
template <int kSrc, int kD, class Load, class Order = InTurn>
__device__ __forceinline__ bool norm_rows_ahead(const Load& load, const rj_b128 (&w)[kPacks], rj_u64 rows,
                                                rj_u64 row_packs, rj_u64 cols, float eps, rj_u64 residual, rj_u64 out,
                                                rj_u64 scale, const Order& order = Order()) {
  const rj_u64 step = (rj_u64)gridDim.x * kD;
  rj_b128 v[kD][kPacks][kSrc], r[kD][kPacks];
#pragma unroll
  for (int d = 0; d < kD; ++d) {
    const rj_u64 row = blockIdx.x + (rj_u64)d * gridDim.x;
    if (row < rows && !load(order(row), v[d], r[d])) return false;
  }
  for (rj_u64 base = blockIdx.x; base < rows; base += step) {
    rj_b128 nv[kD][kPacks][kSrc], nr[kD][kPacks];
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const rj_u64 next = base + step + (rj_u64)d * gridDim.x;
      if (next < rows && !load(order(next), nv[d], nr[d])) return false;
    }
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      const rj_u64 row = base + (rj_u64)d * gridDim.x;
      if (row < rows)
        norm_row(v[d], r[d], w, order(row), 0u, row_packs, row_packs, cols, eps, residual, out, scale, 0u,
                 threadIdx.x == 0);
    }
#pragma unroll
    for (int d = 0; d < kD; ++d) {
#pragma unroll
      for (int k = 0; k < kPacks; ++k) {
        r[d][k] = nr[d][k];
#pragma unroll
        for (int q = 0; q < kSrc; ++q) v[d][k][q] = nv[d][k][q];
      }
    }
  }
  return true;
}
}  // namespace {{ name }}_impl

{% if ll or push -%}
// Launched with exactly {{ threads }} threads per block ({{ norm_min_blocks }} an SM: a smaller block
// puts more rows in flight), the same grid on every rank, every block resident
// with every peer's (they wait on each other's {% if ll %}lines{% else %}row flags{% endif %}), at most kArMaxBlocks.
// `in_ptr` is this rank's x, read in place (16-byte aligned; the launcher
// checks); {% if ll %}ll{% else %}push{% endif %}.p[q] is rank q's fused {% if ll %}LL{% else %}push{% endif %} buffer: two sets of kRanks regions of
{%- if ll %}
// `window` bytes (two lines per pack), set s region r written by rank r only.
{%- else %}
// `window` bytes, set s region r written by rank r only: x's packs from the
// region's start, and row r's flag at window - 4 (r + 1), the call's once the
// row's packs are there.
{%- endif %}
// The call count k, the same in every block, picks the set; a rank writes set
// s again two calls later, after the call between needed every peer's data,
// so each peer had ended this one. residual, weight and out are this rank's,
// 16-byte aligned; scale_ptr is rows f32 (qd), one f32 (qs) or unused.
extern "C" __global__ void {% if cluster > 1 %}__cluster_dims__({{ cluster }}, 1, 1) {% endif %}__launch_bounds__({{ threads }}, {{ norm_min_blocks }}) {{ name }}(
    const void* in_ptr, void* residual_ptr, const void* weight_ptr, void* out_ptr, float* scale_ptr,
    rj_u32* error_ptr, rj_u32 rows32, rj_u32 cols32, rj_u64 timeout_ns, rj_u64 window, float eps, rj_u32 rank,
    rj_ar_table<{{ world }}> sig, rj_ar_table<{{ world }}> {% if ll %}ll{% else %}push{% endif %}) {
  using namespace {{ name }}_impl;
  const rj_u64 rows = rows32, cols = cols32;
  const rj_u64 in = rj_cvta_global(in_ptr);
  const rj_u64 residual = rj_cvta_global(residual_ptr);
  const rj_u64 weight = rj_cvta_global(weight_ptr);
  const rj_u64 out = rj_cvta_global(out_ptr);
  const rj_u64 error = rj_cvta_global(error_ptr);
  const rj_u64 scale = rj_cvta_global(scale_ptr);
  const rj_u64 row_packs = cols / kElts;
{%- if cluster > 1 %}
  // Block k of a cluster takes chunk k of the row's packs, [lo, hi); the
  // clusters take rows in turn, and a row's blocks go through the same rows.
  const rj_u32 crank = rj_cluster_rank<>();
  const rj_u64 chunk = (row_packs + {{ cluster }} - 1) / {{ cluster }};
  const rj_u64 lo = min(crank * chunk, row_packs), hi = min(lo + chunk, row_packs);
  const rj_u64 row0 = blockIdx.x / {{ cluster }}, row_step = gridDim.x / {{ cluster }};
  const bool leader = threadIdx.x == 0 && crank == 0;
{%- else %}
  const rj_u64 lo = 0u, hi = row_packs, row0 = blockIdx.x, row_step = gridDim.x;
  const bool leader = threadIdx.x == 0;
{%- endif %}
  const rj_u64 self = rj_ar_pick<kRanks>(sig, rank);
  // k: this rank's fused call count, the same in every block (the last block
  // of the call before to arrive stored it, and that call has ended).
  const rj_u32 k = rj_load_volatile::b32(self + {{ fused_count_off }}) + 1u;
  const rj_u64 set = (rj_u64)(k & 1u) * kRanks * window;
  const rj_u64 mine = set + (rj_u64)rank * window;
  // k | 1 is never 0, the zeroed buffer's, and differs between two calls of
  // one set.
  const rj_u32 flag = k | 1u;
  for (rj_u64 row = row0; row < rows; row += row_step) {
    // The row's packs loaded before the first store goes out (the sends
    // would otherwise hold each load back behind the last).
    rj_b128 x[kPacks];
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
      if (j < hi) x[kk] = rj_load_plain::b128(in + (row * row_packs + j) * 16u);
    }
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
      if (j >= hi) continue;
#pragma unroll
      for (int q = 0; q < kRanks; ++q)
{%- if ll %}
        if (q != (int)rank) rj_ll_send(ll.p[q] + mine, row * row_packs + j, flag, x[kk]);
{%- else %}
        if (q != (int)rank) rj_st_b128(push.p[q] + mine + (row * row_packs + j) * 16u, x[kk]);
{%- endif %}
    }
  }
  // Every thread of the block has its k (the barrier takes each thread's k{% if push %}, and
  // orders the block's stores before its flags' release{% endif %}): the block's arrival
  // is counted now, off the critical path, and the last block to arrive stores
  // k at its end. No block of this call reads the count after its arrival, and
  // the next call starts after this one ends.
  (void)__syncthreads_or(k == 0u);
  rj_u32 arrival = 0u;
  if (threadIdx.x == 0) arrival = rj_atom_add_relaxed(self + {{ fused_done_off }}, 1u);
{%- if cluster > 1 %}
  // The cluster's exchange set up while the lines travel.
  Red::init();
{%- endif %}
{%- if push %}
  // Thread q releases the block's row flags to rank q: one fence, then each
  // flag a strong write (rj_fence_acq_rel_sys).
  if (threadIdx.x < (rj_u32)kRanks && threadIdx.x != rank) {
    rj_fence_acq_rel_sys();
    for (rj_u64 row = blockIdx.x; row < rows; row += gridDim.x)
      rj_st_relaxed_sys(rj_ar_pick<kRanks>(push, threadIdx.x) + mine + window - 4u * (row + 1u), flag);
  }
{%- endif %}
  const rj_u64 local = rj_ar_pick<kRanks>({% if ll %}ll{% else %}push{% endif %}, rank) + set;
{%- if push %}
  // Thread q waits for rank q's flag on a row (bounded as the barrier); the
  // block's barrier then hands its acquire on to every thread. False, the
  // same in every thread, where a peer never sent (the error word says which;
  // the host breaks the communicator).
  auto arrived = [&](rj_u64 row) {
    bool ok = true;
    if (threadIdx.x < (rj_u32)kRanks && threadIdx.x != rank) {
      const rj_u64 at = local + (rj_u64)threadIdx.x * window + window - 4u * (row + 1u);
      // A flag already there costs no timer read.
      if (rj_ld_acquire_sys(at) != flag) ok = rj_ar_wait(at, flag, timeout_ns, error, kArData, threadIdx.x);
    }
    return rj_block_all(ok);
  };
{%- endif %}
{%- if push and prefetch %}
  rj_b128 w[kPacks];
  load_weight(weight, row_packs, w);
  // A row's packs once they have arrived: every rank's (this rank's x in
  // place, the peers' from the buffer) and the residual's.
  auto load_row = [&](rj_u64 row, rj_b128 (&v)[kPacks][kRanks], rj_b128 (&r)[kPacks]) {
    if (!arrived(row)) return false;
    const rj_u64 first = row * row_packs;
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = threadIdx.x + (rj_u64)kk * kThreads;
      if (j >= row_packs) continue;
      r[kk] = rj_load_plain::b128(residual + (first + j) * 16u);
#pragma unroll
      for (int q = 0; q < kRanks; ++q)
        v[kk][q] = rj_load_plain::b128(q == (int)rank ? in + (first + j) * 16u : local + (rj_u64)q * window + (first + j) * 16u);
    }
    return true;
  };
  if (!norm_rows_ahead<kRanks, 1>(load_row, w, rows, row_packs, cols, eps, residual, out, scale)) return;
{%- else %}
{%- if cluster > 1 %}
  // Set once a peer's lines never came: the block stops waiting.
  bool failed = false;
{%- endif %}
  rj_u32 i = 0u;
  for (rj_u64 row = row0; row < rows; row += row_step, ++i) {
    const rj_u64 first = row * row_packs;
    rj_b128 v[kPacks][kRanks], r[kPacks], w[kPacks];
{%- if push or ll_batched %}
    rj_b128 own[kPacks];
{%- endif %}
{%- if ll_batched %}
    rj_b128 lo_line[kPacks][kRanks], hi_line[kPacks][kRanks];
{%- endif %}
    // Every load of the row asked for before the first wait: the residual's,
    // the weight's{% if push or ll_batched %}, this rank's x (again, from L2){% endif %}{% if ll_batched %} and every peer's two lines of
    // each pack (one round trip where they have landed, as they mostly have){% endif %}.
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
      if (j >= hi) continue;
      r[kk] = rj_load_plain::b128(residual + (first + j) * 16u);
      w[kk] = rj_load_nc::b128(weight + j * 16u);
{%- if push or ll_batched %}
      own[kk] = rj_load_plain::b128(in + (first + j) * 16u);
{%- endif %}
{%- if ll_batched %}
#pragma unroll
      for (int q = 0; q < kRanks; ++q) {
        if (q == (int)rank) continue;
        const rj_u64 a = local + (rj_u64)q * window;
        lo_line[kk][q] = rj_load_volatile::b128(a + rj_ll_line(first + j, 0));
        hi_line[kk][q] = rj_load_volatile::b128(a + rj_ll_line(first + j, 1));
      }
{%- endif %}
    }
{%- if ll %}
    bool ok = {% if cluster > 1 %}!failed{% else %}true{% endif %};
{%- endif %}
{%- if ll_batched %}
    // Lines not landed at that look are asked for again together, one round
    // trip a pass over the row's packs and peers (not one a pack and peer in
    // turn), until all have landed or the timeout has passed.
    {
      rj_u64 t0 = 0u;
      while (ok) {
        int missing = -1;
        // Each (pack, peer) of the thread's: p = pack x kRanks + peer.
#pragma unroll
        for (int p = 0; p < kPacks * kRanks; ++p) {
          const int kk = p / kRanks, q = p % kRanks;
          const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
          if (j < hi && q != (int)rank &&
              !(lo_line[kk][q].y == flag && lo_line[kk][q].w == flag && hi_line[kk][q].y == flag &&
                hi_line[kk][q].w == flag)) {
            missing = q;
            const rj_u64 a = local + (rj_u64)q * window;
            lo_line[kk][q] = rj_load_volatile::b128(a + rj_ll_line(first + j, 0));
            hi_line[kk][q] = rj_load_volatile::b128(a + rj_ll_line(first + j, 1));
          }
        }
        if (missing < 0) break;
        if (t0 == 0u) {
          t0 = rj_globaltimer();
        } else if (rj_globaltimer() - t0 > timeout_ns) {
          rj_ar_timed_out(error, kArData, (rj_u32)missing);
          ok = false;
          break;
        }
      }
    }
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk)
#pragma unroll
      for (int q = 0; q < kRanks; ++q)
        v[kk][q] = q == (int)rank ? own[kk] : rj_b128{lo_line[kk][q].x, lo_line[kk][q].z, hi_line[kk][q].x, hi_line[kk][q].z};
{%- elif ll %}
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
      if (j >= hi) continue;
#pragma unroll
      for (int q = 0; q < kRanks; ++q) {
        rj_b128 got = rj_b128{0u, 0u, 0u, 0u};
        // A peer's lines whose flags are not there yet are polled alone.
        if (q == (int)rank) {
          got = rj_load_plain::b128(in + (first + j) * 16u);
        } else if (ok) {
          ok = rj_ll_recv(local + (rj_u64)q * window, first + j, flag, timeout_ns, error, (rj_u32)q, got);
        }
        v[kk][q] = got;
      }
    }
{%- else %}
    if (!arrived(row)) return;
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = lo + threadIdx.x + (rj_u64)kk * kThreads;
      if (j >= hi) continue;
#pragma unroll
      for (int q = 0; q < kRanks; ++q)
        v[kk][q] = q == (int)rank ? own[kk] : rj_load_plain::b128(local + (rj_u64)q * window + (first + j) * 16u);
    }
{%- endif %}
{%- if ll %}
{%- if cluster > 1 %}
    // A peer that never sent: the block stops waiting (the error word says
    // which; the host breaks the communicator), and goes on through its rows'
    // exchanges, on which the cluster's other blocks wait.
    failed = !rj_block_all(ok);
{%- else %}
    // A peer that never sent: the whole block stops (the error word says
    // which; the host breaks the communicator).
    if (!rj_block_all(ok)) return;
{%- endif %}
{%- endif %}
    norm_row(v, r, w, row, lo, hi, row_packs, cols, eps, residual, out, scale, i, leader);
  }
{%- endif %}
{%- if cluster > 1 %}
  // No block leaves while a push into its shared memory may be in flight: a
  // block arrives once it has every state pushed to it, so the arrival alone
  // says so (no release of this block's stores).
  rj_cluster_arrived<>();
{%- endif %}
  if (threadIdx.x == 0 && arrival == gridDim.x - 1u) {
    rj_st_b32(self + {{ fused_done_off }}, 0u);
    rj_st_b32(self + {{ fused_count_off }}, k);
  }
}
{%- else -%}
// Launched with exactly {{ threads }} threads per block ({{ norm_min_blocks }} an SM: a smaller block
// puts more rows in flight), the same grid on every rank, at most kArMaxBlocks.
// The input table is read from device memory as the one-shot kernel's (a graph
// captured before the peers' input addresses are known reads the slot the
// communicator fills after capture). residual, weight and out are this rank's,
// 16-byte aligned (the launcher checks); scale_ptr is rows f32 (qd), one f32
// (qs) or unused.
{%- if two_stage %}
// tmp.p[q] is rank q's fused scratch: two sets of `window` bytes, each holding
// the sums of q's slice of rows (slice q is rows [q x part, (q + 1) x part),
// part = ceil(rows / {{ world }})), row after row.
{%- endif %}
extern "C" __global__ void __launch_bounds__({{ threads }}, {{ norm_min_blocks }}) {{ name }}(
    const rj_ar_ptrs* __restrict__ in_table, void* residual_ptr, const void* weight_ptr, void* out_ptr,
    float* scale_ptr, rj_u32* error_ptr, rj_u32 rows32, rj_u32 cols32, rj_u64 timeout_ns,{% if two_stage %} rj_u64 window,{% endif %}
    float eps, rj_u32 rank, rj_ar_table<{{ world }}> sig{% if two_stage %}, rj_ar_table<{{ world }}> tmp{% endif %}) {
  using namespace {{ name }}_impl;
  const rj_u64 rows = rows32, cols = cols32;
  const rj_ar_ptrs in = *in_table;
  const rj_u64 residual = rj_cvta_global(residual_ptr);
  const rj_u64 weight = rj_cvta_global(weight_ptr);
  const rj_u64 out = rj_cvta_global(out_ptr);
  const rj_u64 error = rj_cvta_global(error_ptr);
  const rj_u64 scale = rj_cvta_global(scale_ptr);
  const rj_u64 row_packs = cols / kElts;
{%- if two_stage %}
  const rj_u64 self = rj_ar_pick<kRanks>(sig, rank);
  // k: this rank's fused call count, the same in every block (the last block
  // of the call before to arrive stored it, and that call has ended); its
  // parity picks the scratch set.
  const rj_u32 k = rj_load_volatile::b32(self + {{ fused_count_off }}) + 1u;
  const rj_u64 set = (rj_u64)(k & 1u) * window;
  const rj_u64 part = (rows + kRanks - 1) / kRanks;
  const rj_u64 row_bytes = row_packs * 16u;
{%- endif %}

  if (!rj_ar_barrier<kRanks>(sig, rank, timeout_ns, error, kArStart)) return;
{%- if two_stage %}
  // Every thread read k before the barrier: the block's arrival is counted
  // now, and the last block to arrive stores k at its end.
  rj_u32 arrival = 0u;
  if (threadIdx.x == 0) arrival = rj_atom_add_relaxed(self + {{ fused_done_off }}, 1u);
  {
    // Block b sums the rows of this rank's slice that it reads in the second
    // phase (rows b, b + grid, ...): its middle barrier, with block b of each
    // peer, then orders every row it reads after that row's sum.
    const rj_u64 lo_row = min((rj_u64)rank * part, rows), hi_row = min(lo_row + part, rows);
    const rj_u64 scratch = rj_ar_pick<kRanks>(tmp, rank) + set;
    const rj_u64 grid = gridDim.x;
    const rj_u64 step = grid * kSumRows;
    for (rj_u64 base = lo_row + (blockIdx.x + grid - lo_row % grid) % grid; base < hi_row; base += step) {
      rj_b128 v[kSumRows][kPacks][kRanks];
      // Every rank's packs of the batch's kSumRows rows asked for before the
      // first add.
#pragma unroll
      for (int d = 0; d < kSumRows; ++d) {
        const rj_u64 first = (base + d * grid) * row_packs;
#pragma unroll
        for (int kk = 0; kk < kPacks; ++kk) {
          const rj_u64 j = threadIdx.x + (rj_u64)kk * kThreads;
          if (base + d * grid < hi_row && j < row_packs) {
#pragma unroll
            for (int q = 0; q < kRanks; ++q) v[d][kk][q] = rj_load_plain::b128(in.p[q] + (first + j) * 16u);
          }
        }
      }
#pragma unroll
      for (int d = 0; d < kSumRows; ++d) {
        const rj_u64 row = base + d * grid;
#pragma unroll
        for (int kk = 0; kk < kPacks; ++kk) {
          const rj_u64 j = threadIdx.x + (rj_u64)kk * kThreads;
          if (row >= hi_row || j >= row_packs) continue;
          // Rounded as the one-shot kernel's sum.
          float acc[kElts];
          sum_pack(v[d][kk], acc);
          rj_st_b128(scratch + (row - lo_row) * row_bytes + j * 16u, rj_ar_pack16<T>(acc));
        }
      }
    }
  }
  if (!rj_ar_barrier<kRanks>(sig, rank, timeout_ns, error, kArMiddle)) return;
{%- endif %}
  rj_b128 w[kPacks];
  load_weight(weight, row_packs, w);
{%- if two_stage %}
  // A row's sum from its owner's scratch, and the residual's packs.
  auto load_row = [&](rj_u64 row, rj_b128 (&v)[kPacks][1], rj_b128 (&r)[kPacks]) {
    const rj_u64 q = row / part;
    const rj_u64 from = rj_ar_pick<kRanks>(tmp, (rj_u32)q) + set + (row - q * part) * row_bytes;
    const rj_u64 first = row * row_packs;
#pragma unroll
    for (int kk = 0; kk < kPacks; ++kk) {
      const rj_u64 j = threadIdx.x + (rj_u64)kk * kThreads;
      if (j < row_packs) {
        v[kk][0] = rj_load_plain::b128(from + j * 16u);
        r[kk] = rj_load_plain::b128(residual + (first + j) * 16u);
      }
    }
    return true;
  };
  // Block b takes its rows from the owner ((b + rank) mod {{ world }})'s on, in turn: at
  // every moment the blocks read from every owner alike (in row order, every
  // block of every rank would read from rank 0 first, over one link of the
  // three).
  // The block's rows b + i grid, i < mine, taken from i = start on: row b +
  // i grid goes to b + ((i + start) mod mine) grid (no division a row).
  const rj_u64 mine = blockIdx.x < rows ? (rows - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  const rj_u64 shift = mine * ((blockIdx.x + rank) % kRanks) / kRanks * gridDim.x;
  const rj_u64 span = mine * gridDim.x, end = blockIdx.x + span;
  const auto rotated = [&](rj_u64 row) {
    const rj_u64 to = row + shift;
    return to >= end ? to - span : to;
  };
  norm_rows_ahead<1, kNormRows>(load_row, w, rows, row_packs, cols, eps, residual, out, scale, rotated);
  if (threadIdx.x == 0 && arrival == gridDim.x - 1u) {
    rj_st_b32(self + {{ fused_done_off }}, 0u);
    rj_st_b32(self + {{ fused_count_off }}, k);
  }
{%- else %}
  // Every load of a row's packs (every rank's and the residual's) issued
  // before its first add.
  auto load_row = [&](rj_u64 row, rj_b128 (&v)[kPacks][kRanks], rj_b128 (&r)[kPacks]) {
    const rj_u64 first = row * row_packs;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const rj_u64 j = threadIdx.x + (rj_u64)k * kThreads;
      if (j < row_packs) {
#pragma unroll
        for (int q = 0; q < kRanks; ++q) v[k][q] = rj_load_plain::b128(in.p[q] + (first + j) * 16u);
        r[k] = rj_load_plain::b128(residual + (first + j) * 16u);
      }
    }
    return true;
  };
{%- if prefetch %}
  norm_rows_ahead<kRanks, 1>(load_row, w, rows, row_packs, cols, eps, residual, out, scale);
{%- else %}
  rj_b128 v[kPacks][kRanks], r[kPacks];
  for (rj_u64 row = blockIdx.x; row < rows; row += gridDim.x) {
    load_row(row, v, r);
    norm_row(v, r, w, row, 0u, row_packs, row_packs, cols, eps, residual, out, scale, 0u, threadIdx.x == 0);
  }
{%- endif %}
  rj_ar_barrier<kRanks>(sig, rank, timeout_ns, error, kArEnd);
{%- endif %}
}
{%- endif %}
