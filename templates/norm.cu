// ---- {{ name }} ----
// norm (issue 11): {% if op == "softmax" %}softmax{% elif op == "logsoftmax" %}log-softmax{% elif op == "layernorm" %}layer norm{% else %}RMS norm{% endif %}{% if softmax %} ({{ algo }}) of scale * x{% endif %} over each row of a rows x cols
// matrix (leading dimension ld), {{ input }} in, {{ output }} out, math in f32; row op {{ functor }}.
{%- if residual %}
// Fused residual add: h = x + residual, rounded to {{ input }}, is written to res_out and normalised.
{%- endif %}
// Each thread holds {{ packs }} pack(s) of 4 elements of the row in registers.
{%- if general %}
// General twin: any alignment of the buffers, any ld and row length (the element
// path for what is not a whole, aligned pack).
{%- else %}
// Whole packs only: cols and ld multiples of 4, every buffer pack-aligned (the
// launcher takes the general twin, _g, otherwise).
{%- endif %}
{%- if layout == "warp" %}
// A group of {{ lanes }} lane(s) per row, {{ threads }}-thread blocks; groups take rows in
// turn over the grid (warp-uniform loop: a whole warp reaches every shuffle).
{%- elif layout == "block" %}
// A block of {{ threads }} threads per row; blocks take rows in turn over the grid.
{%- elif layout == "loop" %}
// A block of {{ threads }} threads per row, which goes over it in chunks of {{ threads }} x {{ packs }} x 4
// elements twice: the first pass merges each thread's states of its chunks
// (rj_red_running) and the block reduces them once; the second loads the
// chunks again, last first (the likeliest still in L2), and finishes them.
{%- elif cluster %}
// A cluster of {{ cluster }} {{ threads }}-thread blocks per row, each a chunk of the row in equal parts of
// at most {{ threads }} x {{ packs }} x 4 elements; clusters take rows in turn, and a row's blocks
// exchange their states through distributed shared memory (rj_red_cluster).
{%- elif prefetch %}
// Several {{ threads }}-thread blocks per row, each a chunk of {% if balanced %}the row in equal parts of at most {% endif %}{{ threads }} x {{ packs }} x 4
// elements, in cohorts of a row's blocks: a cohort takes rows in turn. Each
// block copies its chunks ({% if residual %}x and the residual{% else %}x{% endif %}) into one of three buffers in shared
// memory with cp.async, two rows ahead; it publishes its state of a row
// (rj_red_publish), then finishes the row before, whose states the cohort
// published an iteration ago (rj_red_fetch), from the same buffer.
{%- elif two_pass %}
// Several {{ threads }}-thread blocks per row, each a chunk of {% if balanced %}the row in equal parts of at most {% endif %}{{ threads }} x {{ packs }} x 4
// elements; blocks take (row, chunk) items in order from a ticket, twice over:
// the first pass publishes each chunk's state (rj_red_publish), the second
// loads the chunk again and finishes it once the row's states are in
// ({% if fetch_wide %}rj_red_fetch_wide{% else %}rj_red_fetch{% endif %}).
{%- else %}
// Several {{ threads }}-thread blocks per row, each a chunk of {% if balanced %}the row in equal parts of at most {% endif %}{{ threads }} x {{ packs }} x 4
// elements; blocks take (row, chunk) items in order from a ticket; each
// publishes its chunk's state and merges its row's once all are in
// ({% if flagged %}rj_red_split{% else %}rj_red_split_counted{% endif %}).
{%- endif %}
{%- if stages_next %}
// Prefetching: the grid is one resident wave; each block copies its next row{% if cluster %}'s chunk{% endif %}
// ({% if residual %}x and the residual{% else %}x{% endif %}) into shared memory with cp.async while it reduces and stores
// this one, so that row's loads are in flight through the reductions and stores.
{%- endif %}
namespace {{ name }}_impl {
typedef rj_dtype_{{ input }} T;
typedef {{ out_type }} TO;
{%- if held %}
// The first {{ held }} pack(s) of this thread's columns of the {% if op == "layernorm" %}weight and bias{% else %}weight{% endif %}, loaded once
// and held in registers: a cohort's block keeps its chunk in every row.
typedef rj_cols_held<T, {% if op == "layernorm" %}2{% else %}1{% endif %}, {{ held }}> Held;
{%- endif %}
typedef {{ functor }} Op;
const int kThreads = {{ threads }};
const int kLanes = {{ lanes }};
const int kPacks = {{ packs }};
const bool kWhole = {% if general %}false{% else %}true{% endif %};
// A split row's chunks: equal parts of the row (the launcher's span), or the
// layout's chunks and a remainder.
const bool kBalanced = {% if balanced %}true{% else %}false{% endif %};
// How whole packs of the row streams (x, the residual) are loaded.
typedef {{ row_load }} RowLoad;
{%- if not general %}
// A whole-pack row{% if prefetch or exact %}, addressed from the thread's base{% endif %}{% if exact %}, exactly the chunk long{% endif %}.
{%- if exact and not prefetch %}
// (A pack's address a base plus a constant: with one 64-bit address a pack,
// f32 layer norm b512x16_x spilled them, 80 bytes under ptxas 13.0.)
{%- endif %}
typedef rj_chunk<kLanes, true, false, {% if prefetch or exact %}true{% else %}false{% endif %}, {% if exact %}true{% else %}false{% endif %}{% if paired %}, 2{% endif %}> Chunk;
{%- elif prefetch %}
// A chunk of any row, before its shift (row_grid).
typedef rj_chunk<kLanes, false, true> Chunk;
{%- endif %}
{%- if second_pass %}
{%- if fetch_wide %}
// The second pass spreads a row's states over the warps, a slot a lane.
typedef rj_red_fetch_wide<kThreads> Fetch;
{%- else %}
// Slots a lane of warp 0 reads at once when it merges a row's states, and
// asks for before the block publishes its next row.
typedef rj_red_fetch<kThreads, {{ fetch_early }}, {{ fetch_ahead }}> Fetch;
{%- endif %}
{%- endif %}
{%- if prefetch %}
// Shared memory: each staged stream's slots (a pack of every thread, then the
// next pack), the row's {% if residual %}x and residual{% else %}x{% endif %}{% if staged_cols %}, then the {% if op == "layernorm" %}weight and bias{% else %}weight{% endif %}{% endif %}.
const rj_u32 kStride = kThreads * 4 * T::kBytes;
const rj_u32 kSlots = kPacks * kStride;
{%- if layout == "split" and not cluster %}
// A row's buffer: its {% if residual %}x and residual{% else %}x{% endif %} slots.
const rj_u32 kBuffer = {% if residual %}2{% else %}1{% endif %} * kSlots;
{%- endif %}
{%- if staged_cols %}
const rj_u32 kColsAt = {% if layout == "split" and not cluster %}3 * kBuffer{% elif residual %}2 * kSlots{% else %}kSlots{% endif %};
{%- endif %}
{%- endif %}

struct Args {
  rj_u64 x, res, w, b, out, res_out, mean, rstd;
  rj_u64 ld;
  float param;
{%- if fp8 %}
  rj_u64 scale;  // the FP8 output's scales (per row) or scale (given)
{%- endif %}
{%- if staged_cols %}
  rj_u32 cols;  // this thread's staged columns (shared memory)
{%- endif %}
{%- if held %}
  Held held;  // this thread's held columns (registers)
{%- endif %}
};
{%- if row_shift %}
// Row r's offset from the {% if paired %}pair{% else %}pack{% endif %} grid (shift, of x's elements) and whether every
// row stream shares it (vec): its chunks then start `shift` elements early, so
// that all but the row's first and last packs are whole, aligned accesses.
{%- if paired %}
// Paired packs: the grid is a pair's 8 elements, its 16-byte accesses'.
{%- endif %}
__device__ __forceinline__ bool row_grid(const Args& a, rj_u64 r, rj_u32& shift) {
  const rj_u64 off = r * a.ld;
  shift = (rj_u32)((a.x + off * T::kBytes) / T::kBytes % {{ grid }});
  bool vec = (a.out + off * TO::kBytes) / TO::kBytes % {{ grid }} == shift;
{%- if residual %}
  vec = vec && (a.res + off * T::kBytes) / T::kBytes % {{ grid }} == shift && (a.res_out + off * T::kBytes) / T::kBytes % {{ grid }} == shift;
{%- endif %}
  return vec;
}
{%- endif %}
{% if prefetch %}
// Starts copying row r (of rows) into this thread's slots at stage: its chunk
// of span elements from first (the row's, 0 and cols, in the block layout).
__device__ __forceinline__ void stage_row(const Args& a, rj_u64 r, rj_u32 first, rj_u32 span, rj_u64 cols, rj_u32 stage, rj_u64 rows) {
  const rj_u64 off = r * a.ld;
{%- if general %}
  rj_u32 shift;
  const bool vec = row_grid(a, r, shift);
  const Chunk c = rj_chunk_of<Chunk, kBalanced>(vec ? first - shift : first, span, (rj_u32)cols, threadIdx.x);
  const bool before = r > 0, after = r + 1 < rows;
  rj_row_stage<T, kPacks>(stage, kStride, a.x + off * T::kBytes, c, vec, before, after);
{%- if residual %}
  rj_row_stage<T, kPacks>(stage + kSlots, kStride, a.res + off * T::kBytes, c, vec, before, after);
{%- endif %}
{%- else %}
  (void)rows;
  const Chunk c = rj_chunk_of<Chunk, kBalanced>(first, span, (rj_u32)cols, threadIdx.x);
  rj_row_stage<T, kPacks>(stage, kStride, a.x + off * T::kBytes, c);
{%- if residual %}
  rj_row_stage<T, kPacks>(stage + kSlots, kStride, a.res + off * T::kBytes, c);
{%- endif %}
{%- endif %}
  rj_cp_async_commit();
}
{%- if staged_cols %}

// Stages this thread's columns of the {% if op == "layernorm" %}weight and bias{% else %}weight{% endif %} once (every row of the
// thread has the same columns), the kernel's first cp.async group.
__device__ __forceinline__ void stage_cols(Args& a, rj_u32 stage, const Chunk& c) {
  a.cols = stage + kColsAt;
  rj_row_stage<T, kPacks>(a.cols, kStride, a.w, c);
{%- if op == "layernorm" %}
  rj_row_stage<T, kPacks>(a.cols + kSlots, kStride, a.b, c);
{%- endif %}
  rj_cp_async_commit();
}
{%- endif %}

{% endif -%}
// One row (or chunk) from load to store{% if second_pass or layout == "loop" %}: a publishing reducer (not kApply) stops at the
// state and stores only the residual's sum, a fetching one stores only the output{% endif %}.
template <class Red>
__device__ __forceinline__ void run_row(const Args& a, rj_u64 r, rj_u32 first, rj_u32 span, rj_u32 cols, rj_u32 lane, const Red& red, bool leader{% if prefetch %}, rj_u32 stage{% endif %}{% if stages_next %}, rj_u64 next, rj_u64 rows{% endif %}{% if gated_stores %}, bool stores{% endif %}) {
  const rj_u64 off = r * a.ld;
{%- if prefetch %}
  // The row's x is in this thread's slots: only the stores are addressed.
  const rj_u64 outr = a.out + off * TO::kBytes;
{%- else %}
  const rj_u64 xr = a.x + off * T::kBytes, outr = a.out + off * TO::kBytes;
{%- endif %}
{%- if residual %}
  const rj_u64 resr = a.res + off * T::kBytes, rout = a.res_out + off * T::kBytes;
{%- endif %}
{%- if row_shift %}
  rj_u32 shift;
  const bool vec = row_grid(a, r, shift);
{%- if not softmax %}
  // Weight and bias, indexed by column, where both share a grid: 16-bit rows
  // take them from their own grid, which lies m elements before the chunk's
  // (rj_col_grid), the others only where it is the chunk's (m = 0). Two-pass
  // layer norm + residual twins with f32 in or out spilled 8-52 bytes at
  // their 64 registers with the pick (ptxas 13.0).
  const rj_u32 wgrid = (rj_u32)(a.w / T::kBytes % 4);
  const bool pick = T::kBytes < 4 && TO::kBytes < 4;
  const rj_col_grid wvec{vec && (a.b == 0 || a.b / T::kBytes % 4 == wgrid) && (pick || wgrid == shift),
                         pick ? (wgrid - shift) & 3u : 0u};
{%- endif %}
  const auto c = rj_chunk_of<rj_chunk<kLanes, kWhole, true{% if paired %}, false, false, 2{% endif %}>, kBalanced>(vec ? first - shift : first, span, cols, lane);
{%- elif general %}
  // A row's packs start at its first element: vector accesses where every
  // buffer of the row is on the pack grid (the split twins also take rows off it).
  bool vec = xr % (4 * T::kBytes) == 0 && outr % (4 * TO::kBytes) == 0;
{%- if residual %}
  vec = vec && resr % (4 * T::kBytes) == 0 && rout % (4 * T::kBytes) == 0;
{%- endif %}
{%- if not softmax %}
  vec = vec && a.w % (4 * T::kBytes) == 0 && a.b % (4 * T::kBytes) == 0;
  const rj_col_grid wvec{vec, 0u};
{%- endif %}
  const auto c = rj_chunk_of<rj_chunk<kLanes, kWhole>, kBalanced>(first, span, cols, lane);
{%- else %}
  // Whole {% if paired %}pairs{% else %}packs{% endif %}: the launcher checked every buffer's alignment, ld and cols.
  const bool vec = true;
{%- if not softmax %}
  const rj_col_grid wvec{true, 0u};
{%- endif %}
  const Chunk c = rj_chunk_of<Chunk, kBalanced>(first, span, cols, lane);
{%- endif %}
{%- if raw_rows %}
  // The row as raw words of T (NormSpec::raw_rows): x{% if residual %} and the residual loaded,
  // h = x + residual rounded to T (exact in its words) stored{% else %} as loaded, h{% endif %}, then the row op
  // widens h where it reads it and stores y as it makes it.
  rj_u32 h[kPacks][T::kWords];
  rj_row_ld_raw<T, kPacks, RowLoad>(xr, c, vec, h);
{%- if residual %}
  rj_u32 res[kPacks][T::kWords];
  rj_row_ld_raw<T, kPacks, RowLoad>(resr, c, vec, res);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) rj_add_raw<T, {{ input_round }}>(h[p], res[p]);
  rj_row_st_raw<T, kPacks>(rout, c, vec, h);
{%- endif %}
{%- if softmax %}
  const Op op{a.param};
  op.template row_raw<T>(h, c, red, leader, rj_out_stored<TO, decltype(c)>{outr, c, vec});
{%- else %}
  const Op op{a.param, a.w, a.b, a.mean, a.rstd, r, wvec};
  op.row_raw(h, c, red, leader, rj_out_stored<TO, decltype(c)>{outr, c, vec});
{%- endif %}
{%- else %}
  float x[kPacks][4];
{%- if prefetch %}
  // The row landed in this thread's slots (the caller waited on cp.async).
  rj_row_ld_staged<T, kPacks>(stage, kStride, c, x);
{%- if residual %}
  rj_row_add_staged<T, {{ input_round }}, kPacks>(stage + kSlots, kStride, c, x);
{%- endif %}
{%- if stages_next %}
  // The slots are read: the block's next row goes into them now.
  if (next < rows) stage_row(a, next, first, span, cols, stage, rows);
{%- endif %}
{%- elif layout == "loop" and residual %}
  // The second pass loads the residual's sum this thread stored in the first
  // (coherent loads: the kernel wrote it), one stream, not x and the residual.
  if constexpr (Red::kApply) {
    rj_row_ld<T, kPacks, rj_load_plain>(rout, c, vec, 0.0f, x);
  } else {
    rj_row_ld<T, kPacks, RowLoad>(xr, c, vec, 0.0f, x);
  }
{%- else %}
  rj_row_ld<T, kPacks, RowLoad>(xr, c, vec, 0.0f, x);
{%- endif %}
{%- if softmax %}
#pragma unroll
  for (int p = 0; p < kPacks; ++p)
#pragma unroll
    for (int k = 0; k < 4; ++k) x[p][k] = rj_mul_rn(x[p][k], a.param);
  const Op op{a.param};
{%- else %}
{%- if residual %}
  {% if layout == "loop" %}if constexpr (!Red::kApply) {% endif %}{
{%- if not prefetch %}
    float h[kPacks][4];
    rj_row_ld<T, kPacks, RowLoad>(resr, c, vec, 0.0f, h);
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
#pragma unroll
      for (int k = 0; k < 4; ++k) x[p][k] = {{ input_round }}::round(x[p][k] + h[p][k]);
{%- endif %}
    {% if second_pass %}if (!Red::kApply) {% elif gated_stores %}if (stores) {% endif %}rj_row_st<T, kPacks>(rout, c, vec, x);
  }
{%- endif %}
{%- if staged_cols %}
  const Op op{a.param, a.cols, a.cols + kSlots, a.mean, a.rstd, r, wvec, rj_cols_staged{kStride}};
{%- elif held and (layout == "block" or layout == "warp") %}
  // The held columns, pinned after this row's loads (rj_cols_held::pin).
  Held held = a.held;
  held.pin();
  const Op op{a.param, a.w, a.b, a.mean, a.rstd, r, wvec, held};
{%- elif held %}
  const Op op{a.param, a.w, a.b, a.mean, a.rstd, r, wvec, a.held};
{%- else %}
  const Op op{a.param, a.w, a.b, a.mean, a.rstd, r, wvec};
{%- endif %}
{%- endif %}
{%- if stores_each_pack %}
  op.row(x, c, red, leader, rj_out_stored<TO, Chunk>{outr, c, vec});
{%- else %}
  op.row(x, c, red, leader);
{%- if fp8 %}
  if (Red::kApply) rj_fp8_scale_row<{% if fp8 == "qd" %}true{% else %}false{% endif %}>(x, c, red, leader, a.scale, r);
{%- endif %}
  if (Red::kApply{% if gated_stores %} && stores{% endif %}) rj_row_st<TO, kPacks>(outr, c, vec, x);
{%- endif %}
{%- endif %}
}
}  // namespace {{ name }}_impl

