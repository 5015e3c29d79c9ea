//! The typed launcher of `reduce_copy` kernels: the one place they are launched.
//!
//! ```no_run
//! use half::bf16;
//! use redjit_runtime::{LaunchOptions, ReduceCopyArgs, ReduceCopySpec, Runtime};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! // premulsum: each source times the scalar, then summed; f32 + f32 -> bf16.
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_AA_T_premulsum_rn".parse()?;
//! let kernel = rt.reduce_copy(&spec)?;
//! let s = rt.stream();
//! let a = s.clone_htod(&vec![1.0f32; 4096])?;
//! let b = s.clone_htod(&vec![3.0f32; 4096])?;
//! let mut out = s.alloc_zeros::<bf16>(4096)?;
//! let args = ReduceCopyArgs { scalar: Some(0.5), stochastic: None };
//! let opts = LaunchOptions::default().threads(Some(256));
//! kernel.launch_with(s, &[&a, &b], &mut [&mut out], args, opts)?; // out = 2.0
//! // A wrong call is an Err naming the argument, before any launch:
//! assert!(kernel.launch(s, &[&a], &mut [&mut out]).is_err());
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};
use redjit_codegen::params::Param;
use redjit_codegen::spec::reduce_copy::Misalignment;
use redjit_codegen::tuning::HOLDING_SMEM_MAX;
use redjit_codegen::{DType, KernelSpec, Op, ReduceCopySpec, Rounding};

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Error, Result};
use crate::extent::Extent;
use crate::launch_args::CheckedArgs;
use crate::runtime::{Runtime, blocks_per_sm};

/// Threads per block unless the caller or the device's tuning table (its
/// `[[reduce_copy]]` row) asks otherwise, or the kernel's launch bound is lower.
pub const DEFAULT_THREADS: u32 = 512;
/// The largest gridDim.x.
const MAX_GRID: u32 = i32::MAX as u32;
/// Hunks per launch: the kernel counts hunks and warps in 32 bits (cheaper for
/// NVRTC and the loop), and hunk + warp count stays below 2^32.
const MAX_HUNKS: u64 = (1 << 31) - 32;

/// Per-call launch shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchOptions {
    /// Threads per block: a multiple of 32, at most the kernel's launch bound
    /// (`ReduceCopySpec::max_threads`). `None`: the tuning table's threads
    /// (`DEFAULT_THREADS` without a row) or the bound, whichever is lower.
    pub threads: Option<u32>,
    /// Upper bound on the grid (`None`: one block per `threads / 32` hunks).
    pub max_blocks: Option<u32>,
}

impl LaunchOptions {
    /// Sets [`LaunchOptions::threads`].
    pub fn threads(mut self, threads: Option<u32>) -> Self {
        self.threads = threads;
        self
    }
    /// Sets [`LaunchOptions::max_blocks`].
    pub fn max_blocks(mut self, max_blocks: Option<u32>) -> Self {
        self.max_blocks = max_blocks;
        self
    }
}

/// Stochastic rounding's inputs: the Philox key and the caller's base offset
/// (element i draws from counter (base + i) / 4, lane (base + i) % 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stochastic {
    /// The Philox key: one per call (or per step) of the caller's choosing.
    pub seed: u64,
    /// The counter offset of element 0: lets the pieces of one large buffer,
    /// launched apart, draw the random numbers of a single launch.
    pub base: u64,
}

/// Host values a launch takes besides the buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReduceCopyArgs {
    /// The op's scalar: premulsum's factor, avg's count; `None` for other ops.
    pub scalar: Option<f32>,
    /// Seed and base offset, for kernels that round stochastically; else `None`.
    pub stochastic: Option<Stochastic>,
}

