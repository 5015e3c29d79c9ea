//! `norm`: row-wise softmax (safe or online), log-softmax, layer norm and RMS
//! norm, with fused residual-add variants of the norms (issue 11, seed 002).
//! Inputs and outputs f32, bf16 or f16 (independently), math in f32; the row is
//! held in registers (packs of 4 elements per thread) in every layout: a group
//! of 1..32 lanes per row for short rows, a block per row for medium rows, and
//! several blocks per row (a deterministic exchange of partial states) for
//! long rows.
//!
//! ```
//! use redjit_codegen::{KernelSpec, NormSpec};
//!
//! let spec: NormSpec = "norm_softmax_online_bf16_bf16_w32x4".parse().unwrap();
//! assert_eq!(spec.capacity(), Some(512));
//! let src = spec.render().unwrap();
//! assert!(src.code.contains("rj_norm_softmax<true, false>"));
//! // The launcher's default variant for a row length.
//! assert_eq!(spec.for_cols(4000).name(), "norm_softmax_online_bf16_bf16_b256x4");
//! // Rows that fill a layout exactly take its kernel without bounds tests where
//! // measured faster.
//! assert_eq!(spec.for_cols(4096).name(), "norm_softmax_online_bf16_bf16_b256x4_x");
//! // Long rows: several blocks a row, here in cohorts that stage their next row;
//! // rows of a whole number of chunks without bounds tests.
//! assert_eq!(spec.for_cols(1 << 20).name(), "norm_softmax_online_bf16_bf16_s512x8_p_x");
//! assert_eq!(spec.for_cols((1 << 20) + 4).name(), "norm_softmax_online_bf16_bf16_s512x8_p");
//! ```

use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{Arch, DType, Family, NormLayout, NormOp, SoftmaxAlgo};
use crate::spec::KernelSpec;

mod kernel;
mod measured;

use measured::{HELD_CAPS, OCCUPANCY, OCCUPANCY_GENERAL, OCCUPANCY_PAIRED, RowTypes};

/// Threads per block of the warp layout (its groups take rows in turn).
pub const WARP_LAYOUT_THREADS: u32 = 256;
/// Block sizes of the block and split layouts.
/// (1024-thread blocks leave 64 registers a thread: the row and the rest spill.)
pub const BLOCK_THREADS: &[u32] = &[64, 128, 256, 512];
/// Lane-group sizes of the warp layout.
pub const GROUP_LANES: &[u32] = &[1, 2, 4, 8, 16, 32];
/// Packs of 4 elements a thread holds in registers (16 in the block and split
/// layouts only: a 512-thread block then holds a row of 32768).
pub const PACKS: &[u32] = &[1, 2, 4, 8, 16];
/// The most blocks of a cluster row (`NormSpec::cluster`): the portable
/// cluster size.
pub const MAX_CLUSTER: u32 = 8;
/// The most packs a thread of a general twin (`_g`) holds.
pub const GENERAL_MAX_PACKS: u32 = 8;

/// Rows a cohort of a deferred kernel's staging twin must take at least for a
/// call off the pack grid to run on it (`NormSpec::general_twin_for`):
/// measured ahead at 16 rows a cohort and more, behind or level at 4 and fewer.
pub const STAGED_TWIN_ROWS: u64 = 8;
/// And the chunks its rows must span: measured ahead at 65 and more, as often
/// behind as ahead at 4-7 (between them, not measured).
pub const STAGED_TWIN_SPLITS: u64 = 16;
/// Rows up to this long take their op's short staging twin, where it has one
/// (`NormSpec::staged_twin_for_cols`), whatever their chunk count.
pub const STAGED_SHORT_COLS: u64 = 65537;
/// The most packs a lane of the warp layout holds.
pub const WARP_MAX_PACKS: u32 = 8;
/// Bytes of one partial state in the split layout's workspace (the largest
/// state, four words: layer norm's f64 sums).
pub const PARTIAL_BYTES: usize = 16;
/// Resident threads an SM holds (sm_80 and sm_90): the largest launch bound.
pub const MAX_THREADS_PER_SM: u32 = 2048;
/// Most bytes a prefetching block stages its next row in (`NormSpec::prefetch`,
/// dynamic shared memory): sm_90 gives a block up to 227 KiB, and the block
/// reduction's static scratch takes a little of it. The launcher also checks
/// the device's own limit.
pub const MAX_STAGE_BYTES: u64 = 224 * 1024;
/// Shared memory an SM holds for its blocks (sm_90: 228 KiB).
pub const SM_SHARED_BYTES: u64 = 228 * 1024;
/// gridDim.x's limit.
pub const MAX_GRID: u64 = i32::MAX as u64;
/// Longest row the default ladder (`for_cols`) and the tests target; a split
/// kernel takes longer rows while its chunks fit the device at once.
pub const MAX_COLS: u64 = 1 << 20;
/// The element types of a row, as the norm rows group them. Rows between
/// f32 and a 16-bit type are apart by direction: a staged row holds the
/// input, so the two take different layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypePair {
    /// f32 in and out.
    F32,
    /// One 16-bit type in and out.
    Sixteen,
    /// A 16-bit type in, f32 out.
    Widening,
    /// f32 in, a 16-bit type out.
    Narrowing,
    /// f32 in, e4m3 out (an FP8 output, `NormSpec::fp8`).
    F32ToE4m3,
    /// A 16-bit type in, e4m3 out.
    SixteenToE4m3,
    /// Two different 16-bit types (no row names them).
    Other,
}

impl TypePair {
    /// The group of `input` -> `output`.
    pub fn of(input: DType, output: DType) -> TypePair {
        let (i, o) = (input.info().bytes, output.info().bytes);
        if input == output {
            if i == 4 {
                TypePair::F32
            } else {
                TypePair::Sixteen
            }
        } else {
            match (i, o) {
                (2, 4) => TypePair::Widening,
                (4, 2) => TypePair::Narrowing,
                (4, 1) => TypePair::F32ToE4m3,
                (2, 1) => TypePair::SixteenToE4m3,
                _ => TypePair::Other,
            }
        }
    }

    /// The group whose table rows lay `spec` out: its types'.
    pub fn of_spec(spec: &NormSpec) -> TypePair {
        TypePair::of(spec.input, spec.output)
    }

    /// Whether the group's output is FP8.
    pub fn is_fp8(self) -> bool {
        matches!(self, TypePair::F32ToE4m3 | TypePair::SixteenToE4m3)
    }

    /// The name in tables.
    pub fn slug(self) -> &'static str {
        match self {
            TypePair::F32 => "f32",
            TypePair::Sixteen => "sixteen",
            TypePair::Widening => "widening",
            TypePair::Narrowing => "narrowing",
            TypePair::F32ToE4m3 => "f32-e4m3",
            TypePair::SixteenToE4m3 => "sixteen-e4m3",
            TypePair::Other => "other",
        }
    }

    /// The groups a table row may name.
    pub const NAMED: &[TypePair] = &[
        TypePair::F32,
        TypePair::Sixteen,
        TypePair::Widening,
        TypePair::Narrowing,
        TypePair::F32ToE4m3,
        TypePair::SixteenToE4m3,
    ];

    /// A dtype pair of the group, to check a row's strategy against.
    pub fn example(self) -> (DType, DType) {
        match self {
            TypePair::F32 => (DType::F32, DType::F32),
            TypePair::Sixteen | TypePair::Other => (DType::BF16, DType::BF16),
            TypePair::Widening => (DType::BF16, DType::F32),
            TypePair::Narrowing => (DType::F32, DType::BF16),
            TypePair::F32ToE4m3 => (DType::F32, DType::E4M3),
            TypePair::SixteenToE4m3 => (DType::BF16, DType::E4M3),
        }
    }
}

