// ---- {{ name }} ----
// reduce_copy (seed 000): {{ srcs | length }} source(s) reduced in {{ accum }} with {{ op_functor }},
// written to {{ dsts | length }} destination(s). Buffers:
{%- for s in srcs %}
//   src{{ s.index }}: {{ s.role }} {{ s.dtype }}, {{ s.pack_bytes }}-byte packs
{%- endfor %}
{%- for d in dsts %}
//   dst{{ d.index }}: {{ d.role }} {{ d.dtype }}, {{ d.pack_bytes }}-byte packs
{%- endfor %}
//
// Work split (per seed 000 section 4): a hunk is {{ elems_per_hunk }} elements
// (unroll {{ unroll }} x 32 lanes x {{ pack_elts }} elements); the grid's warps take hunks
// round-robin; in one unroll step the 32 lanes touch 32 consecutive packs, so each
// step is one fully coalesced transaction per buffer. Each buffer's alignment is
// checked on its own: an aligned buffer keeps vector accesses even when another is
// misaligned. Elements past the last whole hunk go to the scalar tail.
extern "C" __global__ void __launch_bounds__(1024) {{ name }}(
{%- for s in srcs %}
    const void* __restrict__ src{{ s.index }}_ptr,
{%- endfor %}
{%- for d in dsts %}
    void* __restrict__ dst{{ d.index }}_ptr,
{%- endfor %}
    rj_u64 n) {
  const rj_u64 kPack = {{ pack_elts }};
  const rj_u64 kHunk = {{ elems_per_hunk }};
{%- for s in srcs %}
  const rj_u64 src{{ s.index }} = rj_cvta_global(src{{ s.index }}_ptr);
  const bool src{{ s.index }}_aligned = (src{{ s.index }} % {{ s.pack_bytes }}) == 0;
{%- endfor %}
{%- for d in dsts %}
  const rj_u64 dst{{ d.index }} = rj_cvta_global(dst{{ d.index }}_ptr);
  const bool dst{{ d.index }}_aligned = (dst{{ d.index }} % {{ d.pack_bytes }}) == 0;
{%- endfor %}

  const rj_u64 thread = (rj_u64)blockIdx.x * blockDim.x + threadIdx.x;
  const rj_u64 n_threads = (rj_u64)gridDim.x * blockDim.x;
  const rj_u64 lane = threadIdx.x % 32;
  const rj_u64 n_hunks = n / kHunk;

  for (rj_u64 hunk = thread / 32; hunk < n_hunks; hunk += n_threads / 32) {
    const rj_u64 base = hunk * kHunk + lane * kPack;
    {{ accum }} acc[{{ unroll }}][{{ pack_elts }}];
    // All loads of a source are issued before any use, for memory-level parallelism.
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
      rj_ld4_{{ srcs[0].dtype }}<rj_load_volatile>(src0, base + u * 32 * kPack, src0_aligned, acc[u]);
{%- for s in srcs %}{% if s.index > 0 %}
    {
      {{ accum }} x[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
        rj_ld4_{{ s.dtype }}<rj_load_volatile>(src{{ s.index }}, base + u * 32 * kPack, src{{ s.index }}_aligned, x[u]);
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
        for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = {{ op_functor }}::apply(acc[u][e], x[u][e]);
    }
{%- endif %}{% endfor %}
{%- for d in dsts %}
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
      rj_st4_{{ d.dtype }}(dst{{ d.index }}, base + u * 32 * kPack, dst{{ d.index }}_aligned, acc[u]);
{%- endfor %}
  }

  // Scalar tail: fewer than one hunk of elements, one per thread.
  for (rj_u64 i = n_hunks * kHunk + thread; i < n; i += n_threads) {
    {{ accum }} acc = rj_ld1_{{ srcs[0].dtype }}<rj_load_volatile>(src0, i);
{%- for s in srcs %}{% if s.index > 0 %}
    acc = {{ op_functor }}::apply(acc, rj_ld1_{{ s.dtype }}<rj_load_volatile>(src{{ s.index }}, i));
{%- endif %}{% endfor %}
{%- for d in dsts %}
    rj_st1_{{ d.dtype }}(dst{{ d.index }}, i, acc);
{%- endfor %}
  }
}