/// A loaded reduce_copy kernel, the spec it was generated from, and (loaded on the
/// first launch that needs it) its twin for buffers off a pack boundary.
pub struct ReduceCopyKernel<'rt> {
    rt: &'rt Runtime,
    spec: ReduceCopySpec,
    name: String,
    func: CudaFunction,
    /// `spec.max_launch_threads()`, computed once: it builds a twin spec, and
    /// every launch checks against it.
    max_threads: u32,
    /// Threads a launch takes where the caller names none: the tuning
    /// table's, within the bound.
    default_threads: u32,
    /// Where the table holds such a launch to a number of blocks an SM
    /// (`ReduceCopyRule::held_blocks`: a kernel of an unroll it names that
    /// writes at least the bytes it reads), the dynamic shared memory, unused
    /// by the kernel, that holds off the rest (0 where no more fit).
    held_smem: Option<u32>,
    /// Misaligned twins loaded so far, by placement (a program meets few).
    twins: Mutex<Vec<(Misalignment, CudaFunction)>>,
    /// `spec.params()`: what each launch pushes.
    params: Vec<Param>,
}

impl Runtime {
    /// Compiles (through the cache) and loads the kernel for `spec`. A spec asking
    /// for a misaligned twin itself is refused: the launcher picks those.
    pub fn reduce_copy(&self, spec: &ReduceCopySpec) -> Result<ReduceCopyKernel<'_>> {
        if let Some(m) = &spec.misalignment {
            return Err(Error::Spec(redjit_codegen::SpecError::Invalid {
                field: "misalignment",
                value: m.to_string(),
                rule: "ask for the aligned kernel; its launcher compiles and picks the misaligned twin a launch needs".into(),
            }));
        }
        let max_threads = spec.max_launch_threads();
        let table = self.tuning().tuning.reduce_copy_rule();
        let func = self.function(spec)?;
        let default_threads = table
            .map_or(DEFAULT_THREADS, |r| r.threads)
            .min(max_threads);
        let held_smem = match table.and_then(|r| r.held_blocks(spec)) {
            Some(blocks) => Some(holding_smem(&func, default_threads, blocks, &spec.name())?),
            None => None,
        };
        Ok(ReduceCopyKernel {
            rt: self,
            spec: spec.clone(),
            name: spec.name(),
            func,
            max_threads,
            default_threads,
            held_smem,
            twins: Mutex::default(),
            params: spec.params(),
        })
    }
}