/// One norm kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NormSpec {
    /// What the kernel computes over each row.
    pub op: NormOp,
    /// Softmax ops: safe or online; norms: `None`.
    pub algo: Option<SoftmaxAlgo>,
    /// Norms only: `h = x + residual` (rounded to the input type) is written to
    /// the residual output and normalised (`_res` in names).
    pub residual: bool,
    /// The element type of x (and of residual, weight and bias).
    pub input: DType,
    /// The element type of the output y.
    pub output: DType,
    /// How a row is spread over threads.
    pub layout: NormLayout,
    /// Threads per row: the group size (warp layout) or the block size.
    pub lanes: u32,
    /// Packs of 4 elements each thread holds.
    pub packs: u32,
    /// The general twin (`_g` in names): any buffer alignment, `ld` and row
    /// length. Without it the kernel takes whole packs only (`cols` and `ld`
    /// multiples of 4, every buffer 4-element aligned), with no element path
    /// and the registers that saves. Ask for the kernel without it: the
    /// launcher takes the twin for calls the kernel does not fit.
    pub general: bool,
    /// The launch bound's blocks per SM (`_o<n>` in names), instead of the
    /// `OCCUPANCY` table's: what `redjit bench norm --bounds` measures.
    pub bound: Option<u32>,
    /// Block or split layout (`_p` in names), whole packs only but for a
    /// deferred split kernel's staging twin (`_p_g`, `staged_twin`): blocks stay
    /// resident and take rows in turn (split: in cohorts of a row's blocks),
    /// and each copies its next row or chunk (x, and the residual) into shared
    /// memory with cp.async while it reduces and stores this one, so those
    /// loads are in flight through the reductions, a split row's wait on its
    /// other blocks, and the stores. A block's columns of the weight and bias
    /// are staged there once where they fit (`staged_cols`); else a split
    /// block holds its chunk's in registers (`held_cols`) or reads them from
    /// global memory. All of it must fit `MAX_STAGE_BYTES`.
    pub prefetch: bool,
    /// The row streams' whole-pack loads (x, and the residual) allocate no L1
    /// line (`ld.global.nc.L1::no_allocate`, `_n` in names): L1 then keeps the
    /// per-column weight and bias every row reads again, which rows of 32768
    /// otherwise evict.
    pub no_l1: bool,
    /// Whole packs only (`_x` in names): rows of exactly the warp group's or
    /// block's capacity, or of a whole number of the split layout's chunks
    /// (`fills_exactly`), so no pack needs a bounds test (27-39 % fewer SASS
    /// instructions in the 16-bit block kernels of 16 packs counted, 15-22 % in
    /// the 16-bit deferred split kernels), and its packs are addressed from
    /// one base (layer norm's block kernels also store each pack as they make
    /// it: `stores_each_pack`). `for_cols` asks for it where
    /// measured faster and the row fills the layout; the launcher takes the
    /// kernel without it (its ragged twin) for a call of other rows.
    pub exact: bool,
    /// Split layout (`_c<n>` in names, sm_90+): each row's blocks are one
    /// thread-block cluster of `n` (2 to `MAX_CLUSTER`), each a chunk of the
    /// row in `n` equal parts, which exchange their states through distributed
    /// shared memory: no workspace, and no block waits on one that is not
    /// running. The kernel holds rows of at most `n` chunks.
    pub cluster: Option<u32>,
    /// Packs of its chunk's weight and bias a deferred split kernel (or a
    /// plain block or warp kernel) loads into registers once and holds for the
    /// launch (`_h<n>` in names, 0 to `packs`), instead of `held_cols`'s rule
    /// (none for a block or warp kernel): what the benchmarks and tuning
    /// tables compare.
    pub held: Option<u32>,
    /// A 16-bit whole-pack block or warp kernel (16-bit in and out, an even
    /// number of packs, not prefetching; `_v` in names) holds its packs in
    /// adjacent pairs, each one 16-byte load or store rather than two of 8
    /// (`paired_packs`); the launcher gives it only rows and buffers on the
    /// grid of whole pairs (`whole_pairs_fit`), the others on the grid of
    /// packs to its ragged twin (in packs).
    /// Fewer instructions a row: ahead at a few rows, behind on rows that keep
    /// every SM busy (`benchmarks/h200/tune-norm.jsonl`), so the tables choose.
    pub pairs: bool,
    /// A 16-bit block kernel (`_r` in names, `can_hold_raw`) holds its row as
    /// the raw 16-bit words it loaded (`raw_rows`) rather than widened to
    /// f32: half the registers, so more blocks an SM. bf16 online softmax
    /// b512x16 at 2 blocks an SM compiled without a spill so and ran ahead of
    /// every widened kernel at 8192x32768 on the H200
    /// (`benchmarks/h200/tune-norm.jsonl`); the tables choose.
    pub raw: bool,
    /// Layer and RMS norm with an FP8 e4m3 output (`_qd`, `_qs` in names): y
    /// is stored as e4m3(y / scale), rounded to nearest even and saturated at
    /// +-448, the row held in one block or lane group (warp and block layouts).
    pub fp8: Option<Fp8Scale>,
}

/// How a norm's FP8 (e4m3) output is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fp8Scale {
    /// `_qd`: each row's own scale, max |y| / 448 but at least 1 / (448 x 512)
    /// (the floor vLLM's `rms_norm_dynamic_per_token_quant` takes), written to
    /// the scale buffer (rows f32).
    PerRow,
    /// `_qs`: one scale for every row, read from the scale buffer (1 f32).
    Given,
}

impl Fp8Scale {
    /// The suffix in kernel names.
    pub fn suffix(self) -> &'static str {
        match self {
            Fp8Scale::PerRow => "qd",
            Fp8Scale::Given => "qs",
        }
    }
}

/// The largest finite e4m3 value: a per-row scale maps the row's max |y| to it.
pub const E4M3_MAX: f32 = 448.0;
/// The smallest per-row scale (`Fp8Scale::PerRow`): 1 / (448 x 512).
pub const FP8_MIN_SCALE: f32 = 1.0 / (448.0 * 512.0);
/// The most packs a thread of an FP8-output kernel holds: a block of 512
/// holds rows of up to 16384. With 16, b512x16 spilled 56-288 bytes at its
/// 128 registers (ptxas 13.0).
pub const FP8_MAX_PACKS: u32 = 8;

impl Default for NormSpec {
    /// Online softmax of f32 rows up to 512 long.
    fn default() -> Self {
        NormSpec {
            op: NormOp::Softmax,
            algo: Some(SoftmaxAlgo::Online),
            residual: false,
            input: DType::F32,
            output: DType::F32,
            layout: NormLayout::Warp,
            lanes: 32,
            packs: 4,
            general: false,
            bound: None,
            prefetch: false,
            no_l1: false,
            exact: false,
            cluster: None,
            held: None,
            pairs: false,
            raw: false,
            fp8: None,
        }
    }
}

/// How a launch is laid out: derived from the spec, the shape and the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// gridDim.x; blockDim.x is `threads()`.
    pub grid: u32,
    /// Blocks per row (split layout); 1 otherwise.
    pub splits: u32,
    /// Elements of a row each of its blocks takes (split layout: the row in
    /// `splits` equal parts, [`NormSpec::split_span`]); the row's length
    /// otherwise.
    pub span: u32,
    /// u32 counters the launch needs, zeroed when allocated: a work ticket and
    /// two per row (split layout), a ticket and the launches' epoch (deferred
    /// split layout, `_p`); 0 otherwise.
    pub counters: usize,
    /// Partial states (`NormSpec::partial_bytes` each) the launch writes.
    pub partials: usize,
    /// Launched cooperatively, so that every block of the grid runs at once:
    /// a [`NormSpec::one_wave`] kernel whose grid holds every item (an item a
    /// block, one resident wave). Such a kernel takes its item from its block
    /// index, with no ticket before its first row load, exactly when `grid` is
    /// the item count, which is when the plan launches it so.
    pub cooperative: bool,
}

impl Plan {
    /// This plan launched as an ordinary grid where a cooperative launch is
    /// not to be had (the device or its partition refuses it, or
    /// `RuntimeOptions::no_cooperative_launch`): one block more than the
    /// items, so that the one-wave kernel, which takes its item from its block
    /// index only when the grid is exactly the item count, takes every item by
    /// ticket (the spare block's ticket is past the items, and it leaves). A
    /// ticket kernel needs only a row's blocks resident at once, not the
    /// grid's, which the launcher checks as it checks every split launch. Any
    /// other plan is returned as it is.
    pub fn by_ticket(self) -> Plan {
        if !self.cooperative {
            return self;
        }
        Plan {
            grid: self.grid + 1,
            cooperative: false,
            ..self
        }
    }
}

/// The operations a row can get, in matrix order: each softmax with each
/// algorithm, then each norm without and with the residual add.
pub fn row_ops() -> Vec<(NormOp, Option<SoftmaxAlgo>, bool)> {
    let mut out = Vec::new();
    for &op in NormOp::ALL {
        if op.info().softmax {
            for &a in SoftmaxAlgo::ALL {
                out.push((op, Some(a), false));
            }
        } else {
            out.push((op, None, false));
            out.push((op, None, true));
        }
    }
    out
}

