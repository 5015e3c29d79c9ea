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
//! Launching (the README's example, compiled here so it stays true):
//!
//! ```no_run
//! use half::bf16;
//! use redjit::{LaunchOptions, ReduceCopyArgs, ReduceCopySpec, Runtime, Stochastic};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse()?;
//! let kernel = rt.reduce_copy(&spec)?;
//! let s = rt.stream();
//! let recv = s.clone_htod(&vec![bf16::from_f32(1.5); 1 << 20])?;
//! let user = s.clone_htod(&vec![2.25f32; 1 << 20])?;
//! let mut send = s.alloc_zeros::<bf16>(1 << 20)?;
//! kernel.launch(s, &[&recv, &user], &mut [&mut send])?;
//!
//! let sr: ReduceCopySpec = "reduce_copy_u4_f32_bf16_Ta_T_sum_sr".parse()?;
//! let args = ReduceCopyArgs { scalar: None, stochastic: Some(Stochastic { seed: 42, base: 0 }) };
//! rt.reduce_copy(&sr)?.launch_with(s, &[&recv, &user], &mut [&mut send], args, LaunchOptions::default())?;
//! # Ok(()) }
//! ```
//!
//! ## Kernels declared by a signature
//!
//! [`#[reduce_copy]`](reduce_copy) turns a function signature into a launcher
//! whose kernel is checked at compile time and compiled, with every other
//! declared kernel, by one [`prepare_registered`] call at start-up:
//!
//! ```no_run
//! use redjit::half::bf16;
//! use redjit::{Runtime, Stochastic};
//!
//! /// bf16 received + f32 local input -> bf16 sent on, stochastically rounded.
//! #[redjit::reduce_copy(unroll = 4, rounding = stochastic, read_only(input))]
//! pub fn quantize_step(recv: &[bf16], input: &[f32], send: &mut [bf16]);
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let report = redjit::prepare_registered(&rt)?; // every declared kernel, disk-cached
//! println!("{}", redjit::registered::describe(&report));
//!
//! let s = rt.stream();
//! let recv = s.clone_htod(&vec![bf16::from_f32(1.5); 1 << 20])?;
//! let input = s.clone_htod(&vec![2.25f32; 1 << 20])?;
//! let mut send = s.alloc_zeros::<bf16>(1 << 20)?;
//! quantize_step(&rt, s, &recv, &input, &mut send, Stochastic { seed: 42, base: 0 })?;
//! # Ok(()) }
//! ```
//!
//! The crates underneath: [`codegen`] (specs -> CUDA source, no GPU needed) and
//! [`runtime`] (NVRTC, the compile cache, launchers).

#![warn(missing_docs)]

mod buffer;
pub mod registered;

pub use buffer::{DstBuffer, SrcBuffer};
pub use redjit_codegen as codegen;
pub use redjit_runtime as runtime;
pub use redjit_runtime::*;
pub use registered::{
    RegisteredReduceCopy, StaticReduceCopy, prepare_registered, registered, registered_specs,
};
/// The device and host types a downstream crate needs, so it depends on redjit alone.
pub use {cudarc, half};

#[doc = include_str!("reduce_copy.md")]
pub use redjit_macros::reduce_copy;

/// What generated code names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::registered::REDUCE_COPY;
    pub use linkme;
}

/// The README's Rust examples, compiled by `cargo test --doc` so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
