//! `all_reduce`: R ranks of one host sum (or prod, min, max, premulsum, avg)
//! their inputs through peer memory (seed 003), one-shot or two-stage, with the
//! two-stage reduce-scatter optionally double-buffered through shared memory
//! with `cp.async` (seed 004). Every kernel carries the signal barrier of
//! `prelude/peer.cuh`; `redjit_runtime::all_reduce::protocol` models it.
//!
//! ```
//! use redjit_codegen::spec::all_reduce::ArStage;
//! use redjit_codegen::{AllReduceAlgo, AllReduceSpec, DType, KernelSpec, Op};
//!
//! let spec = AllReduceSpec { world: 4, dtype: DType::BF16, op: Op::Sum, algo: AllReduceAlgo::TwoStage, cp_async: true, transport: None, stage: ArStage::Whole, norm: None };
//! assert_eq!(spec.name(), "all_reduce_r4_bf16_sum_twostage_cpasync");
//! assert_eq!(spec.name().parse::<AllReduceSpec>().unwrap(), spec);
//! let src = spec.render().unwrap();
//! assert!(src.code.contains("cp.async.cg.shared.global"));
//!
//! // Quantized transport (NCCLX-style): f32 in and out, bf16 on the wire.
//! let q = AllReduceSpec { dtype: DType::F32, transport: Some(DType::BF16), ..spec };
//! assert_eq!(q.name(), "all_reduce_r4_f32_sum_twostage_cpasync_q_bf16_sr");
//! assert_eq!(q.name().parse::<AllReduceSpec>().unwrap(), q);
//!
//! // The hierarchical mode's reduce-scatter alone (NCCL across hosts follows it).
//! let rs = AllReduceSpec { stage: ArStage::ReduceScatter, ..spec };
//! assert_eq!(rs.name(), "all_reduce_r4_bf16_sum_twostage_cpasync_rs");
//!
//! // All-reduce + residual + RMS norm in one kernel, a block a row (`norm`).
//! use redjit_codegen::spec::all_reduce::ArNorm;
//! let fused = AllReduceSpec { world: 4, norm: ArNorm::for_row(4, DType::BF16, 4096, None), ..AllReduceSpec::default() };
//! assert_eq!(fused.name(), "all_reduce_r4_bf16_sum_oneshot_addrms_t512x1");
//! assert_eq!(fused.name().parse::<AllReduceSpec>().unwrap(), fused);
//! ```
//!
//! ## Quantized transport (`transport: Some(bf16)`, issue 12 item 7)
//!
//! f32 inputs and outputs, bf16 in every buffer a peer reads, f32 accumulation,
//! stochastic rounding wherever an f32 becomes a bf16 (NCCLX's quantized
//! all-reduce). Built on reduce_copy: the communicator quantizes each rank's
//! f32 input into its registered staging buffer with a one-source
//! `reduce_copy_u4_f32_bf16_a_T_sum_sr` kernel, launched where the plain
//! all-reduce copies the input with `cuMemcpyDtoDAsync` (same launch count,
//! half the bytes written, any input alignment through reduce_copy's
//! misaligned twins, and reduce_copy's SR code and its proven CPU twin reused
//! as they are). Quantizing inside the all-reduce kernel instead would need the
//! f32 input 16-byte aligned or a second tail path, and graph capture's
//! in-place inputs would have to be f32 while peers read bf16. The all-reduce
//! kernel then reads bf16 packs like the bf16 kernel, accumulates in f32 in
//! rank order (every rank identical bits) and writes f32; the two-stage kernel
//! rounds its reduce-scatter partial to bf16 with SR into scratch (and writes
//! the rounded value, widened, to its own output, so the owner's slice equals
//! what the others gather), the all-gather widens bf16 to f32. Elements past
//! the last whole bf16 pack (n % 8) are reduced by every rank from the
//! quantized inputs and never rounded again.
//!
//! Random bits (key = the call's seed; `base` the call's counter offset;
//! `s` = n rounded up to a multiple of 4, so every stage starts on a Philox
//! counter boundary when `base` does): rank r's input element i draws
//! position `base + r*s + i`; the two-stage partial of element j draws
//! position `base + R*s + j`; position p is lane p % 4 of
//! `philox(key = seed, counter = p / 4)` as in reduce_copy. So the result
//! depends only on (inputs, seed, base, rank, element index), never on grid or
//! block. A call spans `(R + 1) * s` positions; advance `base` by that (or
//! change the seed) for fresh bits.
//!
//! Only sum, avg and premulsum are allowed: stochastic rounding is unbiased, so
//! sums of rounded values stay unbiased; prod, min and max gain nothing from it
//! and would only lose precision. premulsum multiplies the dequantized value
//! (the input is rounded first, then scaled in f32).

#![warn(missing_docs)]

use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{AllReduceAlgo, Arch, DType, Family, Op};
pub mod norm;

