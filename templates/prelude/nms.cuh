// ---- redjit prelude: nms ---------------------------------------------------
// Sort keys, the IoU test and the bit tricks of the NMS pipeline. The CPU twin
// (runtime/src/reference_nms.rs) computes the same keys and the same IoU, step
// by step, so kept lists match exactly.

// A key per box: ascending u64 order is score descending, then index ascending.
// The high word is the score's bits mapped to an order-preserving unsigned
// (negative: all bits flipped; positive: the sign bit set), then inverted for a
// descending order; -0.0 is taken as +0.0 (equal scores, as torch compares
// them). The low word is the box's index: keys are unique, so the order is
// total and any sort gives the same result. NaN scores are refused before.
__device__ __forceinline__ rj_u64 rj_nms_key(float score, rj_u32 index) {
  rj_u32 b = rj_f32_as_bits(score);
  if (b == 0x80000000u) b = 0u;
  const rj_u32 ascending = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ((rj_u64)(~ascending) << 32) | index;
}
// Sort padding: after every real key.
#define RJ_NMS_PAD 0xffffffffffffffffull

__device__ __forceinline__ bool rj_nms_finite(float x) {
  return (rj_f32_as_bits(x) & 0x7f800000u) != 0x7f800000u;
}
__device__ __forceinline__ float rj_sub_rn(float a, float b) {
  float r;
  asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// Inputs are finite (checked), so a comparison is max/min without NaN cases.
__device__ __forceinline__ float rj_nms_max(float a, float b) { return a > b ? a : b; }
__device__ __forceinline__ float rj_nms_min(float a, float b) { return a < b ? a : b; }

struct rj_nms_box { float x1, y1, x2, y2; };

// Whether box a suppresses box b (or b a: the test is symmetric) at threshold
// thr: IoU > thr, strictly, as torchvision. Areas are (x2 - x1) * (y2 - y1), no
// +1; the union is (area_a + area_b) - inter; a union of 0 or less (zero-area
// or inverted boxes) counts as IoU 0 (torchvision's 0/0 is NaN, which compares
// false as 0 > thr does for every threshold >= 0, the only ones accepted). Every
// step is an explicit .rn instruction: no FMA contraction, bit-exact with the twin.
__device__ __forceinline__ bool rj_nms_suppresses(const rj_nms_box& a, const rj_nms_box& b, float thr) {
  const float w = rj_nms_max(rj_sub_rn(rj_nms_min(a.x2, b.x2), rj_nms_max(a.x1, b.x1)), 0.0f);
  const float h = rj_nms_max(rj_sub_rn(rj_nms_min(a.y2, b.y2), rj_nms_max(a.y1, b.y1)), 0.0f);
  const float inter = rj_mul_rn(w, h);
  const float area_a = rj_mul_rn(rj_sub_rn(a.x2, a.x1), rj_sub_rn(a.y2, a.y1));
  const float area_b = rj_mul_rn(rj_sub_rn(b.x2, b.x1), rj_sub_rn(b.y2, b.y1));
  const float uni = rj_sub_rn(rj_add_rn(area_a, area_b), inter);
  const float iou = uni > 0.0f ? rj_div_rn(inter, uni) : 0.0f;
  return iou > thr;
}

__device__ __forceinline__ rj_nms_box rj_nms_load_box(const float* __restrict__ boxes, rj_u64 i) {
  return rj_nms_box{boxes[4 * i], boxes[4 * i + 1], boxes[4 * i + 2], boxes[4 * i + 3]};
}

// Relaxed 64-bit OR into global memory, nothing returned (the walk's removed
// bitset; every word has one writer block).
__device__ __forceinline__ void rj_red_or_u64(rj_u64* p, rj_u64 v) {
  asm volatile("red.global.or.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// A relaxed load at GPU scope: never a stale L1 line of a word other threads
// reds changed (the barrier before it orders those reds first).
__device__ __forceinline__ rj_u64 rj_ld_relaxed_u64(const rj_u64* p) {
  rj_u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// Relaxed 32-bit max into global memory (the first bad input's index, inverted).
__device__ __forceinline__ void rj_red_max_u32(rj_u32* p, rj_u32 v) {
  asm volatile("red.global.max.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Bitonic compare-exchange steps over a tile of kTile keys in shared memory, for
// the stages k = k_first..k_last (powers of two; each from j = k/2 down to 1, or
// only the steps j < kTile of a stage larger than the tile). The direction of a
// pair comes from its global position (base + i): ascending where bit k is 0.
template <int kTile, int kThreads>
__device__ __forceinline__ void rj_nms_bitonic_tile(rj_u64* s, rj_u64 base, rj_u64 k_first, rj_u64 k_last) {
  for (rj_u64 k = k_first; k <= k_last; k <<= 1) {
    for (rj_u32 j = (rj_u32)(k > (rj_u64)kTile ? kTile : k) >> 1; j > 0; j >>= 1) {
      for (rj_u32 p = threadIdx.x; p < kTile / 2; p += kThreads) {
        const rj_u32 i = (p / j) * 2 * j + (p % j);
        const rj_u32 l = i + j;
        const bool ascending = ((base + i) & k) == 0;
        const rj_u64 a = s[i], b = s[l];
        if ((a > b) == ascending) {
          s[i] = b;
          s[l] = a;
        }
      }
      __syncthreads();
    }
  }
}
