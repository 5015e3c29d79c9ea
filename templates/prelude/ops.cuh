// ---- redjit prelude: ops ---------------------------------------------------
// One functor per reduction operator, all with the same contract, so the kernel
// template never special-cases an op:
//   float pre(float x) const           -- each source element, before combining
//   float apply(float acc, float x) const
//   float post(float acc) const        -- once, before the store
//   float arg                          -- the host scalar (premulsum, avg)
// Products and quotients go through explicit .rn PTX so no add is fused into an
// FMA: the CPU twin rounds every step the same way, bit for bit.
__device__ __forceinline__ float rj_mul_rn(float a, float b) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rj_div_rn(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float rj_add_rn(float a, float b) {
  float r;
  asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

struct rj_op_sum {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return x; }
  __device__ __forceinline__ float apply(float a, float b) const { return rj_add_rn(a, b); }
  __device__ __forceinline__ float post(float a) const { return a; }
};
struct rj_op_prod {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return x; }
  __device__ __forceinline__ float apply(float a, float b) const { return rj_mul_rn(a, b); }
  __device__ __forceinline__ float post(float a) const { return a; }
};
// min.NaN / max.NaN: NaN if either input is NaN (PyTorch's and NCCL's semantics
// for floats), canonical NaN bits.
struct rj_op_min {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return x; }
  __device__ __forceinline__ float apply(float a, float b) const {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
  __device__ __forceinline__ float post(float a) const { return a; }
};
struct rj_op_max {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return x; }
  __device__ __forceinline__ float apply(float a, float b) const {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
  __device__ __forceinline__ float post(float a) const { return a; }
};
struct rj_op_premulsum {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return rj_mul_rn(x, arg); }
  __device__ __forceinline__ float apply(float a, float b) const { return rj_add_rn(a, b); }
  __device__ __forceinline__ float post(float a) const { return a; }
};
struct rj_op_avg {
  float arg;
  __device__ __forceinline__ float pre(float x) const { return x; }
  __device__ __forceinline__ float apply(float a, float b) const { return rj_add_rn(a, b); }
  __device__ __forceinline__ float post(float a) const { return rj_div_rn(a, arg); }
};