use crate::spec::{KernelSpec, NameParse};
pub use norm::ArNorm;

/// Fewest and most ranks a kernel is generated for (one host: up to 8 GPUs).
pub const MIN_WORLD: u32 = 2;
/// Most ranks a kernel is generated for.
pub const MAX_WORLD: u32 = 8;
/// Most blocks per rank: the signal buffer has a counter and flag slots for
/// this many blocks (`prelude/peer.cuh` holds the same number; a test checks).
/// Room for one block per SM of an H100 or H200 (132); a communicator's grid
/// cap (`CommOptions::max_blocks`) picks how many of them a launch uses.
pub const MAX_BLOCKS: u32 = 128;
/// Alternating flag sets per block (see the protocol module).
pub const SLOTS: u32 = 2;
/// Bytes of every packed access: all buffers a kernel touches are 16-byte aligned
/// (the communicator's own allocations, or a checked user output).
pub const PACK_BYTES: u32 = 16;
/// Threads per block of the one-shot and two-stage kernels.
pub const THREADS: u32 = 512;

/// Threads per block of the LL push kernel: a block of 512 took the first
/// 8 KiB of bf16 alone, and 64 KiB ran on 8 of the fixed grid's blocks (2 x
/// H200, commit 629606e); at 128 the same message's lines leave from four
/// times the SMs.
pub const LL_THREADS: u32 = 128;
/// Shared memory the cp.async kernel stages through: two buffers of one pack
/// per rank per thread; its block size is chosen to stay within this.
pub const CP_ASYNC_SMEM_BYTES: u32 = 32 * 1024;

/// Byte layout of one rank's signal buffer: `flag[SLOTS][MAX_BLOCKS][MAX_WORLD]`
/// u32 words that peers write (`flag[s][b][r]` is written by rank r only: one
/// writer per 32-bit word), then `counter[MAX_BLOCKS]` that only this rank's
/// block b touches.
pub mod signal {
    use super::{MAX_BLOCKS, MAX_WORLD, SLOTS};

    /// Byte offset of the flag rank `from` writes for `block` in `slot`.
    pub const fn flag_offset(slot: u32, block: u32, from: u32) -> usize {
        (((slot * MAX_BLOCKS + block) * MAX_WORLD + from) * 4) as usize
    }
    /// Byte offset of block `block`'s barrier counter.
    pub const fn counter_offset(block: u32) -> usize {
        ((SLOTS * MAX_BLOCKS * MAX_WORLD + block) * 4) as usize
    }
    /// Byte offset of the rank's fused in-place call count (the fused
    /// all-reduce + norm's LL and push kernels: their flag and buffer set;
    /// stored by the call's last block to arrive).
    pub const FUSED_COUNT: usize = counter_offset(MAX_BLOCKS);
    /// Byte offset of the count of the fused in-place call's blocks that
    /// have arrived (sent their rows).
    pub const FUSED_DONE: usize = FUSED_COUNT + 4;
    /// Bytes the layout uses.
    pub const USED_BYTES: usize = FUSED_DONE + 4;
    /// Bytes allocated per signal buffer (a round size; the rest is unused).
    pub const BYTES: usize = 16384;
    const _: () = assert!(USED_BYTES <= BYTES);
}

/// One all-reduce kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllReduceSpec {
    /// Ranks taking part (2..=8).
    pub world: u32,
    /// Element type of inputs and output; 16-bit types are reduced in f32.
    pub dtype: DType,
    /// How the ranks' inputs are combined (NCCL's ops).
    pub op: Op,
    /// One-shot or two-stage.
    pub algo: AllReduceAlgo,
    /// Stage the reduce-scatter's peer loads through shared memory with
    /// `cp.async`, prefetching the next packs while the current ones are
    /// reduced (two-stage only; sm_80+).
    pub cp_async: bool,
    /// `Some(bf16)`: quantized transport. `dtype` (f32) is the input and output
    /// type, peers exchange bf16 rounded stochastically (see the module docs);
    /// `None`: peers exchange `dtype` itself.
    pub transport: Option<DType>,
    /// The whole all-reduce, or one stage of the two-stage kernel alone: the
    /// hierarchical mode's intra-host steps, with NCCL across hosts between
    /// them (`_rs` / `_ag` in names; see `redjit_runtime::all_reduce::comm`).
    pub stage: ArStage,
    /// `Some`: the fused residual + RMS norm epilogue (`_addrms_...` in
    /// names; see [`norm`]): one-shot sums only.
    pub norm: Option<ArNorm>,
}

/// Which part of the two-stage all-reduce a kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ArStage {
    /// Everything: the all-reduce.
    #[default]
    Whole,
    /// Start barrier, then rank r reduces slice r of every rank's input (rank
    /// order) into its own scratch; no output, no tail.
    ReduceScatter,
    /// Start barrier, then every rank copies every slice, its own included,
    /// from the owners' scratch into its output; no tail.
    AllGather,
}

