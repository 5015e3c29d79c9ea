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
// Two hunk loops. The common case, every buffer aligned, is straight-line vector
// code with all `unroll` loads of a source in flight at once. Any misaligned
// buffer sends the launch to the second loop, which checks alignment per buffer
// and handles one pack at a time: kept apart, and not unrolled, because one
// unrolled loop with the checks inside made the compiler predicate both paths
// and, short of registers, wait on each load of the second source before issuing
// the next (seen in the f16 SASS), and because unrolling it cost 40 % of the
// kernel's NVRTC time. The helpers live in a namespace of the kernel's own, so
// several kernels can share one translation unit.
namespace {{ name }}_impl {

__device__ __forceinline__ void rj_hunks_aligned(
{%- for s in srcs %}
    rj_u64 src{{ s.index }},
{%- endfor %}
{%- for d in dsts %}
    rj_u64 dst{{ d.index }},
{%- endfor %}
    rj_u64 first_hunk, rj_u64 n_hunks, rj_u64 hunk_stride, rj_u64 lane) {
  const rj_u64 kPack = {{ pack_elts }};
  const rj_u64 kHunk = {{ elems_per_hunk }};
  for (rj_u64 hunk = first_hunk; hunk < n_hunks; hunk += hunk_stride) {
    const rj_u64 base = hunk * kHunk + lane * kPack;
    {{ accum }} acc[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
      rj_ld4_{{ srcs[0].dtype }}<rj_load_volatile>(src0, base + u * 32 * kPack, true, acc[u]);
{%- for s in srcs %}{% if s.index > 0 %}
    {
      {{ accum }} x[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
        rj_ld4_{{ s.dtype }}<rj_load_volatile>(src{{ s.index }}, base + u * 32 * kPack, true, x[u]);
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
        for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = {{ op_functor }}::apply(acc[u][e], x[u][e]);
    }
{%- endif %}{% endfor %}
{%- for d in dsts %}
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
      rj_st4_{{ d.dtype }}(dst{{ d.index }}, base + u * 32 * kPack, true, acc[u]);
{%- endfor %}
  }
}

__device__ __forceinline__ void rj_hunks_any(
{%- for s in srcs %}
    rj_u64 src{{ s.index }}, bool src{{ s.index }}_aligned,
{%- endfor %}
{%- for d in dsts %}
    rj_u64 dst{{ d.index }}, bool dst{{ d.index }}_aligned,
{%- endfor %}
    rj_u64 first_hunk, rj_u64 n_hunks, rj_u64 hunk_stride, rj_u64 lane) {
  const rj_u64 kPack = {{ pack_elts }};
  const rj_u64 kHunk = {{ elems_per_hunk }};
  for (rj_u64 hunk = first_hunk; hunk < n_hunks; hunk += hunk_stride) {
#pragma unroll 1
    for (int u = 0; u < {{ unroll }}; ++u) {
      const rj_u64 i = hunk * kHunk + lane * kPack + u * 32 * kPack;
      {{ accum }} acc[{{ pack_elts }}];
      rj_ld4_{{ srcs[0].dtype }}<rj_load_volatile>(src0, i, src0_aligned, acc);
{%- for s in srcs %}{% if s.index > 0 %}
      {
        {{ accum }} x[{{ pack_elts }}];
        rj_ld4_{{ s.dtype }}<rj_load_volatile>(src{{ s.index }}, i, src{{ s.index }}_aligned, x);
#pragma unroll
        for (int e = 0; e < {{ pack_elts }}; ++e) acc[e] = {{ op_functor }}::apply(acc[e], x[e]);
      }
{%- endif %}{% endfor %}
{%- for d in dsts %}
      rj_st4_{{ d.dtype }}(dst{{ d.index }}, i, dst{{ d.index }}_aligned, acc);
{%- endfor %}
    }
  }
}

}  // namespace {{ name }}_impl

// A bound below 1024 also says one block per SM suffices (minBlocks 1): without it
// ptxas still aimed at 64 registers and spilled the unroll-8 loop.
extern "C" __global__ void __launch_bounds__({{ max_threads }}{% if max_threads < 1024 %}, 1{% endif %}) {{ name }}(
{%- for s in srcs %}
    const void* __restrict__ src{{ s.index }}_ptr,
{%- endfor %}
{%- for d in dsts %}
    void* __restrict__ dst{{ d.index }}_ptr,
{%- endfor %}
    rj_u64 n) {
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
  const rj_u64 n_hunks = n / kHunk;
  const bool all_aligned = true{% for s in srcs %} && src{{ s.index }}_aligned{% endfor %}{% for d in dsts %} && dst{{ d.index }}_aligned{% endfor %};
  if (all_aligned)
    {{ name }}_impl::rj_hunks_aligned(
{%- for s in srcs %}src{{ s.index }}, {% endfor %}
{%- for d in dsts %}dst{{ d.index }}, {% endfor %}thread / 32, n_hunks, n_threads / 32, threadIdx.x % 32);
  else
    {{ name }}_impl::rj_hunks_any(
{%- for s in srcs %}src{{ s.index }}, src{{ s.index }}_aligned, {% endfor %}
{%- for d in dsts %}dst{{ d.index }}, dst{{ d.index }}_aligned, {% endfor %}thread / 32, n_hunks, n_threads / 32, threadIdx.x % 32);

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
