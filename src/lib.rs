//! redjit: CUDA kernels generated from templates for exactly the configurations a
//! program uses, JIT-compiled with NVRTC at start-up and cached on disk.
//!
//! ```no_run
//! use redjit::{ReduceCopySpec, Runtime};
//!
//! # fn main() -> Result<(), redjit::Error> {
//! let rt = Runtime::new(0)?;
//! // bf16 transport + f32 accumulator -> bf16, unroll 4, sum, round to nearest.
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse()?;
//! let report = rt.prepare(&[&spec])?;   // parallel compile, disk cache
//! println!("{} kernels ready in {:?}", report.kernels, report.wall);
//! # Ok(()) }
//! ```
//!
//! The crates underneath: [`codegen`] (specs -> CUDA source, no GPU needed) and
//! [`runtime`] (NVRTC, the compile cache, launchers).

pub use redjit_codegen as codegen;
pub use redjit_runtime as runtime;
pub use redjit_runtime::*;