impl ArStage {
    /// The name suffix (`""`, `"_rs"`, `"_ag"`).
    pub fn suffix(self) -> &'static str {
        match self {
            ArStage::Whole => "",
            ArStage::ReduceScatter => "_rs",
            ArStage::AllGather => "_ag",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            ArStage::Whole => "whole",
            ArStage::ReduceScatter => "rs",
            ArStage::AllGather => "ag",
        }
    }
}

/// Suffix of a quantized kernel's name after the transport type: stochastic rounding.
const SR_SUFFIX: &str = "_sr";
/// Marks the transport type in a quantized kernel's name (`_q_bf16_sr`).
const Q_MARK: &str = "_q_";
/// The fused norm's template (the family's other kernels are in `all_reduce.cu`).
const NORM_TEMPLATE: &str = "all_reduce_norm.cu";

impl Default for AllReduceSpec {
    fn default() -> Self {
        AllReduceSpec {
            world: 2,
            dtype: DType::BF16,
            op: Op::Sum,
            algo: AllReduceAlgo::OneShot,
            cp_async: false,
            transport: None,
            stage: ArStage::Whole,
            norm: None,
        }
    }
}

impl AllReduceSpec {
    /// The type in the buffers peers read (staging and scratch): the transport
    /// type when quantized, else `dtype`.
    pub fn peer_dtype(&self) -> DType {
        self.transport.unwrap_or(self.dtype)
    }

    /// Elements per 16-byte pack of the peer buffers.
    pub fn pack_elts(&self) -> u32 {
        PACK_BYTES / self.peer_dtype().info().bytes
    }

    /// The quantized specs for `world` ranks: f32 with bf16 transport, for
    /// sum/avg/premulsum and each algorithm (+ cp.async).
    pub fn quantized_matrix(world: u32) -> Vec<AllReduceSpec> {
        Self::valid(world, [DType::F32], Some(DType::BF16))
    }

    /// Every valid spec of `dtypes` x op x kernel (one-shot, two-stage,
    /// two-stage with cp.async) for `world` ranks, whole all-reduces.
    fn valid(
        world: u32,
        dtypes: impl IntoIterator<Item = DType>,
        transport: Option<DType>,
    ) -> Vec<AllReduceSpec> {
        let mut out = Vec::new();
        for dtype in dtypes {
            for &op in Op::ALL {
                for (algo, cp_async) in [
                    (AllReduceAlgo::OneShot, false),
                    (AllReduceAlgo::TwoStage, false),
                    (AllReduceAlgo::TwoStage, true),
                    (AllReduceAlgo::Push, false),
                    (AllReduceAlgo::PushLl, false),
                ] {
                    let spec = AllReduceSpec {
                        world,
                        dtype,
                        op,
                        algo,
                        cp_async,
                        transport,
                        stage: ArStage::Whole,
                        norm: None,
                    };
                    if spec.validate().is_ok() {
                        out.push(spec);
                    }
                }
            }
        }
        out
    }

    /// Threads per block, the kernel's launch bound and the only block size it is
    /// launched with: 512; for cp.async as many as keep two staged packs per
    /// rank per thread within `CP_ASYNC_SMEM_BYTES` (R = 8: 128 threads); for
    /// the LL push kernel [`LL_THREADS`].
    pub fn threads(&self) -> u32 {
        if let Some(norm) = &self.norm {
            norm.threads
        } else if self.cp_async {
            let per_thread = 2 * self.world * PACK_BYTES;
            (CP_ASYNC_SMEM_BYTES / per_thread / 32 * 32).clamp(32, THREADS)
        } else if self.algo == AllReduceAlgo::PushLl {
            LL_THREADS
        } else {
            THREADS
        }
    }

    /// Static shared memory the kernel declares.
    pub fn shared_bytes(&self) -> u32 {
        if self.cp_async {
            2 * self.world * self.threads() * PACK_BYTES
        } else {
            0
        }
    }

    /// Packs a one-shot thread loads from every rank before it adds: four on
    /// two ranks (more peer bytes in flight over the one link), two above
    /// (the loads of four at eight ranks would not fit the registers).
    pub fn one_shot_packs(&self) -> u32 {
        if self.world <= 2 { 4 } else { 2 }
    }

    /// Every valid spec for `world` ranks: dtype x op x algorithm (+ cp.async).
    pub fn matrix(world: u32) -> Vec<AllReduceSpec> {
        Self::valid(world, DType::stores(), None)
    }

