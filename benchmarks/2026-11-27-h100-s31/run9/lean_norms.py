# What a lean one-exchange kernel reaches for the 16-bit norms over 4 long rows
# (issue 11's 4x1000003 cells), against their 85 % bars: RMS norm and layer norm,
# with and without the residual add, bf16, rows of 1000008 (on the 16-byte grid).
# Each block takes one chunk of a row (248 blocks, one wave, no ticket), loads x
# (and the residual: h = x + residual rounded to bf16, stored at once), publishes
# its sums with a count a row, waits for its row, then loads the weight (and bias)
# and stores y. Probe, not redjit code: CuPy RawKernels, timed as session 30's
# floor.py and redjit's bench (a hold kernel ahead; median of per-launch event
# pairs; buffers rotated over > 2x L2); bytes counted as redjit's bench counts them
# (every row stream, the weight and bias once).
import sys, statistics
import cupy as cp
import numpy as np

SRC = r'''
typedef unsigned long long u64;
extern "C" __global__ void hold(u64 ns) {
  u64 t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
__device__ __forceinline__ uint4 ldnc(const uint4* p) {
  uint4 v; asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v;
}
__device__ __forceinline__ uint4 ldcg(const uint4* p) {
  uint4 v; asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v;
}
extern "C" __global__ void __launch_bounds__(512) copy16(const uint4* __restrict__ x, uint4* __restrict__ y, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) y[i] = ldnc(x + i);
}
__device__ __forceinline__ float lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ unsigned pk(float a, float b) { unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a)); return r; }
// LN: sums of h and h^2; RMS: h^2 only. K vectors of 8 a thread, T threads.
template <int K, int T, bool LN, bool RES>
__device__ void lean_norm(const uint4* __restrict__ x, const uint4* __restrict__ res, const uint4* __restrict__ w, const uint4* __restrict__ b,
                          uint4* __restrict__ y, uint4* __restrict__ h, u64 vrow, unsigned splits, float2* part, unsigned* cnt, unsigned target, float cols) {
  const unsigned row = blockIdx.x / splits, chunk = blockIdx.x % splits;
  const unsigned per = ((unsigned)vrow + splits - 1) / splits;
  const unsigned first = chunk * per + threadIdx.x;
  const int left = (int)min(chunk * per + per, (unsigned)vrow) - (int)first;
  const u64 at = row * vrow + first;
  uint4 v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = k * T < left ? ldnc(x + at + k * T) : make_uint4(0, 0, 0, 0);
  if (RES) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (k * T < left) {
        const uint4 r = ldnc(res + at + k * T);
        unsigned* a = &v[k].x; const unsigned* c = &r.x;
#pragma unroll
        for (int j = 0; j < 4; ++j) a[j] = pk(lo(a[j]) + lo(c[j]), hi(a[j]) + hi(c[j]));
        h[at + k * T] = v[k];
      }
    }
  }
  float s1 = 0.f, s2 = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) { const unsigned* a = &v[k].x;
#pragma unroll
    for (int j = 0; j < 4; ++j) { const float p = lo(a[j]), q = hi(a[j]); s1 += p + q; s2 = fmaf(p, p, fmaf(q, q, s2)); } }
  __shared__ float2 red[32];
  __shared__ float2 tot;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int o = 16; o; o >>= 1) { s1 += __shfl_xor_sync(~0u, s1, o); s2 += __shfl_xor_sync(~0u, s2, o); }
  if (lane == 0) red[warp] = make_float2(s1, s2);
  __syncthreads();
  if (warp == 0) {
    float2 p = lane < T / 32 ? red[lane] : make_float2(0.f, 0.f);
    s1 = p.x; s2 = p.y;
    for (int o = 16; o; o >>= 1) { s1 += __shfl_xor_sync(~0u, s1, o); s2 += __shfl_xor_sync(~0u, s2, o); }
    if (lane == 0) {
      part[row * splits + chunk] = make_float2(s1, s2);
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(cnt + row * 32) : "memory");
    }
    unsigned c;
    do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(c) : "l"(cnt + row * 32) : "memory"); } while (__any_sync(~0u, c < target));
    s1 = 0.f; s2 = 0.f;
    for (unsigned q = lane; q < splits; q += 32) { const float2 t = __ldcg(part + row * splits + q); s1 += t.x; s2 += t.y; }
    for (int o = 16; o; o >>= 1) { s1 += __shfl_xor_sync(~0u, s1, o); s2 += __shfl_xor_sync(~0u, s2, o); }
    if (lane == 0) {
      const float mean = LN ? s1 / cols : 0.f;
      const float var = LN ? fmaxf(s2 / cols - mean * mean, 0.f) : s2 / cols;
      tot = make_float2(mean, rsqrtf(var + 1e-5f));
    }
  }
  __syncthreads();
  const float mean = tot.x, rstd = tot.y;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (k * T < left) {
      const uint4 wv = ldnc(w + first + k * T);
      uint4 bv = make_uint4(0, 0, 0, 0);
      if (LN) bv = ldnc(b + first + k * T);
      const unsigned* a = &v[k].x; const unsigned* ww = &wv.x; const unsigned* bb = &bv.x;
      uint4 o; unsigned* oo = &o.x;
#pragma unroll
      for (int j = 0; j < 4; ++j) oo[j] = pk(fmaf((lo(a[j]) - mean) * rstd, lo(ww[j]), lo(bb[j])), fmaf((hi(a[j]) - mean) * rstd, hi(ww[j]), hi(bb[j])));
      y[at + k * T] = o;
    }
  }
}
#define LEAN(NAME, LN, RES) extern "C" __global__ void __launch_bounds__(512, 2) NAME(const uint4* x, const uint4* r, const uint4* w, const uint4* b, uint4* y, uint4* h, u64 vrow, unsigned splits, float2* part, unsigned* cnt, unsigned t, float cols) { lean_norm<4, 512, LN, RES>(x, r, w, b, y, h, vrow, splits, part, cnt, t, cols); }
LEAN(lean_rms, false, false)
LEAN(lean_rms_res, false, true)
LEAN(lean_ln, true, false)
LEAN(lean_ln_res, true, true)
'''

