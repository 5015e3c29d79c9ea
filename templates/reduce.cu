// ---- {{ name }} ----
// reduce (seeds 001, 002): {{ op }} over {% if axis == "all" %}the whole array{% elif axis == "rows" %}each row of a rows x cols matrix (leading dimension ld){% else %}each column of a rows x cols matrix (leading dimension ld){% endif %},
// {{ srcs }} {{ input }} input(s), accumulated with {{ functor }}; the result is {{ result }}.
{%- if axis == "all" and cluster %}
// Small sizes (sm_90+): one cluster of {{ cluster }} blocks. Each thread feeds a fixed,
// strided share of the array (packs of {{ pack }}, {{ unroll }} in flight), each block reduces, and
// block 0 merges the {{ cluster }} block states in rank order through distributed shared
// memory: no workspace, no atomics, no last-block finish.
{%- elif axis == "all" %}
// Each thread feeds a fixed, strided share of the array (packs of {{ pack }}, {{ unroll }} in flight),
// the block reduces, and with more than one block each writes a partial; the last
// block to arrive reduces the partials in block order and writes the result. One
// launch, no float atomics: the same grid gives the same bits every run.
{%- elif axis == "rows" and warp_per_row %}
// A warp per row (short rows): the warp's lanes stride along the row in packs, a
// warp reduction, lane 0 stores. Warps take rows round-robin over the grid.
{%- elif axis == "rows" and split_rows %}
// Fewer rows than the SMs hold blocks (ReduceSpec::plan): each row in gridDim.y
// splits of cols_per_split columns, a block each; a split's block stores its
// state, and the row's last block to arrive merges the row's states in split
// order. Blocks take rows round-robin over gridDim.x.
{%- elif axis == "rows" %}
// A block per row (long rows): the block's threads stride along the row in packs,
// a block reduction, thread 0 stores. Blocks take rows round-robin over the grid.
{%- else %}
// Columns in tiles of 32 x {{ col_vec }}: each lane owns {{ col_vec }} adjacent columns and reads them
// with one 16-byte load per row, so a warp's row of a tile is 512 coalesced bytes;
// {{ phases }} row phases per block (the block's warps), {{ col_unroll }} rows in flight per thread,
// and the rows cut into gridDim.y splits of rows_per_split. Each split's block
// merges its phases in order; with more than one split each writes a partial per
// column and the last split of a tile to arrive merges them in split order. No
// atomics on values.
{%- endif %}
namespace {{ name }}_impl {
typedef {{ functor }} Op;
typedef Op::S S;
typedef rj_dtype_{{ input }} T;
const int kThreads = {{ threads }};
const int kSrcs = {{ srcs }};
const int kUnroll = {{ unroll }};
const int kPack = {{ pack }};
{%- if axis == "cols" %}
const int kVec = {{ col_vec }};
const int kColUnroll = {{ col_unroll }};
{%- endif %}
}  // namespace {{ name }}_impl

