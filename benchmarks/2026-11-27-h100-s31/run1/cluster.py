# Can a softmax over 4 long bf16 rows (issue 11's 4x1000003 cell) pass its
# one exchange cheaper inside a thread-block cluster? Each row is one cluster
# of 16 blocks (the non-portable size, sm_90), a block an SM, its chunk held in
# registers as raw 16-byte vectors; the blocks swap their (max, sum) through
# distributed shared memory and one cluster barrier, where the split kernels
# publish to global memory and wait on every block of the row. Against the same
# layout exchanging through global memory (a count a row), and a copy.
# Probe, not redjit code: CuPy RawKernels, timed as floor.py (session 30) and
# redjit's bench time (a hold kernel ahead; median of per-launch event pairs;
# buffers rotated over > 2x L2). Rows of 1000008: on the 16-byte grid.
import sys, statistics
import cupy as cp
import numpy as np

SRC = r'''
typedef unsigned long long u64;
#define INFINITY __int_as_float(0x7f800000)
extern "C" __global__ void hold(u64 ns) {
  u64 t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
__device__ __forceinline__ uint4 ldnc(const uint4* p) {
  uint4 v; asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v;
}
extern "C" __global__ void __launch_bounds__(512) copy16(const uint4* __restrict__ x, uint4* __restrict__ y, u64 n) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) y[i] = ldnc(x + i);
}
__device__ __forceinline__ float lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
// The same, as volatile asm: each pass widens the raw words again rather than
// keeping 64 widened floats live across the exchange (which spilled).
__device__ __forceinline__ float vlo(unsigned w) { unsigned r; asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(w)); return __uint_as_float(r); }
__device__ __forceinline__ float vhi(unsigned w) { unsigned r; asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(w)); return __uint_as_float(r); }
__device__ __forceinline__ float2 merge(float2 a, float2 b) {
  const float m = fmaxf(a.x, b.x);
  return make_float2(m, m == -INFINITY ? 0.f : a.y * __expf(a.x - m) + b.y * __expf(b.x - m));
}
__device__ __forceinline__ float2 warp_merge(float2 s) {
  for (int o = 16; o; o >>= 1) s = merge(s, make_float2(__shfl_xor_sync(~0u, s.x, o), __shfl_xor_sync(~0u, s.y, o)));
  return s;
}
__device__ __forceinline__ unsigned cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void st_cluster(const void* local, unsigned rank, float2 v) {
  unsigned a = (unsigned)__cvta_generic_to_shared(local), r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" :: "r"(r), "f"(v.x), "f"(v.y) : "memory");
}
// A row of vrow 16-byte vectors per S blocks; block rank c takes vectors
// [c*per, (c+1)*per), K a thread. CLUSTER: the S blocks are one cluster and
// swap states through DSMEM; else a count a row in global memory.
template <int K, int T, int S, bool CLUSTER> __device__ void row_softmax(const uint4* __restrict__ x, uint4* __restrict__ y, u64 vrow, float2* part, unsigned* cnt, unsigned target) {
  const unsigned row = blockIdx.x / S, c = CLUSTER ? cluster_rank() : blockIdx.x % S;
  if (CLUSTER) cluster_arrive_relaxed();
  const unsigned per = ((unsigned)vrow + S - 1) / S;
  const unsigned first = c * per + threadIdx.x;
  const int left = (int)min(c * per + per, (unsigned)vrow) - (int)first;  // this thread's vectors: k * T < left
  const uint4* xp = x + row * vrow + first;
  uint4 v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = k * T < left ? ldnc(xp + k * T) : make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
  unsigned m2 = 0xff80ff80u;  // the max as a bf16 pair: no widened copy of the chunk
#pragma unroll
  for (int k = 0; k < K; ++k) { const unsigned* w = &v[k].x;
#pragma unroll
    for (int j = 0; j < 4; ++j) asm("max.bf16x2 %0, %0, %1;" : "+r"(m2) : "r"(w[j])); }
  float mx = fmaxf(lo(m2), hi(m2));
  float sm = 0.f;
  if (mx != -INFINITY) {
#pragma unroll
    for (int k = 0; k < K; ++k) { const unsigned* w = &v[k].x;
#pragma unroll
      for (int j = 0; j < 4; ++j) sm += __expf(lo(w[j]) - mx) + __expf(hi(w[j]) - mx); }
  }
  __shared__ float2 red[32];
  __shared__ float2 parts[S];
  __shared__ float2 tot;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = T / 32;
  float2 s = warp_merge(make_float2(mx, sm));
  if (lane == 0) red[warp] = s;
  __syncthreads();
  if (CLUSTER) {
    if (warp == 0) s = warp_merge(lane < warps ? red[lane] : make_float2(-INFINITY, 0.f));
    cluster_wait();
    if (warp == 0 && lane < S) st_cluster(&parts[c], lane, s);
    cluster_arrive();
    cluster_wait();
    s = warp_merge(lane < S ? parts[lane] : make_float2(-INFINITY, 0.f));
  } else {
    if (warp == 0) {
      s = warp_merge(lane < warps ? red[lane] : make_float2(-INFINITY, 0.f));
      if (lane == 0) {
        part[row * S + c] = s;
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(cnt + row * 32) : "memory");
      }
      unsigned n;
      do { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(n) : "l"(cnt + row * 32) : "memory"); } while (__any_sync(~0u, n < target));
      s = make_float2(-INFINITY, 0.f);
      for (unsigned b = lane; b < S; b += 32) s = merge(s, __ldcg(part + row * S + b));
      s = warp_merge(s);
      if (lane == 0) tot = s;
    }
    __syncthreads();
    s = tot;
  }
  const float gm = s.x, inv = 1.f / s.y;
  uint4* yp = y + row * vrow + first;
#pragma unroll
  for (int k = 0; k < K; ++k) { if (k * T < left) {
    const unsigned* w = &v[k].x; uint4 o; unsigned* ow = &o.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) { float a = __expf(vlo(w[j]) - gm) * inv, b = __expf(vhi(w[j]) - gm) * inv; unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a)); ow[j] = r; }
    yp[k * T] = o; } }
}
extern "C" __global__ void __cluster_dims__(16, 1, 1) __launch_bounds__(1024, 1) clus16_1024(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<8, 1024, 16, true>(x, y, vrow, part, cnt, t); }
extern "C" __global__ void __cluster_dims__(16, 1, 1) __launch_bounds__(512, 1) clus16_512(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<16, 512, 16, true>(x, y, vrow, part, cnt, t); }
extern "C" __global__ void __launch_bounds__(1024, 1) glob16_1024(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<8, 1024, 16, false>(x, y, vrow, part, cnt, t); }
extern "C" __global__ void __launch_bounds__(512, 2) glob33_512(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<8, 512, 33, false>(x, y, vrow, part, cnt, t); }
extern "C" __global__ void __launch_bounds__(512, 2) glob62_512(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<4, 512, 62, false>(x, y, vrow, part, cnt, t); }
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(1024, 1) clus8_1024(const uint4* x, uint4* y, u64 vrow, float2* part, unsigned* cnt, unsigned t) { row_softmax<8, 1024, 8, true>(x, y, vrow, part, cnt, t); }
'''

