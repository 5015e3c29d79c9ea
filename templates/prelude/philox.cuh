// ---- redjit prelude: philox ------------------------------------------------
// Philox4x32-10 (Salmon et al., SC'11; Random123's constants). Stochastic
// rounding takes the random bits of element i from lane (base + i) % 4 of
// philox(key = seed, counter = (base + i) / 4), so the output depends only on
// (inputs, seed, base, i): never on unroll, grid, block or alignment path.
__device__ __forceinline__ rj_u32 rj_mulhi(rj_u32 a, rj_u32 b) {
  rj_u32 r;
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ void rj_philox4x32_10(rj_u64 seed, rj_u64 counter, rj_u32 (&out)[4]) {
  rj_u32 c0 = (rj_u32)counter, c1 = (rj_u32)(counter >> 32), c2 = 0, c3 = 0;
  rj_u32 k0 = (rj_u32)seed, k1 = (rj_u32)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const rj_u32 lo0 = 0xD2511F53u * c0, hi0 = rj_mulhi(0xD2511F53u, c0);
    const rj_u32 lo1 = 0xCD9E8D57u * c2, hi1 = rj_mulhi(0xCD9E8D57u, c2);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}
// x, but only once the stores written before it are issued (a volatile asm stays
// in order with the stores, which are volatile asm too).
__device__ __forceinline__ rj_u64 rj_after_stores(rj_u64 x) {
  rj_u64 y;
  asm volatile("mov.b64 %0, %1;" : "=l"(y) : "l"(x));
  return y;
}
// The random words of elements i .. i+3: one Philox call when base + i is a
// multiple of 4, else two (the pack straddles two counters).
__device__ __forceinline__ void rj_sr_bits4(rj_u64 seed, rj_u64 base, rj_u64 i, rj_u32 (&r)[4]) {
  const rj_u64 p = base + i;
  rj_u32 a[4];
  rj_philox4x32_10(seed, p >> 2, a);
  const rj_u32 shift = (rj_u32)(p & 3);
  if (shift == 0) {
    r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; r[3] = a[3];
  } else {
    rj_u32 b[4];
    rj_philox4x32_10(seed, (p >> 2) + 1, b);
    rj_u32 w[8] = {a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]};
#pragma unroll
    for (int k = 0; k < 4; ++k) r[k] = (shift == 1) ? w[k + 1] : (shift == 2) ? w[k + 2] : w[k + 3];
  }
}