extern "C" __global__ void {% if cluster %}__cluster_dims__({{ cluster }}, 1, 1) {% endif %}__launch_bounds__({{ threads }}) {{ name }}(
    const void* __restrict__ src0_ptr,
{%- if srcs == 2 %}
    const void* __restrict__ src1_ptr,
{%- endif %}
    void* __restrict__ out_ptr, void* __restrict__ counters_ptr, void* __restrict__ partials_ptr,
{%- if axis == "all" %}
    rj_u64 n) {
{%- elif axis == "rows" %}
    rj_u64 rows, rj_u64 cols, rj_u64 ld, rj_u64 cols_per_split) {
{%- else %}
    rj_u64 rows, rj_u64 cols, rj_u64 ld, rj_u64 rows_per_split) {
{%- endif %}
  using namespace {{ name }}_impl;
  const Op op = Op();
  const rj_u64 src0 = rj_cvta_global(src0_ptr);
{%- if srcs == 2 %}
  const rj_u64 src1 = rj_cvta_global(src1_ptr);
{%- else %}
  const rj_u64 src1 = 0;
{%- endif %}
  const rj_u64 out = rj_cvta_global(out_ptr);
{%- if axis == "all" and cluster %}
  (void)counters_ptr;
  (void)partials_ptr;
  const rj_u64 lanes = (rj_u64)gridDim.x * kThreads;
  S acc = rj_feed_range<Op, T, kSrcs, kUnroll, kPack>(op, op.identity(), src0, src1, 0, n, (rj_u64)blockIdx.x * kThreads + threadIdx.x, lanes);
  acc = rj_block_reduce<kThreads>(op, acc);
  acc = rj_cluster_reduce<{{ cluster }}>(op, acc);
  // The grid is the one cluster: block 0 is rank 0.
  if (blockIdx.x == 0 && threadIdx.x == 0) rj_st_result(out, 0, op.finalize(acc, n));
{%- elif axis == "all" %}
  const rj_u64 lanes = (rj_u64)gridDim.x * kThreads;
  S acc = rj_feed_range<Op, T, kSrcs, kUnroll, kPack>(op, op.identity(), src0, src1, 0, n, (rj_u64)blockIdx.x * kThreads + threadIdx.x, lanes);
  acc = rj_block_reduce<kThreads>(op, acc);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) rj_st_result(out, 0, op.finalize(acc, n));
    return;
  }
  const rj_u64 partials = rj_cvta_global(partials_ptr);
  if (!rj_arrive_last(rj_cvta_global(counters_ptr), gridDim.x, partials + (rj_u64)blockIdx.x * sizeof(S), acc, threadIdx.x == 0)) return;
  const S total = rj_merge_partials<kThreads>(op, partials, gridDim.x);
  if (threadIdx.x == 0) rj_st_result(out, 0, op.finalize(total, n));
{%- elif axis == "rows" and warp_per_row %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)cols_per_split;
  const rj_u64 lane = threadIdx.x % 32;
  const rj_u64 warps = (rj_u64)gridDim.x * (kThreads / 32);
  for (rj_u64 r = ((rj_u64)blockIdx.x * kThreads + threadIdx.x) / 32; r < rows; r += warps) {
    S acc = rj_feed_range<Op, T, kSrcs, kUnroll, kPack>(op, op.identity(), src0, src1, r * ld, cols, lane, 32);
    acc = rj_warp_reduce(op, acc);
    if (lane == 0) rj_st_result(out, r, op.finalize(acc, cols));
  }
{%- elif axis == "rows" and split_rows %}
  const rj_u64 c0 = (rj_u64)blockIdx.y * cols_per_split;
  const rj_u64 count = cols - c0 < cols_per_split ? cols - c0 : cols_per_split;
  for (rj_u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    S acc = rj_feed_range<Op, T, kSrcs, kUnroll, kPack>(op, op.identity(), src0, src1, r * ld + c0, count, threadIdx.x, kThreads, c0);
    acc = rj_block_reduce<kThreads>(op, acc);
    const rj_u64 partials = rj_cvta_global(partials_ptr) + r * gridDim.y * sizeof(S);
    const rj_u64 counter = rj_cvta_global(counters_ptr) + r * 4;
    if (!rj_arrive_last(counter, gridDim.y, partials + (rj_u64)blockIdx.y * sizeof(S), acc, threadIdx.x == 0)) continue;
    const S total = rj_merge_partials<kThreads>(op, partials, gridDim.y);
    if (threadIdx.x == 0) rj_st_result(out, r, op.finalize(total, cols));
  }
{%- elif axis == "rows" %}
  (void)counters_ptr;
  (void)partials_ptr;
  (void)cols_per_split;
  for (rj_u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    S acc = rj_feed_range<Op, T, kSrcs, kUnroll, kPack>(op, op.identity(), src0, src1, r * ld, cols, threadIdx.x, kThreads);
    acc = rj_block_reduce<kThreads>(op, acc);
    if (threadIdx.x == 0) rj_st_result(out, r, op.finalize(acc, cols));
  }
{%- else %}
  const int kPhases = kThreads / 32;
  const rj_u32 tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  // This thread's kVec adjacent columns, and its block's rows.
  const rj_u64 c0 = ((rj_u64)blockIdx.x * 32 + tx) * kVec;
  const rj_u64 r0 = (rj_u64)blockIdx.y * rows_per_split;
  const rj_u64 r1 = r0 + rows_per_split < rows ? r0 + rows_per_split : rows;
  S acc[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) acc[j] = op.identity();
  // One 16-byte load per row when every row start is 16-byte aligned and all
  // kVec columns exist; else (the last columns, or an unaligned view) element
  // loads.
  const bool vec = c0 + kVec <= cols && ld % kVec == 0 && src0 % 16 == 0 && src1 % 16 == 0;
  if (vec) {
    // {{ col_unroll }} rows' vectors in flight before they are fed.
    rj_u64 r = r0 + ty;
    for (; r + (kColUnroll - 1) * kPhases < r1; r += kColUnroll * kPhases) {
      rj_u32 w[kColUnroll][4]{% if srcs == 2 %}, z[kColUnroll][4]{% endif %};
#pragma unroll
      for (int u = 0; u < kColUnroll; ++u) rj_ld_words<rj_load_nc>(src0 + ((r + u * kPhases) * ld + c0) * T::kBytes, w[u]);
{%- if srcs == 2 %}
#pragma unroll
      for (int u = 0; u < kColUnroll; ++u) rj_ld_words<rj_load_nc>(src1 + ((r + u * kPhases) * ld + c0) * T::kBytes, z[u]);
{%- endif %}
      float x[kColUnroll][kVec]{% if srcs == 2 %}, y[kColUnroll][kVec]{% endif %};
#pragma unroll
      for (int u = 0; u < kColUnroll; ++u) rj_unpack16<T>(w[u], x[u]);
{%- if srcs == 2 %}
#pragma unroll
      for (int u = 0; u < kColUnroll; ++u) rj_unpack16<T>(z[u], y[u]);
{%- endif %}
      // Each column's rows in flight go in as one group (rows r + u * kPhases).
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        float g[kColUnroll];
#pragma unroll
        for (int u = 0; u < kColUnroll; ++u) g[u] = op.value(x[u][j]{% if srcs == 2 %}, y[u][j]{% endif %});
        acc[j] = op.feed_n(acc[j], g, [&](int k) { return r + (rj_u64)k * kPhases; });
      }
    }
    for (; r < r1; r += kPhases) {
      rj_u32 w[4]{% if srcs == 2 %}, z[4]{% endif %};
      float x[kVec]{% if srcs == 2 %}, y[kVec]{% endif %};
      rj_ld_words<rj_load_nc>(src0 + (r * ld + c0) * T::kBytes, w);
{%- if srcs == 2 %}
      rj_ld_words<rj_load_nc>(src1 + (r * ld + c0) * T::kBytes, z);
      rj_unpack16<T>(z, y);
{%- endif %}
      rj_unpack16<T>(w, x);
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j] = op.feed(acc[j], op.value(x[j]{% if srcs == 2 %}, y[j]{% endif %}), r);
    }
  } else if (c0 < cols) {
    for (rj_u64 r = r0 + ty; r < r1; r += kPhases) {
      float x[kVec]{% if srcs == 2 %}, y[kVec]{% endif %};
#pragma unroll
      for (int j = 0; j < kVec; ++j) x[j] = c0 + j < cols ? rj_ld1<T, rj_load_nc>(src0, r * ld + c0 + j) : 0.0f;
{%- if srcs == 2 %}
#pragma unroll
      for (int j = 0; j < kVec; ++j) y[j] = c0 + j < cols ? rj_ld1<T, rj_load_nc>(src1, r * ld + c0 + j) : 0.0f;
{%- endif %}
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        if (c0 + j < cols) acc[j] = op.feed(acc[j], op.value(x[j]{% if srcs == 2 %}, y[j]{% endif %}), r);
    }
  }
  // The phases of each column, merged in phase order into phase 0.
  rj_merge_phases<kPhases, kVec>(op, acc);
  if (gridDim.y == 1) {
    if (ty == 0) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        if (c0 + j < cols) rj_st_result(out, c0 + j, op.finalize(acc[j], rows));
    }
    return;
  }
  const rj_u64 partials = rj_cvta_global(partials_ptr);
  // A thread's kVec one-word states lie whole and 16-byte aligned in a
  // split's row of partials where all its columns exist, the row's bytes are
  // a multiple of 16 and the partials start 16-byte aligned (behind the
  // counters): they cross as 16-byte words (wider states word by word: whole,
  // their registers would cost the kernel occupancy).
  const bool vec_states = sizeof(S) == 4 && c0 + kVec <= cols && (cols * sizeof(S)) % 16 == 0 && partials % 16 == 0;
  if (ty == 0) {
    if (vec_states) {
      rj_st_states<kVec>(partials + ((rj_u64)blockIdx.y * cols + c0) * sizeof(S), acc);
    } else {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        if (c0 + j < cols) rj_st_state(partials + ((rj_u64)blockIdx.y * cols + c0 + j) * sizeof(S), acc[j]);
    }
  }
  const rj_u64 counter = rj_cvta_global(counters_ptr) + (rj_u64)blockIdx.x * 4;
  if (!rj_arrive_last(counter, gridDim.y, 0, acc[0], false)) return;
  // The last split of this tile: the phases take the splits round-robin, then
  // phase 0 merges the phases in order. Its loads are the kernel's serial
  // tail: one-word states go kDepth splits at a time, in flight together.
  const int kDepth = 4;
  S total[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) total[j] = op.identity();
  if (vec_states) {
    // kDepth splits' states in flight a thread, merged in split order.
    rj_u32 s = ty;
    for (; s + (kDepth - 1) * kPhases < gridDim.y; s += kDepth * kPhases) {
      S v[kDepth][kVec];
#pragma unroll
      for (int u = 0; u < kDepth; ++u) rj_ld_states<kVec>(partials + ((rj_u64)(s + u * kPhases) * cols + c0) * sizeof(S), v[u]);
#pragma unroll
      for (int u = 0; u < kDepth; ++u)
#pragma unroll
        for (int j = 0; j < kVec; ++j) total[j] = op.merge(total[j], v[u][j]);
    }
    for (; s < gridDim.y; s += kPhases) {
      S v[kVec];
      rj_ld_states<kVec>(partials + ((rj_u64)s * cols + c0) * sizeof(S), v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) total[j] = op.merge(total[j], v[j]);
    }
  } else {
    for (rj_u32 s = ty; s < gridDim.y; s += kPhases) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        if (c0 + j < cols) total[j] = op.merge(total[j], rj_ld_state<S>(partials + ((rj_u64)s * cols + c0 + j) * sizeof(S)));
    }
  }
  rj_merge_phases<kPhases, kVec>(op, total);
  if (ty == 0) {
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      if (c0 + j < cols) rj_st_result(out, c0 + j, op.finalize(total[j], rows));
  }
{%- endif %}
}