mod = cp.RawModule(code=SRC, options=('-std=c++17', '-arch=sm_90', '--use_fast_math'))
hold = mod.get_function('hold')
dev = cp.cuda.Device()
sms = dev.attributes['MultiProcessorCount']
l2 = dev.attributes['L2CacheSize']
ROWS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
COLS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000008
assert COLS % 8 == 0
n_el = ROWS * COLS
nbytes = n_el * 2
sets = max(2, -(-3 * l2 // (2 * nbytes)))
rng = np.random.default_rng(1)
xs = []
for _ in range(sets):
    xf = (rng.standard_normal(n_el, dtype=np.float32) * 3).astype(np.float32)
    xs.append(cp.asarray((xf.view(np.uint32) >> 16).astype(np.uint16)))
ys = [cp.empty(n_el, dtype=cp.uint16) for _ in range(sets)]
cnt = cp.zeros(ROWS * 32 + 64, dtype=cp.uint32)
part = cp.zeros(ROWS * 64 * 2, dtype=cp.float32)
ITERS = 60
print(f"GPU {dev.pci_bus_id} {sms} SMs, L2 {l2>>20} MB; {ROWS}x{COLS} bf16, {nbytes/1e6:.1f} MB each way, {sets} sets")

def timed(launch):
    times = []
    for it in range(ITERS + 5):
        s = it % sets
        hold((1, 1, 1), (1, 1, 1), (np.uint64(200_000),))
        e0 = cp.cuda.Event(); e1 = cp.cuda.Event()
        e0.record(); launch(it, s); e1.record(); e1.synchronize()
        if it >= 5: times.append(cp.cuda.get_elapsed_time(e0, e1) * 1000)
    return statistics.median(times), min(times)

def report(name, med, mn):
    print(f"{name:40s} median {med:7.2f} us  min {mn:7.2f} us  {2*nbytes/med/1e3:7.1f} GB/s", flush=True)

nvec = n_el // 8
f = mod.get_function('copy16')
for g in (sms * 4,):
    report(f"copy16 {g}x512", *timed(lambda it, s: f((g,), (512,), (xs[s], ys[s], np.uint64(nvec)))))
assert bool((ys[0] == xs[0]).all())

def check_softmax():
    x = xs[0].get().astype(np.uint32) << 16
    xf = x.view(np.float32).astype(np.float64).reshape(ROWS, COLS)
    e = np.exp(xf - xf.max(axis=1, keepdims=True)); ref = e / e.sum(axis=1, keepdims=True)
    got = (ys[0].get().astype(np.uint32) << 16).view(np.float32).reshape(ROWS, COLS)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(f"   max rel err {err:.2e}", flush=True)

vrow = COLS // 8
NON_PORTABLE = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
for name, S, th, K in (("clus16_1024", 16, 1024, 8), ("clus16_512", 16, 512, 16), ("clus8_1024", 8, 1024, 8),
                       ("glob16_1024", 16, 1024, 8), ("glob33_512", 33, 512, 8), ("glob62_512", 62, 512, 4)):
    k = mod.get_function(name)
    if -(-vrow // S) > K * th:
        print(f"skip {name}: a row of {vrow} vectors over {S} blocks of {K * th}"); continue
    if name.startswith("clus"):
        try:
            cp.cuda.driver.funcSetAttribute(k.kernel.ptr, NON_PORTABLE, 1)
        except Exception as e:
            print(f"   {name}: non-portable attribute: {e}")
    g = ROWS * S
    print(f"   {name}: {k.num_regs} registers, {g} blocks of {th}, local {k.local_size_bytes} B", flush=True)
    cnt.fill(0)
    st = {'n': 0}
    def launch(it, s):
        st['n'] += 1
        k((g,), (th,), (xs[s], ys[s], np.uint64(vrow), part, cnt, np.uint32(st['n'] * S)))
    try:
        report(f"{name} {g}x{th}", *timed(launch))
        check_softmax()
    except Exception as e:
        print(f"   {name} failed: {e}")