impl NormSpec {
    /// The spec of `op` (with `algo` and `residual`) for `input` -> `output`,
    /// laid out by the default ladder for rows of `cols`.
    pub fn with(
        (op, algo, residual): (NormOp, Option<SoftmaxAlgo>, bool),
        input: DType,
        output: DType,
        cols: u64,
    ) -> NormSpec {
        NormSpec {
            op,
            algo,
            residual,
            input,
            output,
            ..NormSpec::default()
        }
        .for_cols(cols)
    }

    /// The same op writing e4m3, scaled by `q` (`_qd`: each row's own scale,
    /// written; `_qs`: one given scale).
    pub fn to_e4m3(&self, q: Fp8Scale) -> NormSpec {
        NormSpec {
            output: DType::E4M3,
            fp8: Some(q),
            ..self.clone()
        }
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        match self.layout {
            NormLayout::Warp => WARP_LAYOUT_THREADS,
            NormLayout::Block | NormLayout::Split | NormLayout::Loop => self.lanes,
        }
    }

    /// How the tables group this kernel's element types.
    fn row_types(&self) -> RowTypes {
        match TypePair::of(self.input, self.output) {
            TypePair::F32 => RowTypes::F32,
            TypePair::Sixteen => RowTypes::Sixteen,
            TypePair::Widening
            | TypePair::Narrowing
            | TypePair::F32ToE4m3
            | TypePair::SixteenToE4m3
            | TypePair::Other => RowTypes::Mixed,
        }
    }

    /// The launch bound's blocks per SM: `bound`, else from `OCCUPANCY` or
    /// `OCCUPANCY_GENERAL` (the most at which
    /// ptxas compiled the kernel's op and layout without a stack frame or a
    /// spill), else 1 (registers up to 65536 / threads, 255 at most). Without a
    /// minimum ptxas aimed some kernels at 32..64 registers and spilled the
    /// row; with a minimum of 1 it spent up to 96 registers on rows of 4 packs,
    /// which left 2..4 blocks of 256 on an SM, too few rows in flight for a
    /// 16-bit row (half the bytes a row) to cover memory latency.
    pub fn min_blocks(&self) -> u32 {
        if let Some(b) = self.bound {
            return b;
        }
        // An FP8 output's kernels (no table entry): 64 registers a thread up
        // to 4 packs, 128 at 8, and twice that for layer norm's lane groups.
        // At the tables' bounds (40 for a block of 256 x 4 with the residual)
        // the second reduction and the scaling spilled 24-88 bytes; layer
        // norm's groups spilled 8-32 at the budget of the others (ptxas 13.0).
        if self.fp8.is_some() {
            let warp_layer = self.op == NormOp::LayerNorm && self.layout == NormLayout::Warp;
            let per_thread = match (self.packs, warp_layer) {
                (..=4, false) => 64,
                (..=4, true) | (_, false) => 128,
                (_, true) => 255,
            };
            return (65536 / (self.threads() * per_thread)).max(1);
        }
        let op = self.op_key();
        // A warp-layout block is 256 threads whatever its group size: its
        // registers a thread mostly follow the packs, so the 32-lane entry
        // stands for a group size without an entry of its own.
        let letter = self.layout.info().letter;
        let plain = self.layout_key();
        // A prefetching or exact kernel's own entry, where it has one.
        let staged = format!("{plain}_p");
        let exact = format!("{plain}_x");
        let warp32 = format!("{letter}32x{}", self.packs);
        // The table's column: f32 rows, 16-bit rows, or different dtypes.
        let column = self.row_types() as usize;
        // A deferred general twin (`_p_g`) stages its rows as the deferred
        // kernel does, at that kernel's bound.
        let table = if self.general && !self.prefetch {
            OCCUPANCY_GENERAL
        } else {
            OCCUPANCY
        };
        let entry = |layout: &str| {
            table
                .iter()
                .find(|(o, l, ..)| *o == op && *l == layout)
                .map(|&(_, _, f32_rows, b16_rows, mixed)| [f32_rows, b16_rows, mixed][column])
        };
        let bound = self
            .prefetch
            .then(|| entry(&staged))
            .flatten()
            .or_else(|| self.exact.then(|| entry(&exact)).flatten())
            .or_else(|| entry(&plain))
            .or_else(|| {
                (self.layout == NormLayout::Warp)
                    .then(|| entry(&warp32))
                    .flatten()
            })
            .unwrap_or(1);
        // Packs in pairs: their own bound where the layout's spilled.
        let bound = match self.paired_bound() {
            Some(p) if self.pairs => bound.min(p.max(1)),
            _ => bound,
        };
        // No more blocks than the SM's shared memory holds staged rows of:
        // registers a bound leaves unused are registers a thread could have.
        match self.stage_bytes() {
            0 => bound,
            stage => bound.min((SM_SHARED_BYTES / stage).max(1) as u32),
        }
    }