    fn context(&self) -> AllReduceContext {
        AllReduceContext {
            name: self.name(),
            world: self.world,
            dtype: self.dtype.slug(),
            peer: self.peer_dtype().slug(),
            quant: self.transport.is_some(),
            pack_elts: self.pack_elts(),
            one_shot_packs: self.one_shot_packs(),
            op_functor: self.op.info().functor,
            two_stage: self.algo == AllReduceAlgo::TwoStage,
            push: self.algo == AllReduceAlgo::Push,
            ll: self.algo == AllReduceAlgo::PushLl,
            cp_async: self.cp_async,
            threads: self.threads(),
            stage: self.stage.slug(),
            norm_packs: self.norm.map_or(0, |n| n.packs),
            norm_min_blocks: self.norm.map_or(1, |n| n.min_blocks()),
            cluster: self.norm.map_or(1, |n| n.cluster),
            ll_batched: self.algo == AllReduceAlgo::PushLl
                && self
                    .norm
                    .is_some_and(|n| n.ll_batched(self.world, self.dtype)),
            prefetch: matches!(self.algo, AllReduceAlgo::OneShot | AllReduceAlgo::Push)
                && self
                    .norm
                    .is_some_and(|n| n.prefetches(self.world, self.dtype)),
            sum_rows: self.norm.map_or(1, |n| n.sum_rows(self.world)),
            norm_rows: self.norm.map_or(1, |n| n.norm_rows()),
            fused_count_off: signal::FUSED_COUNT,
            fused_done_off: signal::FUSED_DONE,
            fp8: self.norm.and_then(|n| n.fp8).map(|s| s.suffix()),
        }
    }

    /// The hierarchical mode's two kernels for `world` ranks: the
    /// reduce-scatter (with and without `cp.async`) and the all-gather of each
    /// dtype and op.
    pub fn stage_matrix(world: u32) -> Vec<AllReduceSpec> {
        let mut out = Vec::new();
        for s in AllReduceSpec::matrix(world) {
            if s.algo != AllReduceAlgo::TwoStage {
                continue;
            }
            for stage in [ArStage::ReduceScatter, ArStage::AllGather] {
                let spec = AllReduceSpec { stage, ..s.clone() };
                if spec.validate().is_ok() && !out.contains(&spec) {
                    out.push(spec);
                }
            }
        }
        out
    }
}

/// What `all_reduce.cu` is rendered from.
#[derive(Serialize)]
struct AllReduceContext {
    name: String,
    world: u32,
    dtype: &'static str,
    /// The peer buffers' type (the transport type when quantized).
    peer: &'static str,
    /// Quantized transport: f32 out, SR-rounded two-stage partials.
    quant: bool,
    pack_elts: u32,
    one_shot_packs: u32,
    op_functor: &'static str,
    two_stage: bool,
    /// One-shot by writes into the peers' push buffers (see the registry).
    push: bool,
    /// The push kernel on flagged lines, no barrier (see the registry).
    ll: bool,
    cp_async: bool,
    threads: u32,
    /// "whole", "rs" or "ag".
    stage: &'static str,
    /// The fused norm's packs a thread (0: none).
    norm_packs: u32,
    /// The fused norm's blocks an SM (its launch bound's second number).
    norm_min_blocks: u32,
    /// The fused LL kernel's blocks a row (a thread-block cluster above 1).
    cluster: u32,
    /// The fused LL kernel asks for every peer's lines of the row at once.
    ll_batched: bool,
    /// The fused one-shot and push kernels load a block's next row ahead.
    prefetch: bool,
    /// The fused two-stage kernel's rows a block loads at once: of its
    /// slice's sums, and of the rows it normalises.
    sum_rows: u32,
    norm_rows: u32,
    /// Where the fused in-place kernels' call count and arrived-blocks count
    /// lie in the signal buffer.
    fused_count_off: usize,
    fused_done_off: usize,
    /// The fused norm's FP8 output: "qd" or "qs".
    fp8: Option<&'static str>,
}

impl KernelSpec for AllReduceSpec {
    fn family(&self) -> Family {
        Family::AllReduce
    }

    fn params(&self) -> Vec<Param> {
        if let Some(norm) = &self.norm {
            return norm.params(self.algo);
        }
        let (input, third) = match self.algo {
            AllReduceAlgo::PushLl => ("in_ptr", "ll"),
            AllReduceAlgo::Push => ("in_ptr", "push"),
            AllReduceAlgo::OneShot | AllReduceAlgo::TwoStage => ("in_table", "tmp"),
        };
        // What every thread reads first, then the tables (the world's entries
        // only): at 2 ranks all of it sits in two lines of the parameter bank.
        let mut p = vec![
            Param::ptr(input),
            Param::ptr("out_ptr"),
            Param::u64("n"),
            Param::u64("timeout_ns"),
            Param::ptr("error_ptr"),
        ];
        let in_place = self.algo.info().in_place;
        if in_place {
            p.push(Param::u64("window"));
        }
        p.extend([
            Param::u32("rank"),
            Param::f32("op_arg"),
            Param::peer_table("sig"),
            Param::peer_table(third),
        ]);
        if !in_place && self.transport.is_some() {
            p.extend([Param::u64("seed"), Param::u64("partial_base")]);
        }
        p
    }

