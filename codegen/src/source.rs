//! What rendering makes: a kernel's (or a batch's) CUDA C++ text and the
//! symbols it defines. A leaf: the specs and the renderer both name it.

/// Generated CUDA C++ source of one or more kernels: deterministic text,
/// header-free.
///
/// ```
/// use redjit_codegen::{KernelSpec, ReduceCopySpec};
///
/// let src = ReduceCopySpec::default().render().unwrap();
/// assert_eq!(src.name, "reduce_copy_u4_f32_bf16_TA_T_sum_rn");
/// assert_eq!(src.kernels, [src.name.clone()]);
/// assert!(src.code.contains("extern \"C\" __global__"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// The kernel's `extern "C"` symbol (the spec's name); for a batch,
    /// `redjit_batch_<count>_<first kernel>`.
    pub name: String,
    /// Every `extern "C"` kernel the source defines.
    pub kernels: Vec<String>,
    /// The CUDA C++ text, header-free: the preludes it needs, then each kernel.
    pub code: String,
}