    /// How the kernel loads whole packs of its row streams (x, the
    /// residual): past L1 (`no_l1`), or, in the warp layout, each L2 miss
    /// filled as a whole 128-byte line (a warp's pack loads cover several rows
    /// a piece each: w8x4, 64 bytes of each of four rows). Whole lines put the
    /// 16-bit warp kernels a little ahead at 262144x128 and left the f32 ones
    /// within their spread; 256-byte lines lost (H100; commit b5f71bc).
    fn row_load(&self) -> &'static str {
        if self.no_l1 {
            "rj_load_stream"
        } else if self.layout == NormLayout::Warp {
            "rj_load_nc_line"
        } else {
            "rj_load_nc"
        }
    }

    /// Whether the row op stores each pack as it makes it, the next packs'
    /// weight and bias loaded ahead (`rj_out_stored`), rather than leaving the
    /// row for the kernel to store: layer norm's exact block kernels. With
    /// every pack's weight and bias loaded before the first store, f32
    /// b512x16_x spilled 80 bytes (ptxas 13.0); storing as it goes, it ran
    /// ahead of b512x16_n at 8192x32768, and bf16 b512x16_x level with the
    /// kernel before (H100; commit 3b614f8).
    pub fn stores_each_pack(&self) -> bool {
        self.op == NormOp::LayerNorm
            && self.layout == NormLayout::Block
            && self.exact
            && self.fp8.is_none()
    }

    /// Whether a block per row reduces layer norm's (sum, sum of squares) in
    /// f32, a second time only for a row far from zero, rather than Chan's
    /// merge of (n, mean, m2). The two plain sums it replaced (the row's sum,
    /// then its squares about the mean) won everywhere but at 16-bit rows in
    /// 512-thread blocks without the residual (H100; commit 24855a6; b512x8 there
    /// compiles clean at 2 blocks an SM with Chan's
    /// merge, at 1 with the two sums). The pair spills those 16-bit kernels
    /// without the residual as well (bf16 b512x8_x 24 bytes, f16 b512x16_x
    /// 64), so they keep Chan's merge. Groups (warp
    /// layout) always take the pair; split rows exchange one state.
    pub fn sum_pair(&self) -> bool {
        self.residual
            || !(self.layout == NormLayout::Block
                && self.lanes >= 512
                && self.input.info().bytes < 4)
    }

    /// This kernel without the forms a table row gives its own kernel (the
    /// exact form, columns held, packs in pairs, a launch bound): what its
    /// twins start from, each taking its own.
    pub(crate) fn without_row_forms(&self) -> NormSpec {
        NormSpec {
            exact: false,
            held: None,
            pairs: false,
            raw: false,
            bound: None,
            ..self.clone()
        }
    }

    /// The general twin of this kernel (`_g`): any alignment, `ld` and length.
    ///
    /// A kernel of 16 packs has a split twin of 8 (`s512x8_g`): with the
    /// element path, 16 packs a thread spilled 100–300 bytes under ptxas 13.0
    /// for every op at 512 threads, and the twin serves only ragged or
    /// misaligned rows.
    /// A general kernel is its own twin.
    pub fn general_twin(&self) -> NormSpec {
        if self.general {
            return self.clone();
        }
        // A cluster row's twin keeps its layout (`validate` holds its packs
        // to a general twin's), as a loop's does (its packs are few: its
        // point).
        if self.cluster.is_some() || self.layout == NormLayout::Loop {
            return NormSpec {
                general: true,
                ..self.without_row_forms()
            };
        }
        // Staging is for whole packs: the twin loads its rows directly.
        let mut twin = NormSpec {
            general: true,
            prefetch: false,
            ..self.without_row_forms()
        };
        // An FP8 output takes whole packs: its twin is refused by `validate`,
        // naming the rule, when a call off the pack grid asks for it.
        if self.fp8.is_some() {
            return twin;
        }
        // RMS norm between two dtypes spilled 80 bytes at b512x8_g too (ptxas
        // 13.0, at 1 block an SM), f32 -> bf16 layer norm 336: their twin is
        // the split s512x4_g.
        let mixed_norm = (twin.op == NormOp::RmsNorm || twin.op == NormOp::LayerNorm)
            && !twin.residual
            && twin.input != twin.output
            && twin.lanes * twin.packs >= 512 * GENERAL_MAX_PACKS;
        // A deferred split kernel of fewer packs (its three staged rows'
        // size) has a split twin of its own (softmax: 8 packs; a norm: below).
        let deferred = self.prefetch && self.layout == NormLayout::Split;
        // A norm's split rows: the split twin at 2 blocks an SM. Of 4 packs
        // (492 items at 4x1000003 in 264 resident blocks; `two_pass` keeps a
        // block from waiting on the rest of its row) for f32 layer norm and
        // RMS norm + residual and the norms between dtypes: measured faster
        // than s512x8_g (one block an SM) for every norm op and dtype at
        // 4x1000003 and 64x1048573 (H100; commit 74485f5).
        let split_norm = !twin.op.info().softmax && self.layout == NormLayout::Split;
        // Of 8 packs, one pass, for RMS norm (without the residual, one dtype
        // in and out: 64 registers, none spilled; one wave of 248 items at
        // 4x1000003): ahead of s512x4_o2_g's two passes for bf16, f16 and f32
        // at 4x1000003 and 64x1048573 (f32 level at 4x1000003; H100;
        // commit 7cd3dbc). bf16 -> f32 spilled 4 bytes (a
        // mixed norm: 4 packs).
        // 16-bit RMS norm + residual and layer norm (with and without the
        // residual) hold their rows as raw words to fit, and 16-bit RMS norm
        // too, for its weight's registers (`raw_rows` says why); f32 layer
        // norm keeps two passes of 4 packs.
        let one_pass_of_8 = split_norm
            && twin.input == twin.output
            && match twin.op {
                NormOp::RmsNorm => !twin.residual || twin.input.info().bytes == 2,
                NormOp::LayerNorm => twin.input.info().bytes == 2,
                NormOp::Softmax | NormOp::LogSoftmax => false,
            };
        if twin.packs > GENERAL_MAX_PACKS || mixed_norm || deferred || split_norm {
            twin.layout = NormLayout::Split;
            twin.lanes = 512;
            twin.packs = if one_pass_of_8 {
                GENERAL_MAX_PACKS
            } else if mixed_norm || split_norm {
                4
            } else {
                GENERAL_MAX_PACKS
            };
            if split_norm {
                twin.bound = Some(2);
            }
            if twin.algo == Some(SoftmaxAlgo::Safe) {
                twin.algo = Some(SoftmaxAlgo::Online);
            }
        }
        twin
    }

    /// A deferred split kernel's staging general twin (`_p_g`): its cohorts
    /// stage each row's chunks at the row's own shift from the pack grid, so
    /// all but a row's first and last packs are whole cp.async copies. Other
    /// kernels, and f32 layer norm (behind its direct twin at 64x1048573;
    /// H100, commit adc0c5c), have none: `general_twin`.
    pub fn staged_twin(&self) -> NormSpec {
        if self.general || !self.deferred() || self.f32_layer_norm() {
            return self.general_twin();
        }
        // 16-bit log-softmax's spilled 16 bytes at its kernel's 2 blocks an
        // SM (ptxas 13.0): one block an SM.
        let log16 = self.op == NormOp::LogSoftmax && self.sixteen();
        NormSpec {
            general: true,
            exact: false,
            packs: self.packs.min(GENERAL_MAX_PACKS),
            bound: if log16 { Some(1) } else { self.bound },
            held: None,
            pairs: false,
            ..self.clone()
        }
    }

    /// The staging twin for rows of `cols`: rows of up to `STAGED_SHORT_COLS`
    /// take a short staging twin laid out for them (`short_staged_layout`),
    /// where an op has one, else `staged_twin`.
    pub fn staged_twin_for_cols(&self, cols: u64) -> NormSpec {
        let aligned_split = self.deferred() && !self.general;
        match self.short_staged_layout_for(cols) {
            Some((lanes, packs, bound)) if aligned_split => NormSpec {
                general: true,
                exact: false,
                lanes,
                packs,
                bound,
                held: None,
                pairs: false,
                ..self.clone()
            },
            _ => self.staged_twin(),
        }
    }

    /// This op's short staging layout for rows of `cols`: none past
    /// `STAGED_SHORT_COLS`.
    fn short_staged_layout_for(&self, cols: u64) -> Option<(u32, u32, Option<u32>)> {
        self.short_staged_layout()
            .filter(|_| cols <= STAGED_SHORT_COLS)
    }

    /// The short staging twin's (threads, packs, launch bound), if this op has
    /// one (for rows of up to `STAGED_SHORT_COLS`, a few chunks each, where a
    /// long rows' layout (`staged_twin`) left blocks waiting on their row's
    /// few others and the direct twin (`_g`) loads each chunk twice, the
    /// norms' two passes). Each is the fastest layout measured at 4096 rows of
    /// 40001, 50257 and 65537 (H100; commits e35394f and 72a3a45).
    ///
    /// The softmaxes, s256x8_p_g against s512x8_p_g and the direct twin
    /// s512x8_g:
    /// - 16-bit softmax, balanced (`balances`), at 3 blocks an SM (8 bytes
    ///   spilled at 4);
    /// - 16-bit log-softmax at 3 blocks an SM (16 bytes spilled at 4);
    /// - f32 softmax;
    /// - f32 log-softmax has none (its direct twin ran ahead).
    ///
    /// The norms, the best of s128x8, s256x4, s256x8 (bounds 2, 3, 4), s512x4
    /// and s512x8 against the direct twin s512x4_o2_g:
    /// - RMS norm, both widths, and 16-bit RMS norm + residual: s512x4;
    /// - layer norm: s256x8, 16-bit at 2 blocks an SM (72 bytes spilled at 3);
    /// - f32 layer norm + residual: s256x4;
    /// - 16-bit layer norm + residual: s512x4 with Chan's f32 state (it
    ///   spilled with the f64 sums: `f64_sums`);
    /// - none for f32 RMS norm + residual (its direct twin ran ahead).
    fn short_staged_layout(&self) -> Option<(u32, u32, Option<u32>)> {
        // The norms' staged stream is the input's; the softmaxes' measured
        // forms are 16-bit in and out.
        let narrow_in = self.input.info().bytes < 4;
        match (self.op, self.residual) {
            (NormOp::Softmax, _) => Some((256, 8, self.sixteen().then_some(3))),
            (NormOp::LogSoftmax, _) if self.sixteen() => Some((256, 8, Some(3))),
            (NormOp::RmsNorm, false) => Some((512, 4, None)),
            (NormOp::RmsNorm, true) if narrow_in => Some((512, 4, None)),
            (NormOp::LayerNorm, false) => Some((256, 8, narrow_in.then_some(2))),
            (NormOp::LayerNorm, true) if narrow_in => Some((512, 4, None)),
            (NormOp::LayerNorm, true) => Some((256, 4, None)),
            _ => None,
        }
    }

    /// 16-bit rows in and out.
    fn sixteen(&self) -> bool {
        self.input.info().bytes < 4 && self.output.info().bytes < 4
    }

    /// Layer norm of f32 input without the residual (any output type).
    fn f32_layer_norm(&self) -> bool {
        self.op == NormOp::LayerNorm && !self.residual && self.input.info().bytes == 4
    }

    /// The general twin a call of `rows` x `cols` off the pack grid takes, this
    /// kernel holding `resident` blocks on the device: the staging twin where
    /// a row spans `STAGED_TWIN_SPLITS` chunks or more and its cohorts take
    /// `STAGED_TWIN_ROWS` rows or more each, else the direct one. The staging
    /// twin against the direct one (H100; commit adc0c5c):
    /// - 64x1048573 (65-129 chunks a row, 16-64 rows a cohort): ahead for
    ///   every op it has;
    /// - 4096x50257 (4-7 chunks a row): ahead for five ops, behind for five
    ///   (among them the RMS norms + residual);
    /// - 4x1000003 (1-4 rows a cohort): level for 16-bit rows, behind for f32.
    ///
    /// A short staging twin (`short_staged_layout`) takes rows of any chunk
    /// count.
    pub fn general_twin_for(&self, rows: u64, cols: u64, resident: u64) -> NormSpec {
        let staged = self.staged_twin_for_cols(cols);
        if !staged.prefetch {
            return staged;
        }
        let short = self.short_staged_layout_for(cols).is_some();
        let splits = staged.splits_for(cols);
        let cohorts = (resident / splits).max(1);
        if (short || splits >= STAGED_TWIN_SPLITS) && rows >= STAGED_TWIN_ROWS * cohorts {
            staged
        } else {
            self.general_twin()
        }
    }

    /// Blocks a split row of `cols` takes: a general twin's row may start up
    /// to `row_grid() - 1` elements past its grid (rj_chunk's shift), which
    /// its chunks then cover too.
    pub fn splits_for(&self, cols: u64) -> u64 {
        if let Some(n) = self.cluster {
            return n.into();
        }
        self.reach(cols).div_ceil(self.chunk()).max(1)
    }

    /// The elements a row of `cols` spans from its chunks' first: a general
    /// twin's up to `row_grid() - 1` more (its packs' shift).
    fn reach(&self, cols: u64) -> u64 {
        if self.general {
            cols + self.row_grid() - 1
        } else {
            cols
        }
    }

    /// Elements of the grid a general twin's chunks start on, at the row's
    /// shift from it: a pack, or a pair of packs (`paired_packs`).
    pub fn row_grid(&self) -> u64 {
        if self.paired_packs() { 8 } else { 4 }
    }

    /// Whether a split row is held as raw 16-bit words rather than widened
    /// packs (`rj_row_ld_raw`, `row_raw`): half the registers, so twice the
    /// packs at the same blocks an SM (x as loaded and h = x + residual are
    /// exact in their type). The one-pass twins of 16-bit rows, in and out,
    /// of 8 packs, of RMS norm (with and without the residual; its sums and
    /// outputs the widened kernel's, bit for bit) and layer norm (the split
    /// rows' Welford form): s512x8_o2_g at 56-64 registers, where the widened
    /// residual norms spilled 164-180 bytes (ptxas 13.0), one wave at
    /// 4x1000003 (`general_twin`), well ahead of s512x4_o2_g. Plain RMS norm
    /// fit widened, and held raw it asks for its weight ahead of the stores in
    /// the registers that frees (rj_raw_cols), ahead of its widened form.
    /// Softmax and log-softmax (s512x8_g) too, in pairs, each output's
    /// exponential made again from the row's state, ahead of the widened twin,
    /// which keeps e^(x - thread max). All measured on the H100 (commits cd0ac76,
    /// 4210da4 and 95a5490).
    pub fn raw_rows(&self) -> bool {
        self.raw || self.raw_split_twin()
    }

    /// The split twins whose rows are raw by rule (`raw_rows`).
    fn raw_split_twin(&self) -> bool {
        self.one_pass_split()
            && self.general
            && self.input.info().bytes == 2
            && self.output.info().bytes == 2
            && self.packs == 8
    }

    /// Whether a thread holds its packs in adjacent pairs, each pair inside
    /// the row one 16-byte access rather than two of 8 (rj_chunk's G): the
    /// split twins of the 16-bit residual norms, in and out (RMS norm +
    /// residual's one pass, layer norm + residual's two), which move four row
    /// streams, and every raw row (`raw_rows`, measured with pairs only): they
    /// ran ahead of packs a lane apart. The others lost with pairs: the
    /// softmax twins (s512x8_g, widened, before they held raw words; 64
    /// registers either way, more SASS instructions), and the two-pass layer
    /// norm and RMS norm at 64x1048573 (H100; commit 54d0195).
    /// Also a whole-pack block or warp kernel that asks for them (`pairs`).
    pub fn paired_packs(&self) -> bool {
        let split_twin = (self.one_pass_split() || self.two_pass())
            && self.general
            && (self.residual || self.raw_rows())
            && self.input.info().bytes == 2
            && self.output.info().bytes == 2
            && self.packs.is_multiple_of(2);
        split_twin || self.pairs
    }

    /// Whether this kernel can hold its row raw (`raw`): a block kernel,
    /// 16-bit in and out, without held columns, an FP8 output or staging
    /// (`_p`): a row op's raw form (`row_raw`) reads its own columns and
    /// serves a block's reduction. With the residual, 8 packs a thread or
    /// more: RMS norm + residual's b256x4 and b512x4 spilled raw at their 32
    /// registers (ptxas 13.0).
    pub fn can_hold_raw(&self) -> bool {
        self.layout == NormLayout::Block
            && (!self.residual || self.packs >= 8)
            && self.held.is_none()
            && self.fp8.is_none()
            && !self.prefetch
            && self.input.info().bytes == 2
            && self.output.info().bytes == 2
    }

    /// This kernel's raw forms (`raw`), unpaired and without held columns, at
    /// its own launch bound and at one more block an SM, which the registers
    /// a raw row frees may hold (`validate` still judges that bound); none
    /// where it cannot hold its row raw. What `redjit tune` times and the GPU
    /// tests check.
    pub fn raw_forms(&self) -> Vec<NormSpec> {
        let raw = NormSpec {
            raw: true,
            pairs: false,
            held: None,
            ..self.clone()
        };
        if !raw.can_hold_raw() {
            return Vec::new();
        }
        let more = NormSpec {
            bound: Some(raw.min_blocks() + 1),
            ..raw.clone()
        };
        vec![raw, more]
    }

    /// Whether this kernel can take its packs in pairs (`pairs`): a 16-bit
    /// whole-pack block or warp kernel of an even number of packs, not
    /// prefetching (a staged row is copied a pack at a time), that compiles
    /// without a spill at some bound (`OCCUPANCY_PAIRED`).
    pub fn can_pair_packs(&self) -> bool {
        !self.general
            && !self.prefetch
            && matches!(self.layout, NormLayout::Block | NormLayout::Warp)
            && self.input.info().bytes == 2
            && self.output.info().bytes == 2
            && self.packs.is_multiple_of(2)
            && self.paired_bound() != Some(0)
    }

    /// The layout as the launch-bound tables name it: `w32x4`, `b256x8`.
    fn layout_key(&self) -> String {
        format!("{}{}x{}", self.layout.info().letter, self.lanes, self.packs)
    }

    /// The op as the launch-bound tables name it: `layernorm_res`,
    /// `softmax_online`.
    fn op_key(&self) -> String {
        let mut op = self.op.to_string();
        if let Some(a) = self.algo {
            op += &format!("_{a}");
        }
        if self.residual {
            op += "_res";
        }
        op
    }

    /// This layout's entry of `OCCUPANCY_PAIRED`, if it has one.
    fn paired_bound(&self) -> Option<u32> {
        let layout = format!(
            "{}{}{}{}",
            self.layout_key(),
            if self.no_l1 { "_n" } else { "" },
            if self.exact { "_x" } else { "" },
            self.held.map_or(String::new(), |h| format!("_h{h}"))
        );
        let op = self.op_key();
        OCCUPANCY_PAIRED
            .iter()
            .find(|(o, l, _)| *o == op && *l == layout)
            .map(|&(.., b)| b)
    }

    /// Elements each of a split row's blocks takes: the row (a general twin's
    /// reaching up to `row_grid() - 1` further) in [`NormSpec::splits_for`] equal parts, rounded
    /// up to whole packs, so at most [`NormSpec::chunk`]. The layout's chunks
    /// and a remainder left a row's last block waiting mostly empty: at
    /// 4096x50257 the seventh chunk of 8192 held 1105 elements, where the
    /// balanced seven hold 7180 each.
    pub fn split_span(&self, cols: u64) -> u64 {
        if !self.balances() {
            return self.chunk();
        }
        self.reach(cols)
            .div_ceil(self.splits_for(cols))
            .next_multiple_of(4)
    }

    /// Whether this kernel cuts a split row in equal chunks (`split_span`):
    /// the deferred kernels (`_p`) and the short staging twins, whose rows
    /// may span a few chunks. The direct twins (`_g`) and the long rows'
    /// staging twins (taken at 16 chunks a row or more) keep the layout's
    /// chunks: the chunk's own bound cost them a register, and at 4x1000003
    /// (62 chunks a row) and 64x1048573 (64, every chunk whole) they ran
    /// behind (bf16 softmax s512x8_p_g also spilled 8 bytes; H100;
    /// commit 72a3a45).
    pub fn balances(&self) -> bool {
        self.layout == NormLayout::Split
            && (self.cluster.is_some() || self.prefetch && (!self.general || self.is_short_twin()))
    }

    /// A general deferred kernel laid out as its op's short staging twin
    /// (`short_staged_layout`).
    fn is_short_twin(&self) -> bool {
        self.general
            && self.deferred()
            && self.short_staged_layout() == Some((self.lanes, self.packs, self.bound))
    }

    /// Whether a whole-pack kernel (not the general twin) takes rows of
    /// `cols` with leading dimension `ld` from buffers at the (address, element
    /// bytes) of `buffers`, which are read only while everything before fits.
    pub fn whole_packs_fit(
        cols: u64,
        ld: u64,
        buffers: impl IntoIterator<Item = (u64, u64)>,
    ) -> bool {
        Self::on_grid(4, cols, ld, buffers)
    }

    /// Whether a kernel whose packs go in pairs (`pairs`) takes such rows:
    /// all on the grid of whole pairs (the launcher hands the others to its
    /// ragged twin, in packs).
    pub fn whole_pairs_fit(
        cols: u64,
        ld: u64,
        buffers: impl IntoIterator<Item = (u64, u64)>,
    ) -> bool {
        Self::on_grid(8, cols, ld, buffers)
    }

    fn on_grid(
        grid: u64,
        cols: u64,
        ld: u64,
        buffers: impl IntoIterator<Item = (u64, u64)>,
    ) -> bool {
        cols.is_multiple_of(grid)
            && ld.is_multiple_of(grid)
            && buffers
                .into_iter()
                .all(|(a, bytes)| a.is_multiple_of(grid * bytes))
    }

    /// Row streams a kernel loads: x, and the residual.
    fn streams(&self) -> u64 {
        1 + u64::from(self.residual)
    }

    /// Per-column vectors a row op reads: weight, and bias.
    fn vectors(&self) -> u64 {
        let info = self.op.info();
        if info.softmax {
            0
        } else {
            1 + u64::from(info.bias)
        }
    }

    /// Whether this kernel can hold its columns of the weight and bias in
    /// registers: a deferred split kernel's whole-pack form (a block keeps its
    /// chunk, so its columns, in every row), and the kernels that
    /// `holds_cols_from_launch`.
    fn can_hold_cols(&self) -> bool {
        (self.deferred() || self.holds_cols_from_launch()) && !self.general && self.vectors() > 0
    }

    /// The plain block layout (no staging) and the warp layout: every row a
    /// block or lane group takes has the same columns, so it can load its
    /// weight and bias once, at the launch's start, and hold them (`_h<n>`,
    /// asked for by a tuning table): their loads are then in flight beside the
    /// first row's rather than after its reduction.
    pub fn holds_cols_from_launch(&self) -> bool {
        match self.layout {
            NormLayout::Block => !self.prefetch,
            NormLayout::Warp => true,
            NormLayout::Split | NormLayout::Loop => false,
        }
    }

    /// Packs of its chunk's weight and bias a deferred split kernel loads into
    /// registers once and holds for the launch (0: none; the rest it loads
    /// each row it finishes): `held`, else every pack (at most `HELD_CAPS`'s)
    /// for layer norm and f32 RMS norm without the residual, where the columns
    /// are not staged in shared memory (`staged_cols`; f32 layer norm holds
    /// them where they would be). Loaded each row, they reached the finishing
    /// pass from L2 after the row's states came in; held, layer norm and f32
    /// RMS norm ran ahead of their `_h0` (H100; commit fd1140f). 16-bit RMS norm (a
    /// little behind held) and the RMS norms
    /// with the residual (level) keep loading them.
    pub fn held_cols(&self) -> u32 {
        if !self.can_hold_cols() {
            return 0;
        }
        if let Some(h) = self.held {
            return h;
        }
        if self.holds_cols_from_launch() {
            return 0;
        }
        // Where the columns fit beside the staged rows, f32 layer norm
        // holds them rather than stage them (s512x4_p, faster so at
        // 64x1000000 and 256x262144); 16-bit layer norm s512x8_p stages them
        // (faster so at 64x1000000). H100; commit fd1140f.
        if self.cols_fit_staged() && !self.f32_layer_norm() {
            return 0;
        }
        let holds = match self.op {
            NormOp::LayerNorm => true,
            NormOp::RmsNorm => !self.residual && self.input.info().bytes == 4,
            NormOp::Softmax | NormOp::LogSoftmax => false,
        };
        if !holds {
            return 0;
        }
        HELD_CAPS
            .iter()
            .find(|&&(op, residual, input, packs, _)| {
                (op, residual, input, packs) == (self.op, self.residual, self.input, self.packs)
            })
            .map_or(self.packs, |&(.., held)| held)
    }

    /// Whether a prefetching kernel with a weight stages its columns of the
    /// weight and bias once: the block layout (every row of a block has the
    /// same columns), and
    /// the split layout's cohorts (a block keeps its chunk in every row) where
    /// they fit beside the three staged rows, but for 16-bit RMS norm with the
    /// residual. At 64x1048576 staged columns made 16-bit layer norm s512x8_p
    /// and f32 RMS norm + residual s512x4_p faster, and 16-bit RMS norm +
    /// residual s512x8_p slower (H100; commit ee15765).
    fn staged_cols(&self) -> bool {
        self.cols_fit_staged() && self.held_cols() == 0
    }

    /// Whether `staged_cols` would stage the columns, but for holding them.
    fn cols_fit_staged(&self) -> bool {
        let beside_rows = (self.staged_rows() * self.streams() + self.vectors())
            * self.chunk()
            * self.input.info().bytes as u64;
        let rms_res_16 = self.op == NormOp::RmsNorm && self.residual && self.input.info().bytes < 4;
        // A general twin's chunk moves with its row's shift: no fixed columns.
        self.prefetch
            && !self.general
            && self.vectors() > 0
            && match self.layout {
                NormLayout::Block => true,
                // A cluster row's block keeps its chunk in every row.
                NormLayout::Split => {
                    beside_rows <= MAX_STAGE_BYTES && (self.cluster.is_some() || !rms_res_16)
                }
                NormLayout::Warp | NormLayout::Loop => false,
            }
    }

    /// Vectors (weight, bias) a prefetching kernel stages.
    fn staged_vectors(&self) -> u64 {
        if self.staged_cols() {
            self.vectors()
        } else {
            0
        }
    }

    /// Rows a prefetching block holds staged at once: the block layout its
    /// next; the split layout three, the row it publishes, the row before (to
    /// finish) and the row after (in flight).
    fn staged_rows(&self) -> u64 {
        match self.layout {
            NormLayout::Split if self.cluster.is_none() => 3,
            _ => 1,
        }
    }

    /// Dynamic shared memory a launch takes: a prefetching kernel's staged rows
    /// or chunks (every stream it loads) and, in the block layout, its columns
    /// of the weight and bias, else 0.
    pub fn stage_bytes(&self) -> u64 {
        if self.prefetch {
            (self.staged_rows() * self.streams() + self.staged_vectors())
                * self.chunk()
                * self.input.info().bytes as u64
        } else {
            0
        }
    }

    /// Slots of a row's states a lane reads at once in a deferred split row
    /// (`_p`): 4 where a block has an SM's registers to itself (bound 1), else
    /// one. At 64x1048576 (64 blocks a row) 4 made f32 softmax faster; at
    /// bound 2 the 16-bit softmax spilled with it (36 bytes) and fell well
    /// behind (H100; commit 5a581bb).
    pub fn fetch_ahead(&self) -> u32 {
        if self.min_blocks() == 1 { 4 } else { 1 }
    }

    /// Of those, the slots asked for before the block publishes its next row:
    /// all of them where their registers held (under 32 chunks a row of 2^20;
    /// not a layer norm's three words a slot beside a residual), else 1. With all 4
    /// early, 16-bit RMS norm of 16 packs spilled 8 bytes and 16-bit layer
    /// norm with the residual 20. 16-bit layer norm ran well ahead with 4 early
    /// than with 1 (H100, 64x1048576; commit 4c880a0).
    pub fn fetch_early(&self) -> u32 {
        let wide_state_beside_residual = self.split_state_words() >= 3 && self.residual;
        if self.chunk() < (1 << 20) / 32 && !wide_state_beside_residual {
            self.fetch_ahead()
        } else {
            1
        }
    }

    /// A deferred split row's second pass spreads the row's states over the
    /// warps (`rj_red_fetch_wide`) rather than warp 0's batches: where it
    /// measured faster (f32 RMS norm, with and without the residual, and 16-bit
    /// layer norm; the numbers are in the prelude beside it), and for f32 layer
    /// norm of 8 packs, which spills without it (below).
    pub fn fetch_wide(&self) -> bool {
        let f32_rms = self.op == NormOp::RmsNorm && self.input.info().bytes == 4;
        let layer = self.op == NormOp::LayerNorm && !self.residual;
        let layer_16 = layer && self.input.info().bytes < 4;
        // f32 layer norm of 8 packs: warp 0's batches spilled s512x8_p_x (16
        // bytes, ptxas 13.0), the warps' slots do not. Of 4 packs, wide lost
        // (s512x4_p_x against s512x4_p, H100, 64x1048576).
        let layer_f32_wide_rows = layer && self.input.info().bytes == 4 && self.packs >= 8;
        (self.deferred() && (f32_rms || layer_16 || layer_f32_wide_rows)) || self.two_pass()
    }

    /// A deferred split row, or a loop row, of 16-bit layer norm exchanges
    /// its sum and sum of squares in f64 (`rj_red_sum_sq64`) rather than
    /// Chan's (n, mean, m2): faster so for bf16 l512x4 at 4096 rows of 33000
    /// to 50256 (f32 layer norm l512x8 lost with them) and for the 16-bit
    /// deferred split kernels, with and without the residual, at 64x1048576.
    /// Not the short staging twin of 16-bit layer norm + residual, s512x4,
    /// which spilled 4 bytes with them and ran faster without at 4096x50257
    /// (its staging twins without the residual, and the long ones, ran behind
    /// without them). It lost elsewhere (f32 layer norm s512x4_p, f32 layer
    /// norm + residual s512x4_p, bf16 layer norm + residual s512x8) and
    /// spilled f32 layer norm s512x8 and s256x8 at their bounds.
    ///
    /// With its columns held in registers (`held_cols`), f32 layer norm +
    /// residual's exact deferred kernel takes them too: s512x4_p_x ran ahead
    /// at 64x1048576, 4096x65536 and 256x262144; its ragged s512x4_p lost at
    /// 64x1000000, and f32 layer norm s512x8_p_x, holding a pack fewer for
    /// their registers, ran level. All measured on the H100 (commit 684bfe8).
    pub fn f64_sums(&self) -> bool {
        let f32_res_exact = self.residual
            && self.exact
            && self.deferred()
            && self.input == DType::F32
            && self.output == DType::F32;
        self.op == NormOp::LayerNorm
            && (f32_res_exact
                || self.input.info().bytes < 4
                    && (self.layout == NormLayout::Loop
                        || self.deferred() && !(self.residual && self.is_short_twin())))
    }

    /// 32-bit words of the state a split row's blocks exchange.
    fn split_state_words(&self) -> u32 {
        if self.f64_sums() {
            4
        } else {
            self.op.info().split_state_words
        }
    }

    /// A general twin's split rows of layer norm (with or without the
    /// residual) and RMS norm (without) go over the items twice, from one
    /// ticket: every chunk's state is published first, then each chunk is
    /// loaded again and finished once its row's states are all in. No block
    /// waits while a chunk of the first pass is unpublished. Against one pass,
    /// layer norm (bf16, f32) and f32 RMS norm ran ahead at 4x1000003 and
    /// 64x1048573; f32 layer norm + residual lost at 4x1000003 and won at
    /// 64x1048573. The softmax twins (one wave at 4x1000003 already) and RMS
    /// norm + residual lost with it where the second load of a long row comes
    /// from memory (64x1048573): they keep one pass.
    ///
    /// Only the long rows' twins (4 packs: rows past 32768 columns, many
    /// chunks a row) take it. The twins of 16385..32768 columns (s512x8_g, 2
    /// or 3 chunks a row, whose waits overlap) lost with it for 16-bit rows
    /// where the rows outgrow L2 (8192x32767; f32 layer norm gained a little).
    /// All measured on the H100 (commit 333da21).
    pub fn two_pass(&self) -> bool {
        let norm = match self.op {
            NormOp::LayerNorm => true,
            NormOp::RmsNorm => !self.residual,
            NormOp::Softmax | NormOp::LogSoftmax => false,
        };
        self.layout == NormLayout::Split
            && self.general
            && !self.prefetch
            && self.cluster.is_none()
            && norm
            && self.packs <= 4
    }

    /// Whether a general twin starts each row's chunks at the row's shift
    /// from the pack grid (`row_grid`), so that all but its first and last
    /// packs are whole vector accesses: the split layout's, and the loop's
    /// RMS norm, which ran well ahead with it (bf16 l512x4_g at 4096x36865).
    /// The other loop twins ran slower with it (H100; commit 7eca7bb).
    fn row_shift(&self) -> bool {
        self.general
            && match self.layout {
                NormLayout::Split => true,
                NormLayout::Loop => self.op == NormOp::RmsNorm && !self.residual,
                NormLayout::Warp | NormLayout::Block => false,
            }
    }

    /// Split rows whose states carry the launch's flag (every split row but a
    /// cluster's, which exchanges through distributed shared memory, and the
    /// one-pass kernels that count arrivals): no per-row counters.
    fn flagged_states(&self) -> bool {
        self.layout == NormLayout::Split && self.cluster.is_none() && !self.row_counters()
    }

    /// One-pass split kernels that count their rows' arrivals rather than flag
    /// their states (`rj_red_split_counted`): the whole-pack ones, for their
    /// registers. With flagged states four of them spilled 4-52 bytes (ptxas
    /// 13.0: f32 softmax and RMS norm + residual s512x4 at 40 registers, f32
    /// -> 16-bit layer norm + residual s512x8 at 64), the general twins none.
    fn row_counters(&self) -> bool {
        self.layout == NormLayout::Split
            && self.cluster.is_none()
            && !self.second_pass()
            && !self.general
    }

    /// Split rows whose blocks publish their states and finish the row in a
    /// second pass over it (deferred `_p`, or two passes), a reducer apart.
    fn second_pass(&self) -> bool {
        self.deferred() || self.two_pass()
    }

    /// Split rows whose blocks publish flagged states and wait for their
    /// row's in one pass (`rj_red_split`), the row's states read over the
    /// warps: ahead of counters a row for the general twins at 4x1000003
    /// (bf16 log-softmax level; H100; commit 32bc62a). The
    /// whole-pack kernels, measured at 4x1000008, keep counting
    /// (`row_counters`).
    fn one_pass_split(&self) -> bool {
        self.flagged_states() && !self.second_pass()
    }

    /// Whether a one-pass split row asks for each thread's first slot of the
    /// row as the block publishes (`rj_red_split`'s kAsk): its general twins
    /// of 4 packs or fewer. bf16 RMS norm + residual s512x4_o2_g ran faster
    /// with it at 4x1000003 (H100; commit 32bc62a); the
    /// twins of 8 packs at 64 registers spilled 16-76
    /// bytes with it (softmax and log-softmax s512x8_g, ptxas 13.0), none
    /// without.
    pub fn split_asks_early(&self) -> bool {
        self.one_pass_split() && self.general && self.packs <= 4
    }

    /// Whether a one-pass split kernel loads its launch's epoch beside its
    /// first ticket, both in flight at once, and takes each later ticket at
    /// the end of an item: stored to shared memory before the ticket's add,
    /// the epoch's load held the first row load back a round trip. Taken by
    /// the kernels that do not ask early, faster so at 4x1000003 (softmax and
    /// log-softmax); bf16 RMS norm + residual s512x4_o2_g, which asks early,
    /// ran slower with it (H100; commit 517f735). The
    /// two-pass kernel's layer norm + residual spilled 8-12 bytes at its 64
    /// registers with it (ptxas 13.0), so that kernel keeps its order.
    pub fn ticket_beside_epoch(&self) -> bool {
        self.one_pass_split() && !self.split_asks_early()
    }

    /// Whether a one-pass split kernel whose grid holds every item (an item a
    /// block, one resident wave) is launched cooperatively and takes its item
    /// from its block index (`Plan::cooperative`): no ticket before its first
    /// row load, each thread's epoch load in flight beside the row, and a
    /// leaving count to end the launch. Every block then runs at once by the
    /// driver's promise, not by the order of tickets. Taken by layer norm,
    /// faster so at 4x1000003 and 2x1000003 (H100; commit 03ebf3b). Given to every
    /// one-pass kernel, the others ran level with
    /// their ticket, and f16 softmax and log-softmax spilled 12 bytes with it and
    /// bf16 layer norm + residual 32 (ptxas 13.0), so they keep their tickets.
    pub fn one_wave(&self) -> bool {
        self.one_pass_split() && self.op == NormOp::LayerNorm && !self.residual
    }

    /// Whether a two-pass split kernel takes its next ticket as it starts an
    /// item, the add's round trip hidden behind the item, rather than before
    /// the next item's first load (its first ticket beside the epoch's load):
    /// ahead of the order before for RMS norm and layer norm of each type at
    /// 4x1000003, and for bf16 at 64x1048573 (f32 level there; H100;
    /// commit 339b827).
    /// Layer norm + residual's twins spilled 12-20 bytes at their 64
    /// registers with it (ptxas 13.0) and keep their order.
    pub fn ticket_ahead(&self) -> bool {
        self.two_pass() && !(self.op == NormOp::LayerNorm && self.residual)
    }

    /// A deferred split kernel (`_p`, not a cluster row's): cohorts that
    /// publish a row's states and finish the row before.
    fn deferred(&self) -> bool {
        self.prefetch && self.layout == NormLayout::Split && self.cluster.is_none()
    }

    /// Bytes of one partial state in the split layout's workspace: a split
    /// row but a cluster's sends each word of its state in a 64-bit word with
    /// the launch's flag, rounded up to 16 bytes (the kernel stores and loads
    /// the words in 16-byte pairs, which must be aligned); else `PARTIAL_BYTES`.
    pub fn partial_bytes(&self) -> usize {
        if self.flagged_states() {
            (8 * self.split_state_words() as usize).next_multiple_of(16)
        } else {
            PARTIAL_BYTES
        }
    }

    /// Elements one row (warp, block) or one chunk (split) holds.
    pub fn chunk(&self) -> u64 {
        u64::from(self.lanes) * u64::from(self.packs) * 4
    }

    /// Whether rows of `cols` fill this layout's chunks exactly, as its exact
    /// form (`_x`) needs: the group's or block's one chunk, or a whole number
    /// of a split row's chunks.
    pub fn fills_exactly(&self, cols: u64) -> bool {
        let chunk = self.chunk();
        cols > 0 && cols.is_multiple_of(chunk) && self.capacity().is_none_or(|c| cols <= c)
    }

    /// The longest row this kernel takes (`None`: a split row, while its
    /// chunks fit the device at once, or a loop row, of any length the
    /// launcher takes).
    pub fn capacity(&self) -> Option<u64> {
        match self.layout {
            NormLayout::Loop => None,
            // A general twin's chunks reach before its row (`reach`).
            NormLayout::Split => self
                .cluster
                .map(|n| u64::from(n) * self.chunk() - self.reach(0)),
            _ => Some(self.chunk()),
        }
    }

    /// The launch layout for `rows` rows of `cols` on a device with `sm_count`
    /// SMs holding `blocks_per_sm` of this kernel at once. The split layout needs
    /// every block of a row resident at once: `splits <= resident` (the launcher
    /// checks it and errs otherwise).
    pub fn plan(&self, rows: u64, cols: u64, sm_count: u32, blocks_per_sm: u32) -> Plan {
        let resident = u64::from(sm_count.max(1)) * u64::from(blocks_per_sm.max(1));
        match self.layout {
            NormLayout::Warp => {
                let per_block = u64::from(WARP_LAYOUT_THREADS / self.lanes);
                Plan {
                    grid: rows.div_ceil(per_block).clamp(1, MAX_GRID) as u32,
                    splits: 1,
                    span: cols.min(u64::from(u32::MAX)) as u32,
                    counters: 0,
                    partials: 0,
                    cooperative: false,
                }
            }
            // A prefetching block takes rows in turn: one resident wave.
            NormLayout::Block | NormLayout::Loop => Plan {
                grid: if self.prefetch {
                    rows.clamp(1, resident.min(MAX_GRID))
                } else {
                    rows.clamp(1, MAX_GRID)
                } as u32,
                splits: 1,
                span: cols.min(u64::from(u32::MAX)) as u32,
                counters: 0,
                partials: 0,
                cooperative: false,
            },
            NormLayout::Split if self.cluster.is_some() => {
                let splits = self.splits_for(cols);
                // Clusters take rows in turn; they wait on no other cluster,
                // so a grid of more than are resident is only queued.
                let clusters = (resident / splits)
                    .clamp(1, rows.max(1))
                    .min(MAX_GRID / splits);
                Plan {
                    grid: (clusters * splits) as u32,
                    splits: splits as u32,
                    span: self.split_span(cols).min(u64::from(u32::MAX)) as u32,
                    counters: 0,
                    partials: 0,
                    cooperative: false,
                }
            }
            NormLayout::Split => {
                let splits = self.splits_for(cols);
                let items = rows.saturating_mul(splits);
                // Prefetching: cohorts of a row's blocks, as many as are
                // resident at once and have a row.
                let grid = if self.prefetch {
                    (resident / splits).clamp(1, rows.max(1)) * splits
                } else {
                    items
                }
                .clamp(1, resident.min(MAX_GRID));
                Plan {
                    grid: grid as u32,
                    splits: splits.min(u64::from(u32::MAX)) as u32,
                    span: self.split_span(cols).min(u64::from(u32::MAX)) as u32,
                    // A split kernel of flagged states keeps only its ticket
                    // and epoch.
                    counters: if self.flagged_states() {
                        2
                    } else {
                        1 + 2 * rows as usize
                    },
                    partials: items as usize,
                    cooperative: self.one_wave() && grid == items,
                }
            }
        }
    }
}

