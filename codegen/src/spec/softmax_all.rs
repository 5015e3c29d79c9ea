//! `softmax_all`: softmax and log-softmax over a whole array of n elements (1
//! to past 2^31, 64-bit indexing) — seed 002's "naive" softmax, whose
//! `atomicAdd` + `__threadfence` is not a grid-wide sync, done correctly (issue
//! 11, item 2). `y_i = e^(s x_i - m) / d` (log-softmax: `(s x_i - m) - ln d`),
//! `m` the array's max and `d = sum_j e^(s x_j - m)`, `s` the scale; inputs and
//! outputs f32, bf16 or f16 independently, math in f32.
//!
//! ```
//! use redjit_codegen::{DType, KernelSpec, NormOp, SoftmaxAllSpec, SoftmaxAllStage};
//!
//! let spec: SoftmaxAllSpec = "softmax_all_logsoftmax_bf16_f32".parse().unwrap();
//! assert_eq!(spec, SoftmaxAllSpec::new(NormOp::LogSoftmax, DType::BF16, DType::F32));
//! let names: Vec<String> = spec.pipeline().iter().map(|s| s.name()).collect();
//! assert_eq!(names, ["softmax_all_stats_bf16", "softmax_all_logsoftmax_bf16_f32"]);
//! assert_eq!(spec.stats().stage, SoftmaxAllStage::Stats);
//! let src = spec.render().unwrap();
//! assert!(src.code.contains("softmax_all_logsoftmax_bf16_f32("));
//! ```
//!
//! Why a family of its own, two kernels a call:
//! - Every element needs the whole array's (max, sum), so it takes a grid-wide
//!   dependency: the stats stage reduces, the normalise stage reads the result
//!   from device memory. Two launches on one stream, no host round trip and no
//!   allocation per call, so a call is capturable in a CUDA graph.
//! - The stats stage is the `reduce` family's full-array logsumexp walk
//!   (`rj_feed_range`, `rj_block_reduce`, `rj_arrive_last` and the `rj_red_lse`
//!   state, all from `prelude/reduce.cuh`), with three differences, kept in
//!   `prelude/softmax_all.cuh` so the `reduce` kernel itself is unchanged
//!   (a `scale` argument there would change every reduce kernel's signature
//!   for one op): each element enters as `s x` rounded to f32 (as the row
//!   softmax of the `norm` family scales at load); a group of packs sums its
//!   exponentials apart before adding them to the held sum (a chain of ~100
//!   rounded adds at 2^28 elements instead of ~1000: the f32 result stays
//!   within 1e-5); and the result is the (max, sum) state, not `m + ln d`
//!   folded into one f32. The folded value cannot serve: at |m| ~ 1e4 its ulp
//!   is 2^-10, so `e^(s x - lse)` would be off by up to 5e-4 relative; with m
//!   and d apart `s x - m` is exact where it matters (Sterbenz) and the error
//!   stays at the row softmax's.
//! - The launch plan of the stats stage is the `reduce` kernel's
//!   ([`SoftmaxAllSpec::stats_plan`] asks [`ReduceSpec::plan`]), so its grid
//!   and workspace come from one place; the rounding chain is this stage's own
//!   ([`SoftmaxAllSpec::stats_chain`]).
//!
//! Special values as the row softmax (`prelude/norm.cuh`): NaN or +Inf anywhere,
//! or only -Inf, gives NaN everywhere; -Inf elements of any other array give 0
//! (log-softmax: -Inf).

use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{Arch, DType, Family, NormOp, ReduceAxis, ReduceOp, SoftmaxAllStage};
use crate::spec::reduce::{Plan, ReduceSpec, Shape};
use crate::spec::{KernelSpec, NameParse};

/// Threads per block of both stages (the stats stage's is the `reduce`
/// family's, whose plan it uses).
pub const THREADS: u32 = crate::spec::reduce::THREADS;
/// Normalise stage: 16-byte vectors each thread keeps in flight per buffer
/// access round.
pub const UNROLL: u32 = 2;
/// Normalise stage: blocks per SM the grid covers at most (each thread then
/// loops over the array in grid strides).
pub const NORMALIZE_BLOCKS_PER_SM: u32 = 8;
/// Bytes of the state the stats stage writes: the max and the sum, two f32.
pub const STATS_BYTES: usize = 8;

/// One kernel of a whole-array softmax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SoftmaxAllSpec {
    /// Which of the two kernels.
    pub stage: SoftmaxAllStage,
    /// Softmax or log-softmax (a softmax row of the `NormOp` registry). The
    /// stats stage computes the same state for both: its canonical op is
    /// softmax.
    pub op: NormOp,
    /// The element type of x.
    pub input: DType,
    /// The element type of y. The stats stage writes f32 (its canonical
    /// output).
    pub output: DType,
}