impl ReduceCopyKernel<'_> {
    /// The spec the kernel was generated from.
    pub fn spec(&self) -> &ReduceCopySpec {
        &self.spec
    }

    /// The kernel's name (its CUDA symbol).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Blocks an SM holds at once of a launch at the table's threads, where
    /// the table holds them down (`ReduceCopyRule::held_blocks`): at most the
    /// table's, fewer where no more fit anyway.
    pub fn held_blocks_per_sm(&self) -> Result<Option<u32>> {
        let Some(smem) = self.held_smem else {
            return Ok(None);
        };
        blocks_per_sm(&self.func, self.default_threads, smem as usize, &self.name).map(Some)
    }

    /// `dsts[d][i] = op(srcs[0][i], srcs[1][i], ...)` for every i, on `stream`,
    /// for kernels that need no scalar and round to nearest. Returns before any
    /// launch when the buffers are empty.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        srcs: &[&dyn KernelInput],
        dsts: &mut [&mut dyn KernelOutput],
    ) -> Result<()> {
        self.launch_with(
            stream,
            srcs,
            dsts,
            ReduceCopyArgs::default(),
            LaunchOptions::default(),
        )
    }

    /// As [`launch`](Self::launch), with the op's scalar, stochastic rounding's
    /// seed and base, and the launch shape. Checks every argument first (counts,
    /// dtypes and lengths of the buffers, overlaps, the scalar and seed the spec
    /// needs, the thread count) and returns [`Error::Launch`] naming it; runs the
    /// misaligned twin when a buffer (or the stochastic base) is off a pack boundary.
    pub fn launch_with(
        &self,
        stream: &Arc<CudaStream>,
        srcs: &[&dyn KernelInput],
        dsts: &mut [&mut dyn KernelOutput],
        call: ReduceCopyArgs,
        opts: LaunchOptions,
    ) -> Result<()> {
        let n = self.check(srcs, dsts, call, opts)?;
        if n == 0 {
            return Ok(());
        }
        let dst_types: Vec<DType> = dsts.iter().map(|b| b.dtype()).collect();
        // Each buffer's address taken once, with cudarc's ordering (the
        // stream waits for its pending work; the guards record this launch's
        // accesses when dropped, after it): the overlap and pack checks and
        // the arguments share one lookup a buffer, which costs driver calls
        // where cudarc tracks the buffers.
        let (src_addresses, _read): (Vec<u64>, Vec<_>) =
            srcs.iter().map(|b| b.read_address(stream)).unzip();
        let (dst_addresses, _written): (Vec<u64>, Vec<_>) =
            dsts.iter_mut().map(|b| b.write_address(stream)).unzip();
        let extent = |address: u64, dtype: DType| Extent {
            address,
            bytes: n as u64 * dtype.info().bytes as u64,
        };
        let src_extents: Vec<Extent> = src_addresses
            .iter()
            .zip(srcs)
            .map(|(&a, b)| extent(a, b.dtype()))
            .collect();
        let dst_extents: Vec<Extent> = dst_addresses
            .iter()
            .zip(dst_types)
            .map(|(&a, t)| extent(a, t))
            .collect();
        if let Some((value, rule)) = overlap_violation(&src_extents, &dst_extents) {
            return Err(Error::Launch {
                kernel: self.name.clone(),
                what: "buffers",
                value,
                rule,
            });
        }
        let cfg = self.config(n, opts);
        let func = self.pick(&src_addresses, &dst_addresses, call)?;
        let n = n as u64;
        let op_arg = call.scalar.unwrap_or(0.0);
        let sr = call.stochastic.unwrap_or(Stochastic { seed: 0, base: 0 });
        // A misaligned twin takes the spec's parameters.
        let mut args = CheckedArgs::new(stream, &func, &self.spec, &self.params);
        for a in src_addresses.iter().chain(&dst_addresses) {
            args.ptr(a);
        }
        args.u64(&n).f32(&op_arg).u64(&sr.seed).u64(&sr.base);
        let mut args = args.ready()?;
        // SAFETY: the kernel was generated from `self.spec`, whose parameters are one
        // pointer per source, one per destination, then n (u64), the op's scalar
        // (f32), the SR seed and base (u64), in that order; `check` proved every
        // buffer has the spec's dtype and exactly n elements. Each address was
        // taken with cudarc's ordering on this stream, its guard held until
        // after the launch.
        unsafe { args.launch(cfg) }.during(|| format!("launching {}", self.name))?;
        Ok(())
    }

    /// The aligned kernel, or the twin compiled for this placement of the
    /// buffers (on first need) when one is off its pack boundary or stochastic
    /// rounding starts at a base that is not a multiple of 4.
    fn pick(
        &self,
        src_addresses: &[u64],
        dst_addresses: &[u64],
        call: ReduceCopyArgs,
    ) -> Result<CudaFunction> {
        let Some(m) = self.spec.misalignment_for(
            src_addresses,
            dst_addresses,
            call.stochastic.map(|sr| sr.base),
        ) else {
            return Ok(self.func.clone());
        };
        let twins = || self.twins.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, f)) = twins().iter().find(|(k, _)| *k == m) {
            return Ok(f.clone());
        }
        // Compiled outside the lock: the runtime compiles each kernel once.
        let f = self.rt.function(&self.spec.for_misalignment(m.clone()))?;
        let mut loaded = twins();
        if !loaded.iter().any(|(k, _)| *k == m) {
            loaded.push((m, f.clone()));
        }
        Ok(f)
    }

    fn threads(&self, opts: LaunchOptions) -> u32 {
        opts.threads.unwrap_or(self.default_threads)
    }

    /// Validates a call; returns the element count.
    fn check(
        &self,
        srcs: &[&dyn KernelInput],
        dsts: &[&mut dyn KernelOutput],
        call: ReduceCopyArgs,
        opts: LaunchOptions,
    ) -> Result<usize> {
        let err = Error::launch_of(|| self.name.clone());
        let max_threads = self.max_threads;
        let threads = self.threads(opts);
        if threads == 0 || !threads.is_multiple_of(32) || threads > max_threads {
            return Err(err(
                "threads",
                threads.to_string(),
                format!(
                    "must be a multiple of 32 between 32 and {max_threads}, the launch bound of this kernel and its misaligned twins"
                ),
            ));
        }
        if opts.max_blocks == Some(0) {
            return Err(err("max_blocks", "0".into(), "must be at least 1".into()));
        }
        if srcs.len() != self.spec.srcs.len() {
            return Err(err(
                "number of sources",
                srcs.len().to_string(),
                format!(
                    "the kernel reads exactly {} source(s)",
                    self.spec.srcs.len()
                ),
            ));
        }
        if dsts.len() != self.spec.dsts.len() {
            return Err(err(
                "number of destinations",
                dsts.len().to_string(),
                format!(
                    "the kernel writes exactly {} destination(s)",
                    self.spec.dsts.len()
                ),
            ));
        }
        let buffers = srcs
            .iter()
            .map(|s| (s.dtype(), s.len()))
            .zip(&self.spec.srcs)
            .enumerate()
            .map(|(i, (b, s))| (("src", i), b, s.role))
            .chain(
                dsts.iter()
                    .map(|d| (d.dtype(), d.len()))
                    .zip(&self.spec.dsts)
                    .enumerate()
                    .map(|(i, (b, r))| (("dst", i), b, *r)),
            );
        let n = srcs[0].len();
        // The kernel counts hunks and warps in 32 bits: hunk + warps (at most one
        // warp per hunk plus a block's worth) must not wrap.
        let hunk = self.spec.elems_per_hunk() as u64;
        let max_n = MAX_HUNKS * hunk;
        if n as u64 >= max_n {
            return Err(err(
                "n",
                n.to_string(),
                format!("must be below {max_n} elements (2^31 - 32 hunks of {hunk})"),
            ));
        }
        // Labels are formatted only for an error: this runs on every launch.
        for ((kind, i), (dtype, len), role) in buffers {
            let label = || format!("{kind}{i}");
            let want = self.spec.dtype_of(role);
            if dtype != want {
                return Err(err(
                    "dtype",
                    format!("{}: {dtype}", label()),
                    format!("{} is {role}, which is {want} in this kernel", label()),
                ));
            }
            if len != n {
                return Err(err(
                    "length",
                    format!("{}: {len}", label()),
                    format!("every buffer must have the length of src0 ({n})"),
                ));
            }
        }
        match (self.spec.op.info().scalar, call.scalar) {
            (Some(meaning), None) => {
                return Err(err(
                    "scalar",
                    "none".into(),
                    format!("op {} needs {meaning}", self.spec.op),
                ));
            }
            (None, Some(x)) => {
                return Err(err(
                    "scalar",
                    x.to_string(),
                    format!("op {} takes no scalar", self.spec.op),
                ));
            }
            (Some(_), Some(x)) if !x.is_finite() || (self.spec.op == Op::Avg && x == 0.0) => {
                return Err(err(
                    "scalar",
                    x.to_string(),
                    format!(
                        "op {} needs a finite{} scalar",
                        self.spec.op,
                        if self.spec.op == Op::Avg {
                            ", non-zero"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            _ => {}
        }
        match (self.spec.rounding, call.stochastic) {
            (Rounding::Stochastic, None) => {
                return Err(err(
                    "stochastic",
                    "none".into(),
                    "a stochastic-rounding kernel needs a seed and a base offset".into(),
                ));
            }
            (Rounding::Nearest, Some(sr)) => {
                return Err(err(
                    "stochastic",
                    format!("seed {} base {}", sr.seed, sr.base),
                    "this kernel rounds to nearest and takes no seed".into(),
                ));
            }
            (_, Some(sr)) if sr.base.checked_add(n as u64).is_none() => {
                return Err(err(
                    "stochastic base",
                    sr.base.to_string(),
                    format!("base + n ({n}) must fit in 64 bits"),
                ));
            }
            _ => {}
        }
        Ok(n)
    }

    /// One hunk per warp, so the hardware balances blocks over the SMs: on the H100
    /// this beat a persistent grid of resident blocks, whose last round of hunks
    /// leaves SMs idle (commit 81722c7). The kernel's
    /// hunk loop covers grids capped by `max_blocks` or by the 2^31 - 1 limit of
    /// gridDim.x.
    fn config(&self, n: usize, opts: LaunchOptions) -> LaunchConfig {
        let threads = self.threads(opts);
        let warps_per_block = (threads / 32) as usize;
        let hunks = n / self.spec.elems_per_hunk() as usize;
        let wanted = hunks.div_ceil(warps_per_block).max(1);
        let cap = opts.max_blocks.map_or(MAX_GRID, |m| m.min(MAX_GRID)) as usize;
        LaunchConfig {
            grid_dim: (wanted.min(cap) as u32, 1, 1),
            block_dim: (threads, 1, 1),
            // A caller's own block size keeps every block an SM holds.
            shared_mem_bytes: match self.held_smem {
                Some(smem) if opts.threads.is_none() => smem,
                _ => 0,
            },
        }
    }
}

/// The least dynamic shared memory (a multiple of 128 bytes, at most
/// `HOLDING_SMEM_MAX`) at which an SM holds at most `blocks` blocks
/// of `threads` of `func`, as the driver's occupancy query counts them: so held,
/// the write-heavy kernels of unroll 4 and 8 ran faster on the H200, those of
/// unroll 1 and 2 slower (`benchmarks/h200/layouts-reduce-copy.json`).
fn holding_smem(func: &CudaFunction, threads: u32, blocks: u32, kernel: &str) -> Result<u32> {
    const STEP: u32 = 128;
    if blocks_per_sm(func, threads, 0, kernel)? <= blocks {
        return Ok(0);
    }
    // Blocks an SM only fall as the shared memory a block asks for grows.
    let (mut lo, mut hi) = (0u32, HOLDING_SMEM_MAX / STEP);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if blocks_per_sm(func, threads, (mid * STEP) as usize, kernel)? <= blocks {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi * STEP)
}

/// Element i of a destination is written by the thread that reads element i of
/// every source, so a destination may be a source exactly (in place: same start,
/// same dtype, hence the same bytes); any other overlap, with a source or with the
/// other destination, races (and a misaligned twin reads whole aligned blocks around
/// its elements). `(value, rule)` of the first violation.
fn overlap_violation(srcs: &[Extent], dsts: &[Extent]) -> Option<(String, String)> {
    let at = |e: &Extent| format!("[{:#x}, {:#x})", e.address, e.address + e.bytes);
    for (d, dst) in dsts.iter().enumerate() {
        for (s, src) in srcs.iter().enumerate() {
            if dst != src && dst.overlaps(src) {
                return Some((
                    format!("dst{d} {} and src{s} {}", at(dst), at(src)),
                    "a destination may be a source exactly (in place) but must not partly overlap one".into(),
                ));
            }
        }
        for (e, other) in dsts.iter().enumerate().skip(d + 1) {
            if dst.overlaps(other) {
                return Some((
                    format!("dst{d} {} and dst{e} {}", at(dst), at(other)),
                    "destinations must not overlap".into(),
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::overlap_violation;
    use crate::extent::Extent;

    fn e(address: u64, bytes: u64) -> Extent {
        Extent { address, bytes }
    }

    #[test]
    fn in_place_is_allowed_and_partial_overlap_is_not() {
        let src0 = e(0x1000, 400);
        let src1 = e(0x2000, 800);
        // Disjoint, and exactly in place on either source.
        assert_eq!(overlap_violation(&[src0, src1], &[e(0x3000, 400)]), None);
        assert_eq!(overlap_violation(&[src0, src1], &[src0]), None);
        assert_eq!(overlap_violation(&[src0, src1], &[src1]), None);
        // Touching ends do not overlap.
        assert_eq!(overlap_violation(&[src0], &[e(0x1000 + 400, 400)]), None);
        // One element off, or the same start with another dtype's size.
        let (value, rule) = overlap_violation(&[src0, src1], &[e(0x1002, 400)]).unwrap();
        assert!(value.contains("dst0 [0x1002, 0x1192) and src0"), "{value}");
        assert!(rule.contains("partly overlap"), "{rule}");
        assert!(overlap_violation(&[src1], &[e(0x2000, 400)]).is_some());
        // Two destinations sharing bytes, even identical ones.
        let (value, rule) = overlap_violation(&[src0], &[e(0x3000, 400), e(0x3000, 400)]).unwrap();
        assert!(
            value.starts_with("dst0") && value.contains("dst1"),
            "{value}"
        );
        assert_eq!(rule, "destinations must not overlap");
    }
}