    fn validate(&self) -> Result<(), SpecError> {
        if !(MIN_WORLD..=MAX_WORLD).contains(&self.world) {
            return Err(SpecError::invalid(
                "world",
                self.world,
                format!("an all-reduce has {MIN_WORLD} to {MAX_WORLD} ranks (one host)"),
            ));
        }
        if !self.dtype.info().store {
            return Err(SpecError::invalid(
                "dtype",
                self.dtype,
                format!(
                    "an all-reduce's element type must be one of: {} (types with loads and stores; {} is a reduction input only)",
                    DType::store_types(),
                    self.dtype
                ),
            ));
        }
        if !PACK_BYTES.is_multiple_of(self.dtype.info().bytes) {
            return Err(SpecError::invalid(
                "dtype",
                self.dtype,
                "its size must divide 16 bytes",
            ));
        }
        if self.cp_async && self.algo != AllReduceAlgo::TwoStage {
            return Err(SpecError::invalid(
                "cp_async",
                "true",
                format!(
                    "cp.async double buffering is a variant of the {} kernel, not of {}",
                    AllReduceAlgo::TwoStage,
                    self.algo
                ),
            ));
        }
        if let (Some(t), true) = (self.transport, self.algo.info().in_place) {
            return Err(SpecError::invalid(
                "transport",
                t,
                format!(
                    "the {} kernel writes the input itself to its peers; quantized transport is a variant of {} and {}",
                    self.algo,
                    AllReduceAlgo::OneShot,
                    AllReduceAlgo::TwoStage
                ),
            ));
        }
        if let Some(t) = self.transport {
            if t != DType::BF16 {
                return Err(SpecError::invalid(
                    "transport",
                    t,
                    "a quantized all-reduce transports bf16 (stochastic rounding); no other transport type is generated",
                ));
            }
            if self.dtype != DType::F32 {
                return Err(SpecError::invalid(
                    "dtype",
                    self.dtype,
                    format!("a quantized all-reduce (transport {t}) takes f32 input and output"),
                ));
            }
            if !matches!(self.op, Op::Sum | Op::Avg | Op::PreMulSum) {
                return Err(SpecError::invalid(
                    "op",
                    self.op,
                    format!(
                        "a quantized all-reduce (transport {t}) sums: op must be one of: {}, {}, {} (stochastic rounding keeps sums unbiased; it gains nothing for the others)",
                        Op::Sum,
                        Op::Avg,
                        Op::PreMulSum
                    ),
                ));
            }
        }
        if self.stage != ArStage::Whole {
            let rule = if self.algo != AllReduceAlgo::TwoStage {
                Some(format!(
                    "a stage alone is part of the {} kernel, not of {}",
                    AllReduceAlgo::TwoStage,
                    self.algo
                ))
            } else if self.transport.is_some() {
                Some("the hierarchical stages exchange the element type itself (no quantized transport)".into())
            } else if self.cp_async && self.stage == ArStage::AllGather {
                Some(
                    "cp.async double-buffers the reduce-scatter's loads; the all-gather has none"
                        .into(),
                )
            } else {
                None
            };
            if let Some(rule) = rule {
                return Err(SpecError::invalid("stage", self.stage.slug(), rule));
            }
        }
        if let Some(norm) = &self.norm {
            let rule = if self.cp_async || self.stage != ArStage::Whole {
                Some(format!(
                    "the fused norm is an epilogue of the whole {}, {}, {} or {} kernel without cp.async (a block a row)",
                    AllReduceAlgo::OneShot,
                    AllReduceAlgo::TwoStage,
                    AllReduceAlgo::Push,
                    AllReduceAlgo::PushLl
                ))
            } else if self.op != Op::Sum {
                Some(format!("the fused norm follows a {} all-reduce", Op::Sum))
            } else if self.transport.is_some() {
                Some(
                    "the fused norm exchanges the element type itself (no quantized transport)"
                        .into(),
                )
            } else {
                None
            };
            if let Some(rule) = rule {
                return Err(SpecError::invalid("norm", norm.suffix(), rule));
            }
            norm.validate(self.world, self.dtype, self.algo == AllReduceAlgo::PushLl)?;
        }
        Ok(())
    }

    fn name(&self) -> String {
        let quant = match self.transport {
            Some(t) => format!("{Q_MARK}{t}{SR_SUFFIX}"),
            None => String::new(),
        };
        format!(
            "{}_r{}_{}_{}_{}",
            Family::AllReduce.slug(),
            self.world,
            self.dtype,
            self.op,
            self.algo
        ) + if self.cp_async { "_cpasync" } else { "" }
            + self.stage.suffix()
            + &quant
            + &self.norm.map_or(String::new(), |n| n.suffix())
    }