impl Default for SoftmaxAllSpec {
    /// The f32 -> f32 softmax (its normalise stage).
    fn default() -> Self {
        SoftmaxAllSpec::new(NormOp::Softmax, DType::F32, DType::F32)
    }
}

impl SoftmaxAllSpec {
    /// The normalise stage of `op` from `input` to `output`: the spec a caller
    /// hands `Runtime::softmax_all`.
    pub fn new(op: NormOp, input: DType, output: DType) -> SoftmaxAllSpec {
        SoftmaxAllSpec {
            stage: SoftmaxAllStage::Normalize,
            op,
            input,
            output,
        }
    }

    /// The stats stage of this spec's input (canonical: op softmax, output f32).
    pub fn stats(&self) -> SoftmaxAllSpec {
        SoftmaxAllSpec {
            stage: SoftmaxAllStage::Stats,
            op: NormOp::Softmax,
            input: self.input,
            output: DType::F32,
        }
    }

    /// Both kernels of a call, in launch order: the stats stage, then this
    /// spec as the normalise stage (a stats spec gives its own input's f32
    /// softmax).
    pub fn pipeline(&self) -> [SoftmaxAllSpec; 2] {
        let normalize = match self.stage {
            SoftmaxAllStage::Normalize => *self,
            SoftmaxAllStage::Stats => SoftmaxAllSpec::new(NormOp::Softmax, self.input, DType::F32),
        };
        [self.stats(), normalize]
    }

    /// Every op x input x output, normalise stages then the stats stages: the
    /// test matrix.
    pub fn matrix() -> Vec<SoftmaxAllSpec> {
        let mut out = Vec::new();
        for &op in NormOp::ALL.iter().filter(|o| o.info().softmax) {
            for input in DType::stores() {
                for output in DType::stores() {
                    out.push(SoftmaxAllSpec::new(op, input, output));
                }
            }
        }
        for input in DType::stores() {
            out.push(SoftmaxAllSpec::new(NormOp::Softmax, input, DType::F32).stats());
        }
        out
    }

    /// The `reduce` kernel whose walk the stats stage is: the full-array
    /// logsumexp of the input, accumulated in f32.
    pub fn reduce_twin(&self) -> ReduceSpec {
        ReduceSpec {
            axis: ReduceAxis::All,
            op: ReduceOp::LogSumExp,
            input: self.input,
            accum: DType::F32,
            warp_per_row: false,
            cluster: false,
            split_rows: false,
            strategy: None,
        }
    }

    /// The stats stage's launch for n elements on a device with `sm_count` SMs
    /// holding `blocks_per_sm` of it: the `reduce` twin's full-array plan (its
    /// grid, workspace and rounding chain; never the cluster twin).
    pub fn stats_plan(&self, n: u64, sm_count: u32, blocks_per_sm: u32) -> Plan {
        self.reduce_twin()
            .plan(Shape::All { n }, sm_count, blocks_per_sm)
    }

    /// Stats stage on `grid` blocks for n elements: the longest chain of
    /// rounded adds an element's exponential goes through to the state (a
    /// thread's group sums, one group of `pack x unroll`, the last packs (fewer
    /// than a group), the unaligned head and the tail element by element, the
    /// block tree, the last block's merge of the partials). With f32's unit roundoff it bounds the sum's error
    /// (`reference_norm` derives the tolerances from it).
    pub fn stats_chain(&self, n: u64, grid: u32) -> u64 {
        let lanes = u64::from(grid.max(1)) * u64::from(THREADS);
        let group = self.reduce_twin().elements_per_round_of_a_thread();
        let block_levels = 5 + u64::from(THREADS / 32).ilog2() as u64;
        let last = if grid > 1 {
            u64::from(grid).div_ceil(u64::from(THREADS)) + block_levels
        } else {
            0
        };
        n.div_ceil(lanes).div_ceil(group) + 2 * group + 5 + block_levels + last + 1
    }

