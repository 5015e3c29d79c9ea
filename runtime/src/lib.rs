//! redjit-runtime: NVRTC JIT with a compile cache, and typed launchers.
//!
//! ```no_run
//! use redjit_runtime::{ReduceCopySpec, Runtime};
//! use half::bf16;
//!
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! let rt = Runtime::new(0)?;                       // GPU 0, disk cache
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse()?;
//! let kernel = rt.reduce_copy(&spec)?;             // NVRTC on first use, cached after
//! let s = rt.stream();
//! let a = s.clone_htod(&vec![bf16::from_f32(1.5); 1000])?;  // cudarc's errors convert with ?
//! let b = s.clone_htod(&vec![2.25f32; 1000])?;
//! let mut out = s.alloc_zeros::<bf16>(1000)?;
//! kernel.launch(s, &[&a, &b], &mut [&mut out])?;   // out = bf16(1.5 + 2.25)
//! # Ok(()) }
//! ```
//!
//! # Empty calls
//!
//! One rule in every family: a call whose outputs hold no elements (n = 0 for
//! reduce_copy and the whole-array softmax, no boxes for NMS, no rows — or rows
//! of no elements — for the norms, no results for a row or column reduction) is
//! checked like any other and then launches nothing: `Ok`, outputs untouched. A
//! call that would have to write a value computed from no elements is an
//! error: a full-array reduction of none, a row or column reduction over rows or
//! columns of none, and a norm's mean or rstd of rows of none.
//!
//! # CPU twins
//!
//! The feature `cpu-twins` adds the f64 CPU references every family's GPU
//! tests compare with (`reference`, `reference_norm`, `reference_reduce`,
//! `reference_nms`). They are test code: they panic on buffers that do not
//! match the call, where the launchers return errors.

#![warn(missing_docs)]

pub mod all_reduce;
pub mod autotune;
pub mod cache;
mod device;
mod elem;
mod error;
mod extent;
pub mod fp8;
mod hash;
pub mod identity;
pub mod jit;
mod launch_args;
pub mod libraries;
mod nms;
mod norm;
pub mod nvrtc;
pub mod partition;
pub mod peer;
pub mod philox;
mod reduce;
mod reduce_copy;
#[cfg(any(test, feature = "cpu-twins"))]
pub mod reference;
#[cfg(any(test, feature = "cpu-twins"))]
pub mod reference_nms;
#[cfg(any(test, feature = "cpu-twins"))]
pub mod reference_norm;
#[cfg(any(test, feature = "cpu-twins"))]
pub mod reference_reduce;
mod runtime;
mod softmax_all;
mod stream_copy;
mod tracking;
pub mod tuning;
mod workspace;

pub use autotune::{Autotune, AutotunePick};
pub use cache::{CacheKey, CacheStats, CompileCache, Origin};
pub use device::DeviceInfo;
pub use elem::{DeviceElem, KernelInput, KernelOutput};
pub use error::{Error, Result};
pub use fp8::{F8E4M3, F8E5M2};
pub use jit::{Compiled, Jit};
pub use nms::{MASK_BUDGET_BYTES, NmsCall, NmsKernel, NmsPlan, check_call as check_nms_call};
pub use norm::{
    Fp8Scales, NormArgs, NormCall, NormInPlace, NormKernel, check_call as check_norm_call,
};
pub use nvrtc::{Artifact, Nvrtc, NvrtcFacts, Output, Target};
pub use redjit_codegen::spec::reduce::{
    Plan as ReducePlan, ReduceStrategy, Shape as ReduceShape, Twin as ReduceTwin,
};
pub use redjit_codegen::{
    AllReduceAlgo, AllReduceSpec, Arch, DType, KernelSource, KernelSpec, Load, NmsSpec, NmsStage,
    NormLayout, NormOp, NormSpec, Op, ReduceAxis, ReduceCopySpec, ReduceOp, ReduceSpec, Role,
    Rounding, SoftmaxAlgo, SoftmaxAllSpec, SoftmaxAllStage, SpecError, Src,
};
pub use reduce::{Matrix, ReduceKernel, ReduceOutput, ResultType, check_call as check_reduce_call};
pub use reduce_copy::{
    DEFAULT_THREADS, LaunchOptions, ReduceCopyArgs, ReduceCopyKernel, Stochastic,
};
pub use runtime::{PrepareReport, Runtime, RuntimeOptions, gpu_available};
pub use softmax_all::{SoftmaxAllCall, SoftmaxAllKernel, check_call as check_softmax_all_call};
