// ---- {{ name }} ----
// reduce_copy (seed 000): {{ srcs | length }} source(s) reduced in {{ accum }} with {{ op_functor }},
// written to {{ dsts | length }} destination(s){% if stochastic %} with stochastic rounding{% endif %}. Buffers:
{%- for s in srcs %}
//   src{{ s.index }}: {{ s.role }} {{ s.dtype }}, {{ s.pack_bytes }}-byte packs, {{ s.load }}
{%- endfor %}
{%- for d in dsts %}
//   dst{{ d.index }}: {{ d.role }} {{ d.dtype }}, {{ d.pack_bytes }}-byte packs
{%- endfor %}
//
// Work split (seed 000 section 4): a hunk is {{ elems_per_hunk }} elements
// (unroll {{ unroll }} x 32 lanes x {{ pack_elts }} elements); the grid's warps take hunks
// round-robin; in one unroll step the 32 lanes touch 32 consecutive packs, so each
// step is one fully coalesced transaction per buffer. Elements past the last
// whole hunk go to the tail{% if stochastic %}, in groups of 4 that share one Philox counter{% endif %}.
//
// {% if any_alignment %}A misaligned twin: each buffer is m bytes past a pack boundary, m a
// constant of this kernel, and keeps full-width accesses: aligned blocks, a
// neighbour-lane shuffle and a funnel shift (packs.cuh); a buffer with m = 0 takes
// the plain vector path.{% else %}The aligned kernel: unrolled straight-line vector code with all `unroll` packs
// of a source in flight at once.{% endif %} Aligned and misaligned loops are separate
// kernels: one loop with per-buffer checks inside made the compiler predicate both
// paths and, short of registers, wait on each load of the second source before
// issuing the next (seen in the f16 SASS), and carrying both loops doubled every
// kernel's NVRTC time. The helpers live in a namespace of the kernel's own, so
// several kernels can share one translation unit.
namespace {{ name }}_impl {
{% if not any_alignment %}
__device__ __forceinline__ void hunks_aligned(
{%- for s in srcs %}
    rj_u64 src{{ s.index }},
{%- endfor %}
{%- for d in dsts %}
    rj_u64 dst{{ d.index }},
{%- endfor %}
    const {{ op_functor }} op, rj_u64 sr_seed, rj_u64 sr_base,
    rj_u32 first_hunk, rj_u32 n_hunks, rj_u32 hunk_stride, rj_u32 lane) {
  const rj_u64 kPack = {{ pack_elts }};
  const rj_u64 kHunk = {{ elems_per_hunk }};
  for (rj_u32 hunk = first_hunk; hunk < n_hunks; hunk += hunk_stride) {
    const rj_u64 base = (rj_u64)hunk * kHunk + lane * kPack;
    {{ accum }} acc[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
      rj_ld4<rj_dtype_{{ srcs[0].dtype }}, {{ srcs[0].load }}>(src0, base + u * 32 * kPack, acc[u]);
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
      for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.pre(acc[u][e]);
{%- for s in srcs %}{% if s.index > 0 %}
    {
      {{ accum }} x[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
        rj_ld4<rj_dtype_{{ s.dtype }}, {{ s.load }}>(src{{ s.index }}, base + u * 32 * kPack, x[u]);
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
        for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.apply(acc[u][e], op.pre(x[u][e]));
    }
{%- endif %}{% endfor %}
    // Random bits are drawn pack by pack at the store, so only four are live.
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u) {
#pragma unroll
      for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.post(acc[u][e]);
{%- if stochastic %}
      // The launch took this loop only with sr_base % 4 == 0: one Philox call per
      // pack, its four words in element order. The counter passes through a
      // volatile asm, so this pack's Philox starts after the previous pack's
      // stores: interleaving all of them ran an 8-source unroll-8 kernel out of
      // registers.
      rj_u32 r[4];
      rj_philox4x32_10(sr_seed, rj_after_stores((sr_base + base + u * 32 * kPack) >> 2), r);
{%- endif %}
{%- for d in dsts %}
      rj_st4{{ store_suffix }}<rj_dtype_{{ d.dtype }}>(dst{{ d.index }}, base + u * 32 * kPack, acc[u]{% if stochastic %}, r{% endif %});
{%- endfor %}
    }
  }
}

{% else %}
__device__ __forceinline__ void hunks_any(
{%- for s in srcs %}
    rj_u64 src{{ s.index }}, rj_u32 src{{ s.index }}_m,
{%- endfor %}
{%- for d in dsts %}
    rj_u64 dst{{ d.index }}, rj_u32 dst{{ d.index }}_m,
{%- endfor %}
    const {{ op_functor }} op, rj_u64 sr_seed, rj_u64 sr_base,
    rj_u32 first_hunk, rj_u32 n_hunks, rj_u32 hunk_stride, rj_u32 lane) {
  const rj_u64 kPack = {{ pack_elts }};
  const rj_u64 kHunk = {{ elems_per_hunk }};
  for (rj_u32 hunk = first_hunk; hunk < n_hunks; hunk += hunk_stride) {
    const rj_u64 base = (rj_u64)hunk * kHunk + lane * kPack;
{%- if stochastic %}
    // Every pack's random words before the loads, so Philox overlaps their latency:
    // drawn at the store (as the aligned loop does), Philox, shuffles and funnel
    // shifts queued behind each other and this loop ran at 54 % of the aligned one;
    // drawn here, 66-84 % (H100, commit 4991e3f).
    rj_u32 rb[{{ unroll }}][4];
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u) rj_sr_bits4(sr_seed, sr_base, base + u * 32 * kPack, rb[u]);
{%- endif %}
    // A source's blocks: every step's aligned block, then lane 31's block past the
    // hunk. {% if load_all_first %}Every source's loads are issued before the first shuffle, which would
    // hold the next load until its block is back (the aligned loop keeps all of
    // them in flight the same way).{% else %}One source at a time: all sources' blocks at once would not fit
    // in registers.{% endif %}
{%- for s in srcs %}
    rj_u32 raw{{ s.index }}[{{ unroll }}][rj_dtype_{{ s.dtype }}::kWords], edge{{ s.index }}[rj_dtype_{{ s.dtype }}::kWords];
{%- endfor %}
{%- for s in srcs %}{% if load_all_first or s.index == 0 %}
    rj_ld4_blocks<rj_dtype_{{ s.dtype }}, {{ s.load }}>(src{{ s.index }}, base, 32 * kPack, src{{ s.index }}_m, lane, raw{{ s.index }}, edge{{ s.index }});
{%- endif %}{% endfor %}
    {{ accum }} acc[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u) rj_ld4_step<rj_dtype_{{ srcs[0].dtype }}>(src0_m, lane, u, raw0, edge0, acc[u]);
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
      for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.pre(acc[u][e]);
{%- for s in srcs %}{% if s.index > 0 %}
    {
{%- if not load_all_first %}
      rj_ld4_blocks<rj_dtype_{{ s.dtype }}, {{ s.load }}>(src{{ s.index }}, base, 32 * kPack, src{{ s.index }}_m, lane, raw{{ s.index }}, edge{{ s.index }});
{%- endif %}
      {{ accum }} x[{{ unroll }}][{{ pack_elts }}];
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u) rj_ld4_step<rj_dtype_{{ s.dtype }}>(src{{ s.index }}_m, lane, u, raw{{ s.index }}, edge{{ s.index }}, x[u]);
#pragma unroll
      for (int u = 0; u < {{ unroll }}; ++u)
#pragma unroll
        for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.apply(acc[u][e], op.pre(x[u][e]));
    }
{%- endif %}{% endfor %}
#pragma unroll
    for (int u = 0; u < {{ unroll }}; ++u) {
#pragma unroll
      for (int e = 0; e < {{ pack_elts }}; ++e) acc[u][e] = op.post(acc[u][e]);
{%- if stochastic %}
      const rj_u32 (&r)[4] = rb[u];
{%- endif %}
{%- for d in dsts %}
      rj_st4{{ store_suffix }}_any<rj_dtype_{{ d.dtype }}>(dst{{ d.index }}, base + u * 32 * kPack, dst{{ d.index }}_m, lane, acc[u]{% if stochastic %}, r{% endif %});
{%- endfor %}
    }
  }
}
{%- endif %}
}  // namespace {{ name }}_impl

