// ---- redjit prelude: ops ---------------------------------------------------
// One functor per reduction operator, all with the same contract:
//   static float apply(float acc, float x)   -- combine one element.
struct rj_op_sum {
  static __device__ __forceinline__ float apply(float a, float b) { return a + b; }
};