    /// `ld.acquire.sys` / `st.release.sys` are sm_70+, cp.async sm_80+.
    fn min_arch(&self) -> Arch {
        let base = if self.cp_async { Arch::SM80 } else { Arch(70) };
        let transport = self.transport.map_or(base, |t| t.info().min_arch);
        // cvt.rn.satfinite.e4m3x2 is sm_89+.
        let fp8 = match self.norm.and_then(|n| n.fp8) {
            Some(_) => DType::E4M3.info().min_arch,
            None => base,
        };
        // A row's cluster and its distributed shared memory are sm_90+.
        let cluster = match self.norm {
            Some(n) if n.cluster > 1 => Arch::SM90,
            _ => base,
        };
        base.max(self.dtype.info().min_arch)
            .max(cluster)
            .max(fp8)
            .max(self.op.min_arch())
            .max(transport)
    }

    fn preludes(&self) -> Vec<&'static str> {
        if let Some(norm) = &self.norm {
            // The norm family's row helpers (block sums, the correctly
            // rounded rstd, the FP8 row scale), then the peer barrier.
            let mut out = Family::Norm.info().preludes.to_vec();
            out.push("prelude/peer.cuh");
            if norm.fp8.is_some() {
                out.push("prelude/norm_fp8.cuh");
            }
            return out;
        }
        let mut out = Family::AllReduce.info().preludes.to_vec();
        out.push(self.dtype.info().prelude);
        if let Some(t) = self.transport {
            out.push(t.info().prelude);
            out.push("prelude/philox.cuh");
        }
        out
    }

    fn render_body(&self) -> Result<String, SpecError> {
        if self.norm.is_some() {
            self.validate()?;
            return crate::render::render_template(NORM_TEMPLATE, &self.context());
        }
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for AllReduceSpec {
    type Err = SpecError;

    /// Parses a kernel name, e.g. `all_reduce_r8_f16_max_twostage_cpasync`, and
    /// validates it; only the canonical spelling parses.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::AllReduce)?;
        let (rest, norm) = match rest.split_once(norm::MARK) {
            Some((r, n)) => (
                r,
                Some(ArNorm::parse(n).ok_or_else(|| {
                    name.err(
                        "the fused norm part is _addrms_t<threads>x<packs>[c<cluster>][_qd|_qs]",
                    )
                })?),
            ),
            None => (rest, None),
        };
        let (rest, transport) = match rest
            .strip_suffix(SR_SUFFIX)
            .and_then(|r| r.rsplit_once(Q_MARK))
        {
            Some((r, t)) => (r, Some(t.parse::<DType>()?)),
            None => (rest, None),
        };
        let (rest, stage) = match (rest.strip_suffix("_rs"), rest.strip_suffix("_ag")) {
            (Some(r), _) => (r, ArStage::ReduceScatter),
            (_, Some(r)) => (r, ArStage::AllGather),
            _ => (rest, ArStage::Whole),
        };
        let (rest, cp_async) = match rest.strip_suffix("_cpasync") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let parts: Vec<&str> = rest.split('_').collect();
        let [world, dtype, op, algo] = parts.as_slice() else {
            return Err(name.bad());
        };
        let world = world
            .strip_prefix('r')
            .and_then(|w| w.parse::<u32>().ok())
            .ok_or_else(|| name.err("the world part is r<ranks>, e.g. r4"))?;
        let spec = AllReduceSpec {
            world,
            dtype: dtype.parse()?,
            op: op.parse()?,
            algo: algo.parse()?,
            cp_async,
            transport,
            stage,
            norm,
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
    fn load_only_types_are_refused_naming_the_value_and_the_rule() {
        for bad in [DType::E4M3, DType::E5M2, DType::I8, DType::I64] {
            let spec = AllReduceSpec {
                dtype: bad,
                ..AllReduceSpec::default()
            };
            let msg = spec.validate().unwrap_err().to_string();
            assert!(
                msg.contains(&format!("invalid dtype = {bad}"))
                    && msg.contains("must be one of: f32, bf16, f16"),
                "{msg}"
            );
        }
    }

    #[test]
    fn names_round_trip_for_every_world() {
        for world in MIN_WORLD..=MAX_WORLD {
            let m = AllReduceSpec::matrix(world);
            // Every algorithm, and two-stage with cp.async too.
            let kernels = AllReduceAlgo::ALL.len() + 1;
            assert_eq!(m.len(), DType::stores().count() * Op::ALL.len() * kernels);
            for spec in m {
                assert_eq!(spec.name().parse::<AllReduceSpec>().unwrap(), spec);
            }
        }
    }

    #[test]
    fn stages_round_trip_and_refuse_what_they_are_not() {
        for world in MIN_WORLD..=MAX_WORLD {
            let m = AllReduceSpec::stage_matrix(world);
            // Each dtype x op: reduce-scatter, reduce-scatter with cp.async, all-gather.
            assert_eq!(m.len(), DType::stores().count() * Op::ALL.len() * 3);
            for spec in m {
                assert_eq!(spec.name().parse::<AllReduceSpec>().unwrap(), spec);
            }
        }
        let rs = AllReduceSpec {
            stage: ArStage::ReduceScatter,
            ..AllReduceSpec::default()
        };
        let e = rs.validate().unwrap_err().to_string();
        assert!(
            e.contains("invalid stage = rs") && e.contains("twostage"),
            "{e}"
        );
        let ag = AllReduceSpec {
            algo: AllReduceAlgo::TwoStage,
            cp_async: true,
            stage: ArStage::AllGather,
            ..AllReduceSpec::default()
        };
        assert!(
            ag.validate()
                .unwrap_err()
                .to_string()
                .contains("the all-gather has none")
        );
        let q = AllReduceSpec {
            algo: AllReduceAlgo::TwoStage,
            dtype: DType::F32,
            transport: Some(DType::BF16),
            stage: ArStage::ReduceScatter,
            ..AllReduceSpec::default()
        };
        assert!(
            q.validate()
                .unwrap_err()
                .to_string()
                .contains("no quantized transport")
        );
        assert!(
            "all_reduce_r4_bf16_sum_oneshot_ag"
                .parse::<AllReduceSpec>()
                .is_err()
        );
    }

    #[test]
    fn cp_async_blocks_fit_the_staging_budget() {
        for world in MIN_WORLD..=MAX_WORLD {
            let spec = AllReduceSpec {
                world,
                algo: AllReduceAlgo::TwoStage,
                cp_async: true,
                ..AllReduceSpec::default()
            };
            let t = spec.threads();
            assert!(t.is_multiple_of(32) && (32..=THREADS).contains(&t), "{t}");
            assert!(spec.shared_bytes() <= CP_ASYNC_SMEM_BYTES, "{world}");
            // As many threads as fit: one more warp would exceed the budget
            // (or the 512 bound).
            assert!(t == THREADS || 2 * world * (t + 32) * PACK_BYTES > CP_ASYNC_SMEM_BYTES);
        }
        assert_eq!(
            AllReduceSpec {
                world: 8,
                algo: AllReduceAlgo::TwoStage,
                cp_async: true,
                ..AllReduceSpec::default()
            }
            .threads(),
            128
        );
    }

    #[test]
    fn the_prelude_lays_signals_out_as_this_module_does() {
        let peer = crate::render::TEMPLATES
            .iter()
            .find(|(n, _)| *n == "prelude/peer.cuh")
            .map(|(_, t)| *t)
            .unwrap();
        for line in [
            format!("static const rj_u32 kArMaxRanks = {MAX_WORLD};"),
            format!("static const rj_u32 kArMaxBlocks = {MAX_BLOCKS};"),
            format!("static const rj_u32 kArSlots = {SLOTS};"),
            "return (rj_u64)(((slot * kArMaxBlocks + block) * kArMaxRanks + from) * 4u);".into(),
            "return (rj_u64)((kArSlots * kArMaxBlocks * kArMaxRanks + block) * 4u);".into(),
            format!("typedef rj_ar_table<{MAX_WORLD}> rj_ar_ptrs;"),
        ] {
            assert!(peer.contains(&line), "peer.cuh lacks {line:?}");
        }
        assert_eq!(signal::flag_offset(1, 2, 3), ((128 + 2) * 8 + 3) * 4);
        assert_eq!(signal::counter_offset(5), (2 * 128 * 8 + 5) * 4);
    }

    #[test]
    fn invalid_specs_name_the_field_and_the_rule() {
        let bad = |s: AllReduceSpec| s.validate().unwrap_err().to_string();
        for world in [0, 1, 9, 16] {
            let e = bad(AllReduceSpec {
                world,
                ..AllReduceSpec::default()
            });
            assert!(
                e.contains(&format!("invalid world = {world}")) && e.contains("2 to 8 ranks"),
                "{e}"
            );
        }
        let e = bad(AllReduceSpec {
            cp_async: true,
            ..AllReduceSpec::default()
        });
        assert!(
            e.contains("invalid cp_async") && e.contains("not of oneshot"),
            "{e}"
        );
        for (name, want) in [
            ("all_reduce_r9_bf16_sum_oneshot", "invalid world = 9"),
            ("all_reduce_r4_bf16_sum_oneshot_cpasync", "invalid cp_async"),
            ("all_reduce_r4_f64_sum_oneshot", "\"f64\""),
            ("all_reduce_r4_bf16_sum_threestage", "all-reduce algorithm"),
            (
                "all_reduce_r04_bf16_sum_oneshot",
                "did you mean all_reduce_r4_bf16_sum_oneshot",
            ),
            ("all_reduce_4_bf16_sum_oneshot", "r<ranks>"),
            ("all_reduce_r4_bf16_oneshot", "expected all_reduce_r<world>"),
        ] {
            let e = name.parse::<AllReduceSpec>().unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
    }

    #[test]
    fn arch_gates() {
        let f32_sum = AllReduceSpec {
            dtype: DType::F32,
            ..AllReduceSpec::default()
        };
        assert_eq!(f32_sum.min_arch(), Arch(70));
        assert_eq!(AllReduceSpec::default().min_arch(), Arch::SM80);
        let cp = AllReduceSpec {
            algo: AllReduceAlgo::TwoStage,
            cp_async: true,
            ..f32_sum.clone()
        };
        assert_eq!(cp.min_arch(), Arch::SM80);
        let e = cp.check_arch(Arch(75)).unwrap_err().to_string();
        assert!(
            e.contains("not supported on sm_75") && e.contains("needs sm_80"),
            "{e}"
        );
        assert!(f32_sum.check_arch(Arch(75)).is_ok());
    }

    #[test]
    fn signal_layout_gives_each_word_one_writer() {
        let mut seen = std::collections::HashSet::new();
        for slot in 0..SLOTS {
            for block in 0..MAX_BLOCKS {
                for from in 0..MAX_WORLD {
                    let o = signal::flag_offset(slot, block, from);
                    assert!(o.is_multiple_of(4) && o < signal::counter_offset(0));
                    assert!(seen.insert(o));
                }
            }
        }
        assert_eq!(signal::counter_offset(0), seen.len() * 4);
    }

    fn quant(world: u32, op: Op, algo: AllReduceAlgo, cp_async: bool) -> AllReduceSpec {
        AllReduceSpec {
            world,
            dtype: DType::F32,
            op,
            algo,
            cp_async,
            transport: Some(DType::BF16),
            stage: ArStage::Whole,
            norm: None,
        }
    }

    #[test]
    fn quantized_names_round_trip_and_render() {
        for world in MIN_WORLD..=MAX_WORLD {
            let m = AllReduceSpec::quantized_matrix(world);
            assert_eq!(m.len(), 3 * 3, "sum/avg/premulsum x 3 kernels");
            for spec in m {
                let name = spec.name();
                assert!(name.ends_with("_q_bf16_sr"), "{name}");
                assert_eq!(name.parse::<AllReduceSpec>().unwrap(), spec);
                assert_eq!(spec.pack_elts(), 8);
                assert_eq!(spec.min_arch(), Arch::SM80);
                let code = spec.render().unwrap().code;
                assert!(code.contains("typedef rj_dtype_bf16 T;"), "{name}");
                assert!(code.contains("typedef rj_dtype_f32 O;"), "{name}");
                assert!(code.contains("rj_u64 seed, rj_u64 partial_base"), "{name}");
                let two = spec.algo == AllReduceAlgo::TwoStage;
                assert_eq!(code.contains("store_partial(scratch"), two, "{name}");
            }
        }
        assert_eq!(
            quant(2, Op::Avg, AllReduceAlgo::OneShot, false).name(),
            "all_reduce_r2_f32_avg_oneshot_q_bf16_sr"
        );
        // The plain kernels are untouched by the option.
        let plain = AllReduceSpec::default().render().unwrap().code;
        assert!(!plain.contains("partial_base") && !plain.contains("typedef rj_dtype_f32 O;"));
    }

    #[test]
    fn quantized_specs_refuse_other_types_and_ops_naming_the_rule() {
        let bad = |s: AllReduceSpec| s.validate().unwrap_err().to_string();
        for op in [Op::Prod, Op::Min, Op::Max] {
            let e = bad(quant(4, op, AllReduceAlgo::OneShot, false));
            assert!(
                e.contains(&format!("invalid op = {op}"))
                    && e.contains("must be one of: sum, avg, premulsum"),
                "{e}"
            );
        }
        for dtype in [DType::BF16, DType::F16] {
            let e = bad(AllReduceSpec {
                dtype,
                ..quant(4, Op::Sum, AllReduceAlgo::TwoStage, false)
            });
            assert!(
                e.contains(&format!("invalid dtype = {dtype}")) && e.contains("takes f32 input"),
                "{e}"
            );
        }
        let e = bad(AllReduceSpec {
            transport: Some(DType::F16),
            ..quant(4, Op::Sum, AllReduceAlgo::OneShot, false)
        });
        assert!(
            e.contains("invalid transport = f16") && e.contains("transports bf16"),
            "{e}"
        );
        for (name, want) in [
            (
                "all_reduce_r4_f32_max_oneshot_q_bf16_sr",
                "invalid op = max",
            ),
            (
                "all_reduce_r4_bf16_sum_oneshot_q_bf16_sr",
                "invalid dtype = bf16",
            ),
            (
                "all_reduce_r4_f32_sum_oneshot_q_f16_sr",
                "invalid transport = f16",
            ),
            ("all_reduce_r4_f32_sum_oneshot_q_f64_sr", "\"f64\""),
            (
                "all_reduce_r4_f32_sum_oneshot_q_bf16",
                "expected all_reduce_r<world>",
            ),
        ] {
            let e = name.parse::<AllReduceSpec>().unwrap_err().to_string();
            assert!(e.contains(want), "{name}: {e}");
        }
    }
}
