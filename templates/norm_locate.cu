{#- A row's (or chunk's) place in each buffer, for the norm.cu template's
    functions of (a, r, first, cols, lane): xr, outr (and resr, rout) the row's
    first element in each buffer, vec (and wvec for weight and bias) whether
    its whole packs move as vector accesses, c its chunk. #}
  const rj_u64 off = r * a.ld;
  const rj_u64 xr = a.x + off * T::kBytes, outr = a.out + off * TO::kBytes;
{%- if residual %}
  const rj_u64 resr = a.res + off * T::kBytes, rout = a.res_out + off * T::kBytes;
{%- endif %}
{%- if general and layout == "split" %}
  // The row's offset from the pack grid: whole vector accesses when every
  // stream of the row shares it.
  const rj_u32 shift = (rj_u32)(xr / T::kBytes % 4);
  bool vec = outr / TO::kBytes % 4 == shift;
{%- if residual %}
  vec = vec && resr / T::kBytes % 4 == shift && rout / T::kBytes % 4 == shift;
{%- endif %}
{%- if not softmax %}
  // Weight and bias, indexed by column, on the grid where their offset is the row's.
  const bool wvec = vec && a.w / T::kBytes % 4 == shift && (a.b == 0 || a.b / T::kBytes % 4 == shift);
{%- endif %}
  const rj_chunk<kLanes, kWhole, true> c{vec ? first - shift : first, cols, lane};
{%- elif general %}
  // A row's packs start at its first element: vector accesses where every
  // buffer of the row is on the pack grid (the split twins also take rows off it).
  bool vec = xr % (4 * T::kBytes) == 0 && outr % (4 * TO::kBytes) == 0;
{%- if residual %}
  vec = vec && resr % (4 * T::kBytes) == 0 && rout % (4 * T::kBytes) == 0;
{%- endif %}
{%- if not softmax %}
  vec = vec && a.w % (4 * T::kBytes) == 0 && a.b % (4 * T::kBytes) == 0;
  const bool wvec = vec;
{%- endif %}
  const rj_chunk<kLanes, kWhole> c{first, cols, lane};
{%- else %}
  // Whole packs: the launcher checked every buffer's alignment, ld and cols.
  const bool vec = true;
{%- if not softmax %}
  const bool wvec = true;
{%- endif %}
  const rj_chunk<kLanes, kWhole> c{first, cols, lane};
{%- endif %}