    /// Stats stage on `grid` blocks for n elements: the most times a partial
    /// sum is rescaled by `e^(old max - new max)` (each an `ex2.approx`, about
    /// 2^-22 relative, and a rounded product; exact when the max stays):
    /// once per group a thread feeds or element it feeds alone, once per merge
    /// level.
    pub fn stats_rescales(&self, n: u64, grid: u32) -> u64 {
        let lanes = u64::from(grid.max(1)) * u64::from(THREADS);
        let group = self.reduce_twin().elements_per_round_of_a_thread();
        let block_levels = 5 + u64::from(THREADS / 32).ilog2() as u64;
        let last = if grid > 1 {
            u64::from(grid).div_ceil(u64::from(THREADS)) + block_levels
        } else {
            0
        };
        n.div_ceil(lanes).div_ceil(group) + group + 5 + block_levels + last + 1
    }

    /// Normalise stage: elements per 16-byte vector of the narrower buffer (4
    /// for f32 -> f32, else 8: a 16-bit buffer's 16 bytes, the f32 one's 32).
    pub fn vec(&self) -> u32 {
        16 / self.input.info().bytes.min(self.output.info().bytes)
    }

    /// Normalise stage's grid for n elements: a vector per thread and unroll
    /// step, at most `NORMALIZE_BLOCKS_PER_SM` blocks per SM (grid strides).
    pub fn normalize_grid(&self, n: u64, sm_count: u32) -> u32 {
        let per_block = u64::from(THREADS * UNROLL * self.vec());
        let most = u64::from(sm_count.max(1)) * u64::from(NORMALIZE_BLOCKS_PER_SM);
        n.div_ceil(per_block).clamp(1, most) as u32
    }

    fn context(&self) -> SoftmaxAllContext {
        SoftmaxAllContext {
            name: self.name(),
            stage: self.stage.slug(),
            log: self.op == NormOp::LogSoftmax,
            input: self.input.slug(),
            output: self.output.slug(),
            threads: THREADS,
            unroll: self.reduce_twin().unroll(),
            pack: self.reduce_twin().pack(),
            vec: self.vec(),
            vec_unroll: UNROLL,
        }
    }
}

/// What the `softmax_all.cu` template is rendered from.
#[derive(Serialize)]
struct SoftmaxAllContext {
    name: String,
    stage: &'static str,
    log: bool,
    input: &'static str,
    output: &'static str,
    threads: u32,
    /// Stats stage: packs in flight per thread (the reduce twin's).
    unroll: u32,
    /// Elements of a pack load of the stats stage (the reduce twin's).
    pack: u32,
    /// Normalise stage: elements per vector.
    vec: u32,
    /// Normalise stage: vectors in flight per thread.
    vec_unroll: u32,
}

impl KernelSpec for SoftmaxAllSpec {
    fn family(&self) -> Family {
        Family::SoftmaxAll
    }

    fn params(&self) -> Vec<Param> {
        match self.stage {
            SoftmaxAllStage::Stats => vec![
                Param::ptr("x_ptr"),
                Param::ptr("stats_ptr"),
                Param::ptr("counters_ptr"),
                Param::ptr("partials_ptr"),
                Param::u64("n"),
                Param::f32("scale"),
            ],
            SoftmaxAllStage::Normalize => vec![
                Param::ptr("x_ptr"),
                Param::ptr("y_ptr"),
                Param::ptr("stats_ptr"),
                Param::u64("n"),
                Param::f32("scale"),
            ],
        }
    }

    fn validate(&self) -> Result<(), SpecError> {
        if !self.op.info().softmax {
            let ops: Vec<&str> = NormOp::ALL
                .iter()
                .filter(|o| o.info().softmax)
                .map(|o| o.slug())
                .collect();
            return Err(SpecError::invalid(
                "op",
                self.op,
                format!("a whole-array softmax is one of: {}", ops.join(", ")),
            ));
        }
        for (field, d) in [("input", self.input), ("output", self.output)] {
            if !d.info().store {
                return Err(SpecError::invalid(
                    field,
                    d,
                    format!(
                        "a softmax_all buffer must be one of: {}",
                        DType::store_types()
                    ),
                ));
            }
        }
        if self.stage == SoftmaxAllStage::Stats
            && (self.op != NormOp::Softmax || self.output != DType::F32)
        {
            return Err(SpecError::invalid(
                "stage",
                self.stage,
                format!(
                    "the stats stage has no op or output of its own (it writes the f32 (max, sum) state for both ops): build it with .stats(), which gives op softmax and output f32, not op {} and output {}",
                    self.op, self.output
                ),
            ));
        }
        Ok(())
    }

    fn name(&self) -> String {
        match self.stage {
            SoftmaxAllStage::Stats => {
                format!(
                    "{}_{}_{}",
                    Family::SoftmaxAll.slug(),
                    self.stage,
                    self.input
                )
            }
            SoftmaxAllStage::Normalize => format!(
                "{}_{}_{}_{}",
                Family::SoftmaxAll.slug(),
                self.op,
                self.input,
                self.output
            ),
        }
    }

