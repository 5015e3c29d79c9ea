// ---- redjit prelude: warp --------------------------------------------------
// Shuffles through PTX so no toolkit header is needed; full-warp masks only.
__device__ __forceinline__ float rj_shfl_xor(float v, int lane_mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(lane_mask));
  return r;
}
__device__ __forceinline__ float rj_shfl_down(float v, int delta) {
  float r;
  asm volatile("shfl.sync.down.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(delta));
  return r;
}
__device__ __forceinline__ float rj_shfl_idx(float v, int src_lane) {
  float r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(src_lane));
  return r;
}