mod = cp.RawModule(code=SRC, options=('-std=c++17', '-arch=sm_90', '--use_fast_math'))
hold = mod.get_function('hold')
dev = cp.cuda.Device()
sms = dev.attributes['MultiProcessorCount']
l2 = dev.attributes['L2CacheSize']
ROWS = 4
COLS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000008
assert COLS % 8 == 0
n_el = ROWS * COLS
sets = max(2, -(-3 * l2 // (2 * n_el * 2 * 4)))
rng = np.random.default_rng(1)
def bf16(a):
    # Round to nearest even, as the kernel's cvt.rn (finite values only).
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    return cp.asarray(((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16))
def as_f64(u):
    return (u.get().astype(np.uint32) << 16).view(np.float32).astype(np.float64)
xs = [bf16(rng.standard_normal(n_el)) for _ in range(sets)]
rs = [bf16(rng.standard_normal(n_el)) for _ in range(sets)]
ys = [cp.empty(n_el, dtype=cp.uint16) for _ in range(sets)]
hs = [cp.empty(n_el, dtype=cp.uint16) for _ in range(sets)]
w = bf16(1 + 0.1 * rng.standard_normal(COLS)); b = bf16(0.1 * rng.standard_normal(COLS))
cnt = cp.zeros(ROWS * 32 + 64, dtype=cp.uint32)
part = cp.zeros(ROWS * 4096 * 2, dtype=cp.float32)
ITERS = 60
print(f"GPU {dev.pci_bus_id} {sms} SMs, L2 {l2>>20} MB; {ROWS}x{COLS} bf16, {sets} sets")

def timed(launch):
    times = []
    for it in range(ITERS + 5):
        s = it % sets
        hold((1, 1, 1), (1, 1, 1), (np.uint64(200_000),))
        e0 = cp.cuda.Event(); e1 = cp.cuda.Event()
        e0.record(); launch(it, s); e1.record(); e1.synchronize()
        if it >= 5: times.append(cp.cuda.get_elapsed_time(e0, e1) * 1000)
    return statistics.median(times), min(times)

f = mod.get_function('copy16')
# Copies over the rotated sets: x's bytes (16 MB moved), and x with the residual
# as one buffer of twice the elements (xs[s] and rs[s] are apart: two launches).
med, mn = timed(lambda it, s: f((sms * 4,), (512,), (xs[s], ys[s], np.uint64(n_el // 8))))
print(f"copy16 of {2 * n_el * 2 / 1e6:.1f} MB moved: median {med:.2f} us  min {mn:.2f} us  {2 * n_el * 2 / med / 1e3:.1f} GB/s", flush=True)
big = [cp.empty(2 * n_el, dtype=cp.uint16) for _ in range(sets)]
bigy = [cp.empty(2 * n_el, dtype=cp.uint16) for _ in range(sets)]
med, mn = timed(lambda it, s: f((sms * 4,), (512,), (big[s], bigy[s], np.uint64(2 * n_el // 8))))
print(f"copy16 of {4 * n_el * 2 / 1e6:.1f} MB moved: median {med:.2f} us  min {mn:.2f} us  {4 * n_el * 2 / med / 1e3:.1f} GB/s", flush=True)
del big, bigy

vrow = COLS // 8
for name, ln, res in (("lean_rms", False, False), ("lean_rms_res", False, True), ("lean_ln", True, False), ("lean_ln_res", True, True)):
    k = mod.get_function(name)
    splits = -(-vrow // (4 * 512))
    g = ROWS * splits
    occ = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, 512, 0)
    print(f"   {name}: {k.num_regs} registers, local {k.local_size_bytes} B, {occ} blocks an SM, {splits} splits a row, {g} blocks", flush=True)
    if occ * sms < g: print("   not one wave: skipped"); continue
    cnt.fill(0)
    st = {'n': 0}
    def launch(it, s):
        st['n'] += 1
        k((g,), (512,), (xs[s], rs[s], w, b, ys[s], hs[s], np.uint64(vrow), np.uint32(splits), part, cnt, np.uint32(st['n'] * splits), np.float32(COLS)))
    med, mn = timed(launch)
    nbytes = (4 if res else 2) * n_el * 2 + (2 if ln else 1) * COLS * 2
    print(f"{name:14s} median {med:7.2f} us  min {mn:7.2f} us  {nbytes / med / 1e3:7.1f} GB/s ({nbytes / 1e6:.1f} MB)", flush=True)
    hx = as_f64(xs[0]).reshape(ROWS, COLS)
    if res:
        hx = as_f64(bf16((hx + as_f64(rs[0]).reshape(ROWS, COLS)).ravel())).reshape(ROWS, COLS)
        assert np.array_equal(as_f64(hs[0]).reshape(ROWS, COLS), hx), "h"
    mean = hx.mean(axis=1, keepdims=True) if ln else 0.0
    var = hx.var(axis=1, keepdims=True) if ln else (hx * hx).mean(axis=1, keepdims=True)
    ref = (hx - mean) / np.sqrt(var + 1e-5) * as_f64(w) + (as_f64(b) if ln else 0.0)
    err = np.abs(as_f64(ys[0]).reshape(ROWS, COLS) - ref).max()
    print(f"   max abs err {err:.3e}", flush=True)