/// Every layout variant the ladder (`for_cols`) and the benchmarks' candidate
/// lists use for one operation and dtype pair.
pub fn variants(base: &NormSpec) -> Vec<NormSpec> {
    let mut out: Vec<NormSpec> = Vec::new();
    let mut push = |layout, lanes, packs, prefetch, no_l1| {
        let s = NormSpec {
            layout,
            lanes,
            packs,
            prefetch,
            no_l1,
            exact: false,
            raw: false,
            ..base.clone()
        };
        let fits = s.validate().is_ok();
        if fits && !out.contains(&s) {
            out.push(s);
        }
        fits
    };
    for &lanes in GROUP_LANES {
        push(NormLayout::Warp, lanes, 1, false, false);
    }
    for &packs in &PACKS[1..] {
        push(NormLayout::Warp, 32, packs, false, false);
    }
    // Several rows a warp with more bytes a lane in flight (narrow rows).
    for lanes in [4, 8, 16] {
        for packs in [2, 4, 8] {
            push(NormLayout::Warp, lanes, packs, false, false);
        }
    }
    // Smaller blocks a row: more rows an SM in flight (16-bit rows).
    for (lanes, packs) in [(128, 4), (128, 8)] {
        push(NormLayout::Block, lanes, packs, false, false);
    }
    // 512 threads of 2 packs: the shortest chain a thread a row of 4096
    // (one row a block at the LLM shapes' few tokens).
    for (lanes, packs) in [
        (256, 2),
        (256, 4),
        (256, 8),
        (256, 16),
        (512, 2),
        (512, 4),
        (512, 8),
        (512, 16),
    ] {
        push(NormLayout::Block, lanes, packs, false, false);
    }
    for (lanes, packs) in [(256, 8), (512, 4), (512, 8), (512, 16)] {
        push(NormLayout::Split, lanes, packs, false, false);
    }
    // A block going over its row twice, a chunk at a time (any length).
    for packs in [4, 8] {
        push(NormLayout::Loop, 512, packs, false, false);
    }
    // Split rows in cohorts, three rows' chunks staged: 8 packs, or 4 where
    // three rows of 8 do not fit (f32 with the residual) or 8 spilled (f32
    // layer norm, 28 bytes at ptxas 13.0). 16 packs for 16-bit softmax,
    // log-softmax and RMS norm only: 16-bit layer norm spills so (192 bytes);
    // three rows of 16 packs with the residual, or of f32, are 384 KiB.
    let spills8 = base.op == NormOp::LayerNorm && base.input.info().bytes == 4;
    if spills8 || !push(NormLayout::Split, 512, 8, true, false) {
        push(NormLayout::Split, 512, 4, true, false);
    }
    let sixteen_packs = base.op.info().softmax || (base.op == NormOp::RmsNorm && !base.residual);
    if base.input.info().bytes < 4 && sixteen_packs {
        push(NormLayout::Split, 512, 16, true, false);
    }
    // Long rows a block: the next row staged (16-bit rows: f32 rows lost
    // at all four ops measured; commit c57a9ef),
    // or the row streams kept out of L1.
    for (lanes, packs) in [(256, 8), (256, 16), (512, 8), (512, 16)] {
        if base.input.info().bytes < 4 {
            push(NormLayout::Block, lanes, packs, true, false);
        }
        push(NormLayout::Block, lanes, packs, false, true);
    }
    out
}

#[cfg(test)]
mod tests;