extern "C" __global__ void {% if cluster %}__cluster_dims__({{ cluster }}, 1, 1) {% endif %}__launch_bounds__({{ threads }}, {{ min_blocks }}) {{ name }}(
    const void* __restrict__ x_ptr, const void* __restrict__ w_ptr, void* __restrict__ out_ptr,
    rj_u64 rows, rj_u64 cols, rj_u64 ld, float param, rj_u32 splits, rj_u32 span,
    const void* __restrict__ res_ptr, void* __restrict__ res_out_ptr, const void* __restrict__ b_ptr,
    void* __restrict__ mean_ptr, void* __restrict__ rstd_ptr, void* __restrict__ counters_ptr,
    void* __restrict__ partials_ptr{% if fp8 %}, void* __restrict__ scale_ptr{% endif %}) {
  using namespace {{ name }}_impl;
  // Absent buffers are null: never converted, never touched.
  Args a;
  a.x = rj_cvta_global(x_ptr);
  a.out = rj_cvta_global(out_ptr);
  a.res = res_ptr ? rj_cvta_global(res_ptr) : 0;
  a.res_out = res_out_ptr ? rj_cvta_global(res_out_ptr) : 0;
  a.w = w_ptr ? rj_cvta_global(w_ptr) : 0;
  a.b = b_ptr ? rj_cvta_global(b_ptr) : 0;
  a.mean = mean_ptr ? rj_cvta_global(mean_ptr) : 0;
  a.rstd = rstd_ptr ? rj_cvta_global(rstd_ptr) : 0;
  a.ld = ld;
  a.param = param;
{%- if fp8 %}
  a.scale = rj_cvta_global(scale_ptr);
{%- endif %}
{%- if layout == "warp" %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)splits;
  (void)span;
  const rj_u32 lane = threadIdx.x % kLanes;
  const rj_u64 per_block = kThreads / kLanes;
  const rj_u64 groups = (rj_u64)gridDim.x * per_block;
  const rj_u64 g = (rj_u64)blockIdx.x * per_block + threadIdx.x / kLanes;
  // The group of this warp's lane 0: the loop bound is the same for the whole warp.
  const rj_u64 warp_first = g - (threadIdx.x % 32) / kLanes;
{%- if held %}
  // Every row of a group has these columns: asked for before the first row's,
  // they are in flight beside it instead of after its reduction.
  a.held.load(a.w, a.b, rj_chunk_of<Chunk, kBalanced>(0, (rj_u32)cols, (rj_u32)cols, lane));
{%- endif %}
  for (rj_u64 step = 0; warp_first + step < rows; step += groups) {
    const rj_u64 r = g + step;
    const bool active = r < rows;
{%- if gated_stores %}
    // Exact packs have no bounds test: a group past the last row reads the
    // last row and stores nothing.
    run_row(a, active ? r : rows - 1, 0, (rj_u32)cols, (rj_u32)cols, lane, rj_red_group<kLanes>(), active && lane == 0, active);
{%- else %}
    const rj_u32 n = active ? (rj_u32)cols : 0u;
    run_row(a, r, 0, n, n, lane, rj_red_group<kLanes>(), active && lane == 0);
{%- endif %}
  }
{%- elif layout == "block" and prefetch %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)splits;
  (void)span;
  extern __shared__ __align__(16) unsigned char rj_staged_rows[];
  const rj_u32 stage = rj_smem_addr(rj_staged_rows) + threadIdx.x * 4u * T::kBytes;
{%- if staged_cols %}
  stage_cols(a, stage, rj_chunk_of<Chunk, kBalanced>(0, (rj_u32)cols, (rj_u32)cols, threadIdx.x));
{%- endif %}
  // The grid is at most the rows (NormSpec::plan): every block has a first row.
  rj_u64 r = blockIdx.x;
  stage_row(a, r, 0, (rj_u32)cols, cols, stage, rows);
  do {
    rj_cp_async_wait<0>();
    run_row(a, r, 0, (rj_u32)cols, (rj_u32)cols, threadIdx.x, rj_red_row_block<kThreads, {% if sum_pair %}true{% else %}false{% endif %}>(r == blockIdx.x), threadIdx.x == 0, stage, r + gridDim.x, rows);
    r += gridDim.x;
  } while (r < rows);
{%- elif cluster %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)splits;
  // Block rank k of a cluster takes chunk k of each of the cluster's rows;
  // every block of a cluster goes through the same rows (the reducer's
  // exchange).
  typedef rj_red_cluster<kThreads, {{ cluster }}> Red;
  Red::init();
  const rj_u32 rank = rj_cluster_rank<>(), first = rank * span;
  const rj_u64 clusters = gridDim.x / {{ cluster }};
{%- if prefetch %}
  extern __shared__ __align__(16) unsigned char rj_staged_rows[];
  const rj_u32 stage = rj_smem_addr(rj_staged_rows) + threadIdx.x * 4u * T::kBytes;
{%- if staged_cols %}
  stage_cols(a, stage, rj_chunk_of<Chunk, kBalanced>(first, span, (rj_u32)cols, threadIdx.x));
{%- endif %}
  if (blockIdx.x / {{ cluster }} < rows) stage_row(a, blockIdx.x / {{ cluster }}, first, span, cols, stage, rows);
{%- endif %}
  rj_u32 i = 0;
  for (rj_u64 r = blockIdx.x / {{ cluster }}; r < rows; r += clusters, ++i) {
{%- if prefetch %}
    rj_cp_async_wait<0>();
{%- endif %}
    run_row(a, r, first, span, (rj_u32)cols, threadIdx.x, Red{i}, threadIdx.x == 0 && rank == 0{% if prefetch %}, stage, r + clusters, rows{% endif %});
  }
  // No block leaves while a push into its shared memory may be in flight.
  rj_cluster_sync<>();
{%- elif prefetch %}
  // Split rows in cohorts: the first `splits` blocks to run form cohort 0, and
  // so on (a ticket, so that a cohort is made of running blocks); cohort c
  // takes rows c, c + cohorts, ... Its rows are known, so each is staged two
  // rows ahead, with no ticket on the way. counters[0] is the ticket, which
  // every block takes twice (on entry, on leaving); counters[1] the epoch.
  extern __shared__ __align__(16) unsigned char rj_staged_rows[];
  const rj_u32 stage = rj_smem_addr(rj_staged_rows) + threadIdx.x * 4u * T::kBytes;
  __shared__ rj_u32 ticket_s, epoch_s;
  const rj_u64 counters = rj_cvta_global(counters_ptr), partials = rj_cvta_global(partials_ptr);
  if (threadIdx.x == 0) {
    ticket_s = rj_atom_add_relaxed(counters, 1u);
    epoch_s = rj_launch_epoch(counters);
  }
  __syncthreads();
  // Rows and items are below 2^32 (the launcher checks rows x splits): 32-bit
  // row indices keep the loop's registers.
  const rj_u32 cohorts = gridDim.x / splits, first_row = ticket_s / splits, n_rows = (rj_u32)rows;
  const rj_u32 split = ticket_s % splits, flag = epoch_s + 1u;
  const rj_u32 first = split * span;
  const rj_u32 slot_bytes = {{ partial_bytes }};
{%- if staged_cols %}
  // A cohort's block keeps its chunk in every row (the loop's waits include
  // this first group).
  stage_cols(a, stage, rj_chunk_of<Chunk, kBalanced>(first, span, (rj_u32)cols, threadIdx.x));
{%- elif held %}
  // Loaded per row after the row's states came in, the columns' L2 latency
  // lay between every wait and its stores.
  a.held.load(a.w, a.b, rj_chunk_of<Chunk, kBalanced>(first, span, (rj_u32)cols, threadIdx.x));
{%- endif %}
  // Buffer b of three: row i of this cohort is in buffer i % 3. Every stage
  // commits a group, empty past the last row, so that waiting for all but the
  // newest group is waiting for row i.
  for (rj_u32 k = 0; k < 2; ++k) {
    const rj_u32 r = first_row + k * cohorts;
    if (r < n_rows) {
      stage_row(a, r, first, span, cols, stage + k * kBuffer, n_rows);
    } else {
      rj_cp_async_commit();
    }
  }
  rj_u32 i = 0;
  for (rj_u32 r = first_row; r < n_rows; r += cohorts, ++i) {
    rj_cp_async_wait<1>();
    const rj_u32 buf = stage + (i % 3) * kBuffer;
    // The row before's states are asked for first: they arrive while this row
    // is published.
    const rj_u32 rp = r - cohorts;
    const Fetch fetch{partials + (rj_u64)rp * splits * slot_bytes, splits, slot_bytes, flag};
    const auto early = fetch.ask(Op::Split(), i > 0);
    const rj_u64 row_slots = partials + (rj_u64)r * splits * slot_bytes;
    run_row(a, r, first, span, (rj_u32)cols, threadIdx.x, rj_red_publish<kThreads>{row_slots + (rj_u64)split * slot_bytes, flag}, false, buf);
    const rj_u32 prev = stage + ((i + 2) % 3) * kBuffer;
    if (i > 0) {
      fetch.wait(Op::Split(), early);
      run_row(a, rp, first, span, (rj_u32)cols, threadIdx.x, fetch, split == 0 && threadIdx.x == 0, prev);
    }
    // This thread has read its slots of the row before: row i + 2 goes there.
    const rj_u32 next = r + 2 * cohorts;
    if (next < n_rows) {
      stage_row(a, next, first, span, cols, prev, n_rows);
    } else {
      rj_cp_async_commit();
    }
  }
  if (i > 0) {
    // Every thread has read the row before's total (the loop's last finish):
    // no publishing pass separates them from this row's.
    __syncthreads();
    const rj_u32 rp = first_row + (i - 1) * cohorts;
    const Fetch fetch{partials + (rj_u64)rp * splits * slot_bytes, splits, slot_bytes, flag};
    fetch.wait(Op::Split(), fetch.ask(Op::Split(), true));
    run_row(a, rp, first, span, (rj_u32)cols, threadIdx.x, fetch, split == 0 && threadIdx.x == 0, stage + ((i - 1) % 3) * kBuffer);
  }
  rj_cp_async_wait<0>();
  // The last block to leave ends the launch.
  if (threadIdx.x == 0 && rj_atom_add_relaxed(counters, 1u) == 2 * gridDim.x - 1) rj_launch_done(counters, flag);
{%- elif layout == "block" %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)splits;
  (void)span;
{%- if held %}
  // Every row of the block has these columns: asked for before the first
  // row's, they are in flight beside it instead of after its reduction.
  a.held.load(a.w, a.b, rj_chunk_of<Chunk, kBalanced>(0, (rj_u32)cols, (rj_u32)cols, threadIdx.x));
{%- endif %}
  // The grid is at most the rows (NormSpec::plan): every block has a first
  // row, and its loads wait on no test of the row count.
  rj_u64 r = blockIdx.x;
  do {
    // A general twin keeps its first barrier: the test of the first row cost
    // RMS norm's b512x4_g a register it lacked (8 bytes spilled at its 40).
    run_row(a, r, 0, (rj_u32)cols, (rj_u32)cols, threadIdx.x, rj_red_row_block<kThreads, {% if sum_pair %}true{% else %}false{% endif %}>({% if general %}false{% else %}r == blockIdx.x{% endif %}), threadIdx.x == 0);
    r += gridDim.x;
  } while (r < rows);
{%- elif layout == "loop" %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)splits;
  (void)span;
{%- if row_shift %}
  // A row's chunks start at its shift from the pack grid (row_grid): they
  // reach 3 elements further.
{%- endif %}
  const rj_u32 n = (rj_u32)cols, kChunk = kThreads * kPacks * 4, chunks = (n + {% if row_shift %}3 + {% endif %}kChunk - 1) / kChunk;
  // The grid is at most the rows (NormSpec::plan): every block has a first row.
  rj_u64 r = blockIdx.x;
  do {
    const rj_red_running<Op::Split> running{};
    for (rj_u32 k = 0; k < chunks; ++k) run_row(a, r, k * kChunk, kChunk, n, threadIdx.x, running, false);
    const rj_red_known<Op::Split::S> known{rj_block_reduce<kThreads>(Op::Split(), running.total)};
    for (rj_u32 k = chunks; k-- > 0;) run_row(a, r, k * kChunk, kChunk, n, threadIdx.x, known, threadIdx.x == 0 && k == 0);
    r += gridDim.x;
  } while (r < rows);
{%- elif two_pass %}
  // Tickets 0 .. items - 1 publish the states of the items in row order, the
  // next `items` finish them. An item of the second pass waits only on items
  // of the first, all handed out before it and never waiting: no block of a
  // row need be resident with another. Two passes, not one wait an item: at
  // 4x1000003 the norms' twins ran two waves, each blocked on its rows' other
  // chunks, far behind the deferred kernel at 4x1000004 (H100, commit
  // bb57a3f). counters[0] is the
  // ticket, counters[1] the launches' epoch (the flag, as the deferred kernel's).
{%- if ticket_ahead %}
  // A block takes its next ticket as it starts an item and reads it after
  // (NormSpec::ticket_ahead): no item of the first pass waits, and every
  // ticket after a second-pass one is of the second pass, so a ticket held
  // in reserve is never one a waiting item needs. ticket_s[i % 2] is item i's:
  // thread 0 writes the other while the block reads this one.
  __shared__ rj_u32 ticket_s[2], epoch_s;
{%- else %}
  __shared__ rj_u32 ticket_s, epoch_s;
{%- endif %}
  const rj_u64 counters = rj_cvta_global(counters_ptr), partials = rj_cvta_global(partials_ptr);
  const rj_u64 items = rows * splits;
  const rj_u32 slot_bytes = {{ partial_bytes }};
{%- if ticket_ahead %}
  if (threadIdx.x == 0) {
    const rj_u32 epoch = rj_launch_epoch(counters);
    ticket_s[0] = rj_atom_add_relaxed(counters, 1u);
    epoch_s = epoch;
  }
  for (rj_u32 i = 0;; i ^= 1u) {
    __syncthreads();
    const rj_u64 ticket = ticket_s[i];
{%- else %}
  if (threadIdx.x == 0) epoch_s = rj_launch_epoch(counters);
  for (;;) {
    // No barrier before the ticket: every pass of an item has a block barrier
    // after all threads read the last ticket_s.
    if (threadIdx.x == 0) ticket_s = rj_atom_add_relaxed(counters, 1u);
    __syncthreads();
    const rj_u64 ticket = ticket_s;
{%- endif %}
    const rj_u32 flag = epoch_s + 1u;
    if (ticket >= 2 * items) {
{%- if ticket_ahead %}
      // Each block takes exactly one ticket past the items: once the last one
      // is taken every block is in its last item or gone, none reads the
      // counters again, and the next launch waits for this one to end.
{%- else %}
      // Each block takes exactly one ticket past the items: the last one taken
      // (every block has finished) ends the launch.
{%- endif %}
      if (threadIdx.x == 0 && ticket == 2 * items + gridDim.x - 1) rj_launch_done(counters, flag);
      return;
    }
{%- if ticket_ahead %}
    // In flight through the item; stored to shared memory after it.
    rj_u32 next = 0;
    if (threadIdx.x == 0) next = rj_atom_add_relaxed(counters, 1u);
{%- endif %}
    const bool finish = ticket >= items;
    const rj_u64 item = finish ? ticket - items : ticket;
    const rj_u64 r = item / splits;
    const rj_u32 split = (rj_u32)(item % splits);
    const rj_u64 row_slots = partials + r * splits * slot_bytes;
    if (finish) {
      const Fetch fetch{row_slots, splits, slot_bytes, flag};
      fetch.wait(Op::Split(), fetch.ask(Op::Split(), true));
      run_row(a, r, split * span, span, (rj_u32)cols, threadIdx.x, fetch, threadIdx.x == 0 && split == 0);
    } else {
      run_row(a, r, split * span, span, (rj_u32)cols, threadIdx.x, rj_red_publish<kThreads>{row_slots + (rj_u64)split * slot_bytes, flag}, false);
    }
{%- if ticket_ahead %}
    if (threadIdx.x == 0) ticket_s[i ^ 1u] = next;
{%- endif %}
  }
{%- else %}
{%- if op == "layernorm" and not raw_rows %}{% set ticket_add = "rj_atom_add_acq_rel" %}{% else %}{% set ticket_add = "rj_atom_add_relaxed" %}{% endif %}
{%- if flagged %}
  // counters[0] is the ticket, counters[1] the launches' epoch (the flag, as
  // the deferred kernel's).
  __shared__ rj_u32 item_s, epoch_s;
{%- else %}
  // counters[0] is the ticket, then each row's arrival and leaving counts.
  __shared__ rj_u32 item_s;
{%- endif %}
  const rj_u64 counters = rj_cvta_global(counters_ptr), partials = rj_cvta_global(partials_ptr);
  const rj_u64 items = rows * splits;
{%- if flagged %}
  const rj_u32 slot_bytes = {{ partial_bytes }};
{%- if one_wave %}
  // An item a block: the launcher launched the grid cooperatively
  // (Plan::cooperative), so every block runs at once and a block's item is
  // its index (NormSpec::one_wave). No ticket stands before its first row
  // load, and each thread loads the epoch itself, in flight beside the row.
  const bool one_wave = gridDim.x == items;
  rj_u64 item = blockIdx.x;
  rj_u32 flag = 0;
  if (one_wave) flag = rj_launch_epoch(counters) + 1u;
{%- endif %}
{%- if ticket_beside_epoch %}
  // The epoch's load and the first ticket's add in flight together: stored to
  // shared memory first, the epoch held the ticket back a round trip before
  // the first row load (NormSpec::ticket_beside_epoch).
  if ({% if one_wave %}!one_wave && {% endif %}threadIdx.x == 0) {
    const rj_u32 epoch = rj_launch_epoch(counters);
    item_s = {{ ticket_add }}(counters, 1u);
    epoch_s = epoch;
  }
{%- else %}
  if ({% if one_wave %}!one_wave && {% endif %}threadIdx.x == 0) epoch_s = rj_launch_epoch(counters);
{%- endif %}
{%- endif %}
  for (;;) {
{%- if one_wave %}
    if (!one_wave) {
{%- endif %}
    // No barrier before the ticket: every row op reduces once an item, and
    // every thread read the last item_s before the reducer's barriers. The
    // ticket orders no data. Taken acq_rel (a release after the block's
    // stores), it made layer norm, whose weight and bias are read after the
    // row's wait, faster and the other row ops slower (64x1048576, H100,
    // commit 3d272e8). The layer norms of raw rows, which ask for their
    // columns ahead of their stores, take it relaxed: 1-5 % faster at 4x1000003
    // and 64x1048573 (H100, commit f7d7696).
{%- if not ticket_beside_epoch %}
    if (threadIdx.x == 0) item_s = {{ ticket_add }}(counters, 1u);
{%- endif %}
    __syncthreads();
{%- if one_wave %}
    item = item_s;
    flag = epoch_s + 1u;
{%- else %}
    const rj_u64 item = item_s;
{%- if flagged %}
    const rj_u32 flag = epoch_s + 1u;
{%- endif %}
{%- endif %}
{%- if flagged %}
    if (item >= items) {
      // Each block takes exactly one ticket past the items: the last one taken
      // (every block has finished) ends the launch.
      if (threadIdx.x == 0 && item == items + gridDim.x - 1) rj_launch_done(counters, flag);
      return;
    }
{%- if one_wave %}
    }
{%- endif %}
{%- else %}
    if (item >= items) {
      // Each block takes exactly one ticket past the items: the last one taken
      // resets the ticket for the next launch.
      if (threadIdx.x == 0 && item == items + gridDim.x - 1) rj_st_b32(counters, 0u);
      return;
    }
{%- endif %}
    const rj_u64 r = item / splits;
    const rj_u32 split = (rj_u32)(item % splits);
{%- if flagged %}
    const rj_u64 row_slots = partials + r * splits * slot_bytes;
    const rj_red_split<kThreads, {{ split_asks_early }}> red{row_slots + (rj_u64)split * slot_bytes, {row_slots, splits, slot_bytes, flag}};
{%- else %}
    const rj_red_split_counted<kThreads> red{counters + 4 + r * 8, counters + 8 + r * 8, partials + r * splits * {{ partial_bytes }}, split, splits, {{ partial_bytes }}};
{%- endif %}
    run_row(a, r, split * span, span, (rj_u32)cols, threadIdx.x, red, threadIdx.x == 0 && split == 0);
{%- if one_wave %}
    if (one_wave) {
      // The last block to leave ends the launch.
      if (threadIdx.x == 0 && rj_atom_add_relaxed(counters, 1u) == gridDim.x - 1) rj_launch_done(counters, flag);
      return;
    }
{%- endif %}
{%- if ticket_beside_epoch %}
    // The next ticket: every thread read item_s before the reducer's barriers.
    if (threadIdx.x == 0) item_s = {{ ticket_add }}(counters, 1u);
{%- endif %}
  }
{%- endif %}
}