    fn min_arch(&self) -> Arch {
        // acq_rel atomics and fences (the stats stage's finish) are sm_70+,
        // max.NaN and the 16-bit conversions sm_80+.
        [
            Arch::SM80,
            self.reduce_twin().min_arch(),
            self.input.info().min_arch,
            self.output.info().min_arch,
        ]
        .into_iter()
        .max()
        .unwrap_or(Arch::SM80)
    }

    fn render_body(&self) -> Result<String, SpecError> {
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for SoftmaxAllSpec {
    type Err = SpecError;

    /// Parses a kernel name, `softmax_all_<op>_<input>_<output>` or
    /// `softmax_all_stats_<input>`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::SoftmaxAll)?;
        let parts: Vec<&str> = rest.split('_').collect();
        let spec = match parts.as_slice() {
            [stage, input] if stage.parse::<SoftmaxAllStage>() == Ok(SoftmaxAllStage::Stats) => {
                SoftmaxAllSpec::new(NormOp::Softmax, input.parse()?, DType::F32).stats()
            }
            [op, input, output] => {
                SoftmaxAllSpec::new(op.parse()?, input.parse()?, output.parse()?)
            }
            _ => return Err(name.bad()),
        };
        spec.validate()?;
        name.canonical(&spec)?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let m = SoftmaxAllSpec::matrix();
        // 2 ops x 3 inputs x 3 outputs, then 3 stats stages.
        assert_eq!(m.len(), 2 * 3 * 3 + 3);
        let mut names = Vec::new();
        for spec in &m {
            spec.validate().unwrap();
            assert_eq!(spec.name().parse::<SoftmaxAllSpec>().unwrap(), *spec);
            names.push(spec.name());
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), m.len());
        assert!(names.contains(&"softmax_all_stats_f16".to_string()));
    }

    #[test]
    fn invalid_specs_name_the_value_and_the_rule() {
        let e = "softmax_all_rmsnorm_f32_f32"
            .parse::<SoftmaxAllSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid op = rmsnorm") && e.contains("one of: softmax, logsoftmax"),
            "{e}"
        );
        let e = "softmax_all_softmax_e4m3_f32"
            .parse::<SoftmaxAllSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid input = e4m3") && e.contains("f32, bf16, f16"),
            "{e}"
        );
        let e = SoftmaxAllSpec {
            stage: SoftmaxAllStage::Stats,
            ..SoftmaxAllSpec::new(NormOp::LogSoftmax, DType::BF16, DType::BF16)
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("invalid stage = stats") && e.contains(".stats()"),
            "{e}"
        );
        for bad in [
            "softmax_all_stats_bf16_bf16",
            "softmax_all_softmax_bf16",
            "softmax_all_SOFTMAX_bf16_f32",
            "reduce_all_lse_f32_f32",
        ] {
            assert!(bad.parse::<SoftmaxAllSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_stats_plan_is_the_reduce_twins_and_the_grid_is_bounded() {
        let spec: SoftmaxAllSpec = "softmax_all_softmax_bf16_f32".parse().unwrap();
        assert_eq!(spec.reduce_twin().name(), "reduce_all_lse_bf16_f32");
        let n = 1u64 << 28;
        assert_eq!(
            spec.stats_plan(n, 132, 8),
            spec.reduce_twin().plan(Shape::All { n }, 132, 8)
        );
        assert_eq!(spec.stats_plan(5, 132, 8).grid, (1, 1));
        // 8 elements a vector (16 bytes of bf16, 32 of f32).
        assert_eq!(spec.vec(), 8);
        assert_eq!(SoftmaxAllSpec::default().vec(), 4);
        assert_eq!(spec.normalize_grid(1, 132), 1);
        assert_eq!(spec.normalize_grid(n, 132), 132 * NORMALIZE_BLOCKS_PER_SM);
        assert_eq!(spec.normalize_grid(5 << 33, 1), NORMALIZE_BLOCKS_PER_SM);
        assert_eq!(spec.min_arch(), Arch::SM80);
        // 2^28 on 1056 blocks: 993 elements a thread in groups of 32 (bf16).
        let chain = spec.stats_chain(n, 1056);
        assert_eq!(chain, 32 + 64 + 5 + 8 + (5 + 8) + 1);
        assert!(spec.stats_rescales(n, 1056) < chain);
        assert_eq!(spec.stats_chain(5, 1), 1 + 64 + 5 + 8 + 1);
    }
}