// The bound says one block per SM suffices (minBlocks 1): without it ptxas aims at
// full occupancy (32 registers at 1024 threads, 64 at 512) and spilled the
// unroll-4 loops at 1024 and the unroll-8 loop at 512. Memory-level parallelism
// comes from the unrolled loads in flight, not from occupancy.
extern "C" __global__ void __launch_bounds__({{ max_threads }}, 1) {{ name }}(
{%- for s in srcs %}
    const void* __restrict__ src{{ s.index }}_ptr,
{%- endfor %}
{%- for d in dsts %}
    void* __restrict__ dst{{ d.index }}_ptr,
{%- endfor %}
    rj_u64 n, float op_arg, rj_u64 sr_seed, rj_u64 sr_base) {
  const rj_u64 kHunk = {{ elems_per_hunk }};
  const {{ op_functor }} op = {op_arg};
  // Each buffer's .global address{% if any_alignment %} and how far it sits past a pack boundary
  // (this kernel's placement: the launcher sends only launches that match it){% endif %}.
{%- for s in srcs %}
  const rj_u64 src{{ s.index }} = rj_cvta_global(src{{ s.index }}_ptr);
{%- if any_alignment %}
  const rj_u32 src{{ s.index }}_m = {{ s.m_bytes }};
{%- endif %}
{%- endfor %}
{%- for d in dsts %}
  const rj_u64 dst{{ d.index }} = rj_cvta_global(dst{{ d.index }}_ptr);
{%- if any_alignment %}
  const rj_u32 dst{{ d.index }}_m = {{ d.m_bytes }};
{%- endif %}
{%- endfor %}

  const rj_u64 thread = (rj_u64)blockIdx.x * blockDim.x + threadIdx.x;
  const rj_u64 n_threads = (rj_u64)gridDim.x * blockDim.x;
  // Hunk indices are 32-bit (64-bit loop arithmetic cost NVRTC a tenth of its
  // time): the launcher refuses n of 2^31 - 32 hunks or more.
{%- if any_alignment %}
  // The last pack goes to the tail, so the block each source's last step reads past
  // its hunk lies inside the buffer.
  const rj_u32 n_hunks = (rj_u32)(n >= {{ pack_elts }} ? (n - {{ pack_elts }}) / kHunk : 0);
{%- else %}
  const rj_u32 n_hunks = (rj_u32)(n / kHunk);
{%- endif %}
{%- if not any_alignment %}
  // The launcher sends a launch here only when every buffer is aligned{% if stochastic %} and the
  // packs each take one Philox counter (sr_base % 4 == 0){% endif %}; else to this kernel's _any twin.
  {{ name }}_impl::hunks_aligned(
{%- for s in srcs %}src{{ s.index }}, {% endfor %}
{%- for d in dsts %}dst{{ d.index }}, {% endfor %}op, sr_seed, sr_base, (rj_u32)(thread / 32), n_hunks, (rj_u32)(n_threads / 32), threadIdx.x % 32);
{%- else %}
  {{ name }}_impl::hunks_any(
{%- for s in srcs %}src{{ s.index }}, src{{ s.index }}_m, {% endfor %}
{%- for d in dsts %}dst{{ d.index }}, dst{{ d.index }}_m, {% endfor %}op, sr_seed, sr_base, (rj_u32)(thread / 32), n_hunks, (rj_u32)(n_threads / 32), threadIdx.x % 32);
{%- endif %}

  const rj_u64 tail = (rj_u64)n_hunks * kHunk;
{%- if stochastic %}
  // Tail: fewer than one hunk of elements, in groups of four that share a Philox
  // counter ((sr_base + i) / 4 = g), one group per thread: one call per group.
  const rj_u64 g_end = (sr_base + n + 3) / 4;
  for (rj_u64 g = (sr_base + tail) / 4 + thread; g < g_end; g += n_threads) {
    rj_u32 r[4];
    rj_philox4x32_10(sr_seed, g, r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const rj_u64 p = g * 4 + k;
      if (p < sr_base + tail || p >= sr_base + n) continue;
      const rj_u64 i = p - sr_base;
{%- else %}
  // Tail: fewer than one hunk of elements, one per thread.
  {
    for (rj_u64 i = tail + thread; i < n; i += n_threads) {
{%- endif %}
      {{ accum }} acc = op.pre(rj_ld1<rj_dtype_{{ srcs[0].dtype }}, {{ srcs[0].load }}>(src0, i));
{%- for s in srcs %}{% if s.index > 0 %}
      acc = op.apply(acc, op.pre(rj_ld1<rj_dtype_{{ s.dtype }}, {{ s.load }}>(src{{ s.index }}, i)));
{%- endif %}{% endfor %}
      acc = op.post(acc);
{%- for d in dsts %}
      rj_st1{{ store_suffix }}<rj_dtype_{{ d.dtype }}>(dst{{ d.index }}, i, acc{% if stochastic %}, r[k]{% endif %});
{%- endfor %}
    }
  }
}