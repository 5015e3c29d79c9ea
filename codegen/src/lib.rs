//! redjit-codegen: kernel specs -> CUDA C++ source. Pure Rust, no CUDA.
//!
//! ```
//! use redjit_codegen::{KernelSpec, ReduceCopySpec};
//!
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse().unwrap();
//! spec.validate().unwrap();
//! let src = spec.render().unwrap();
//! assert_eq!(src.name, "reduce_copy_u4_f32_bf16_TA_T_sum_rn");
//! assert!(src.code.contains("extern \"C\" __global__"));
//! assert!(!src.code.contains("#include"));
//! ```
//!
//! The data path is spec -> [`KernelSpec::validate`] -> [`KernelSpec::render`] ->
//! [`KernelSource`]; the runtime compiles the source, the macro and the CLI build
//! the same specs.

#![warn(missing_docs)]

/// A hash of the templates and of this crate's code: with a spec's name it
/// determines the generated source, so caches can key on it without rendering.
pub const CODEGEN_FINGERPRINT: &str = env!("REDJIT_CODEGEN_FINGERPRINT");

mod arch;
pub mod error;
pub mod params;
pub mod registry;
mod render;
mod source;
pub mod spec;
pub mod tuning;

pub use error::SpecError;
pub use registry::{
    AllReduceAlgo, Arch, DType, Family, Load, NmsStage, NormLayout, NormOp, Op, ReduceAxis,
    ReduceOp, Role, Rounding, SoftmaxAlgo, SoftmaxAllStage, Src,
};
pub use source::KernelSource;
pub use spec::KernelSpec;
pub use spec::all_reduce::AllReduceSpec;
pub use spec::nms::NmsSpec;
pub use spec::norm::NormSpec;
pub use spec::reduce::ReduceSpec;
pub use spec::reduce_copy::ReduceCopySpec;
pub use spec::render_batch;
pub use spec::softmax_all::SoftmaxAllSpec;
