// ---- {{ name }} ----
{%- if stage == "sort" %}
// nms (issue 11), stage 1: keys from scores, then each tile of {{ tile }} keys sorted in
// shared memory ({{ threads }} threads, bitonic). Keys past n are padding (after every
// real key). A NaN score or a non-finite coordinate is recorded in status[1] as
// 0xffffffff - index (red.max: the lowest bad index wins; 0 means none).
extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    const float* __restrict__ scores, const float* __restrict__ boxes, rj_u64 n,
    rj_u64* __restrict__ keys, rj_u32* __restrict__ status) {
  const int kTile = {{ tile }};
  __shared__ rj_u64 s[kTile];
  const rj_u64 base = (rj_u64)blockIdx.x * kTile;
  for (rj_u32 t = threadIdx.x; t < kTile; t += {{ threads }}) {
    const rj_u64 i = base + t;
    rj_u64 key = RJ_NMS_PAD;
    if (i < n) {
      const float score = scores[i];
      const rj_nms_box b = rj_nms_load_box(boxes, i);
      const bool ok = score == score && rj_nms_finite(b.x1) && rj_nms_finite(b.y1) &&
                      rj_nms_finite(b.x2) && rj_nms_finite(b.y2);
      if (!ok) rj_red_max_u32(status + 1, 0xffffffffu - (rj_u32)i);
      key = rj_nms_key(score, (rj_u32)i);
    }
    s[t] = key;
  }
  __syncthreads();
  rj_nms_bitonic_tile<kTile, {{ threads }}>(s, base, 2, kTile);
  for (rj_u32 t = threadIdx.x; t < kTile; t += {{ threads }}) keys[base + t] = s[t];
}
{%- elif stage == "merge" %}
// nms (issue 11), sort: one bitonic compare-exchange step (stage k, distance j >= the
// tile) over all `padded` keys in global memory, one pair per thread.
extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    rj_u64* __restrict__ keys, rj_u64 padded, rj_u64 k, rj_u64 j) {
  const rj_u64 p = (rj_u64)blockIdx.x * {{ threads }} + threadIdx.x;
  if (p >= padded / 2) return;
  const rj_u64 i = (p / j) * 2 * j + (p % j);
  const rj_u64 l = i + j;
  const bool ascending = (i & k) == 0;
  const rj_u64 a = keys[i], b = keys[l];
  if ((a > b) == ascending) {
    keys[i] = b;
    keys[l] = a;
  }
}
{%- elif stage == "tilemerge" %}
// nms (issue 11), sort: the steps j < {{ tile }} of bitonic stage k (> the tile), within
// each tile in shared memory ({{ threads }} threads).
extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    rj_u64* __restrict__ keys, rj_u64 k) {
  const int kTile = {{ tile }};
  __shared__ rj_u64 s[kTile];
  const rj_u64 base = (rj_u64)blockIdx.x * kTile;
  for (rj_u32 t = threadIdx.x; t < kTile; t += {{ threads }}) s[t] = keys[base + t];
  __syncthreads();
  rj_nms_bitonic_tile<kTile, {{ threads }}>(s, base, k, k);
  for (rj_u32 t = threadIdx.x; t < kTile; t += {{ threads }}) keys[base + t] = s[t];
}
{%- elif stage == "mask" %}
// nms (issue 11), stage 2: the suppression bitmask of sorted rows row0..row0+rows. Block
// (x, y) is column block x against row block row0/64 + y (upper triangle only: blocks
// left of the diagonal return at once); thread t's word has bit c set when sorted box
// 64 y + t suppresses sorted box 64 x + c (IoU > thr), for c past t on the diagonal.
// mask[(row - row0) * col_blocks + x]; words left of the diagonal are never written.
extern "C" __global__ void __launch_bounds__(64) {{ name }}(
    const float* __restrict__ boxes, const rj_u64* __restrict__ keys, rj_u64 n, rj_u64 row0,
    rj_u64 rows, rj_u64 col_blocks, rj_u64* __restrict__ mask, float thr) {
  const rj_u64 rb = row0 / 64 + blockIdx.y, cx = blockIdx.x;
  if (cx < rb) return;
  __shared__ rj_nms_box cols[64];
  const rj_u64 c = cx * 64 + threadIdx.x;
  if (c < n) cols[threadIdx.x] = rj_nms_load_box(boxes, (rj_u32)keys[c]);
  __syncthreads();
  const rj_u64 r = rb * 64 + threadIdx.x;
  if (r >= n || r >= row0 + rows) return;
  const rj_nms_box me = rj_nms_load_box(boxes, (rj_u32)keys[r]);
  const rj_u32 ncols = (rj_u32)(n - cx * 64 < 64 ? n - cx * 64 : 64);
  rj_u64 bits = 0;
  for (rj_u32 j = cx == rb ? threadIdx.x + 1 : 0; j < ncols; ++j)
    if (rj_nms_suppresses(me, cols[j], thr)) bits |= 1ull << j;
  mask[(r - row0) * col_blocks + cx] = bits;
}
{%- else %}
// nms (issue 11), stage 3: one block of {{ threads }} threads walks the row blocks of sorted
// rows row0..row0+rows in order. removed[b] holds the boxes of column block b that a kept
// box suppresses (global, zeroed per call, kept across the row chunks of a call). Per
// row block: thread 0 resolves the block against its diagonal words in order (a box is
// kept when no kept box removed it), lanes write the kept boxes' original indices at
// keep[count..], then every thread ORs the kept rows' words into the later columns.
// status[0] is the kept count so far (read at the start, written at the end).
extern "C" __global__ void __launch_bounds__({{ threads }}) {{ name }}(
    const rj_u64* __restrict__ mask, const rj_u64* __restrict__ keys, rj_u64 n, rj_u64 row0,
    rj_u64 rows, rj_u64 col_blocks, rj_u64* __restrict__ removed, rj_i64* __restrict__ keep,
    rj_u32* __restrict__ status) {
  const int kThreads = {{ threads }};
  __shared__ rj_u64 diag[64];
  __shared__ rj_u32 index[64];
  __shared__ rj_u32 kept_rows[64];
  __shared__ rj_u64 kept_s;
  __shared__ rj_u32 count_s;
  if (threadIdx.x == 0) count_s = status[0];
  const rj_u64 rb_end = (row0 + rows + 63) / 64;
  for (rj_u64 rb = row0 / 64; rb < rb_end; ++rb) {
    const rj_u64 base = rb * 64;
    const rj_u32 nb = (rj_u32)(n - base < 64 ? n - base : 64);
    if (threadIdx.x < nb) {
      diag[threadIdx.x] = mask[(base + threadIdx.x - row0) * col_blocks + rb];
      index[threadIdx.x] = (rj_u32)keys[base + threadIdx.x];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const rj_u64 valid = nb == 64 ? ~0ull : (1ull << nb) - 1;
      rj_u64 todo = ~rj_ld_relaxed_u64(removed + rb) & valid, kept = 0;
      rj_u32 nk = 0;
      // Each turn keeps the first box still standing and removes what it suppresses.
      while (todo) {
        const int i = __ffsll((long long)todo) - 1;
        kept |= 1ull << i;
        kept_rows[nk++] = (rj_u32)i;
        todo &= ~diag[i];
        todo &= todo - 1;
      }
      kept_s = kept;
    }
    __syncthreads();
    const rj_u64 kept = kept_s;
    const rj_u32 count = count_s;
    if (threadIdx.x < 64 && ((kept >> threadIdx.x) & 1))
      keep[count + __popcll(kept & ((1ull << threadIdx.x) - 1))] = (rj_i64)index[threadIdx.x];
    const rj_u32 nk = (rj_u32)__popcll(kept);
    const rj_u64 first = rb + 1;
    const rj_u32 ncols = (rj_u32)(col_blocks - first);
    const rj_u32 total = nk * ncols;
    // (kept row, column) pairs spread over the block, four loads in flight a thread.
    for (rj_u32 t0 = threadIdx.x; t0 < total; t0 += 4 * kThreads) {
      rj_u64 v[4];
      rj_u32 col[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const rj_u32 t = t0 + u * kThreads;
        v[u] = 0;
        col[u] = 0;
        if (t < total) {
          const rj_u32 kr = t / ncols;
          col[u] = t - kr * ncols;
          v[u] = mask[(base + kept_rows[kr] - row0) * col_blocks + first + col[u]];
        }
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (v[u]) rj_red_or_u64(removed + first + col[u], v[u]);
    }
    // The barrier orders this block's reds before thread 0's next read of removed.
    __syncthreads();
    if (threadIdx.x == 0) count_s = count + nk;
  }
  __syncthreads();
  if (threadIdx.x == 0) status[0] = count_s;
}
{%- endif %}
