//! `reduce`: full-array, row-wise and column-wise reductions (seeds 001 and 002,
//! issue 5): sum, mean, max, min, population and sample variance, argmax,
//! argmin, dot, sum of squares and logsumexp, over f32, bf16, f16, fp8 (e4m3,
//! e5m2: sm_89+) or i8 inputs, accumulated in f32 (or, lossy, in the input's own
//! 16-bit type), and i8 exactly in integers (the `i64` accumulator: sum, sum of
//! squares and dot give the exact i64; mean and the variances an f32 from the
//! exact integer moments; max, min, argmax, argmin and logsumexp take the f32
//! path, where max, min and the indices are exact too).
//!
//! ```
//! use redjit_codegen::{KernelSpec, ReduceSpec};
//!
//! let spec: ReduceSpec = "reduce_all_argmax_bf16_f32".parse().unwrap();
//! let src = spec.render().unwrap();
//! assert!(src.code.contains("rj_red_argmax<rj_acc_f32>"));
//! // The launch shape for 2^28 elements on a 132-SM GPU with 8 blocks per SM.
//! let plan = spec.plan(redjit_codegen::spec::reduce::Shape::All { n: 1 << 28 }, 132, 8);
//! assert_eq!(plan.grid, (132 * 8, 1));
//! ```

use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{Arch, DType, Family, ReduceAxis, ReduceOp};
use crate::spec::{KernelSpec, NameParse, parse_error};

/// Threads per block of every reduce kernel (its launch bound).
pub const THREADS: u32 = 256;
/// Rows up to this many columns go a warp per row; longer ones a block per row
/// (each lane then feeds at most 32 elements of a row).
pub const WARP_ROW_MAX_COLS: u64 = 1024;
/// Most blocks a full-array launch uses (the partials' workspace is sized for
/// it); a device fills well below it.
pub const MAX_ALL_BLOCKS: u32 = 4096;
/// Column kernels: rows a block's warps take in turn (`THREADS / 32`).
pub const COL_PHASES: u32 = THREADS / 32;
/// Column kernels: rows' 16-byte loads each thread keeps in flight.
pub const COL_UNROLL: u32 = 4;
/// Column kernels: most rows' loads in flight a strategy may ask for (each
/// costs 4 registers, and 16 columns of a 1-byte type 16 more).
pub const COL_MAX_UNROLL: u32 = 8;
/// Column kernels: bytes of adjacent columns one thread reads per row (one
/// vector load); a tile is 32 lanes of them.
pub const COL_VEC_BYTES: u32 = 16;
/// A column split covers at least this many rows (fewer would spend more on
/// partials than on reading).
pub const MIN_ROWS_PER_SPLIT: u64 = 64;
/// Full-array cluster twin (sm_90+): blocks in its one thread-block cluster,
/// which combine their states through distributed shared memory instead of
/// global partials and an arrival counter.
pub const CLUSTER: u32 = 8;
/// The full-array launcher takes the cluster twin from just past one block's
/// round (`THREADS` x 16 elements, where a single block finishes alone) up to
/// this many elements: two rounds of 16 elements per thread of the cluster.
/// Past it, more blocks read faster than the last-block finish costs.
pub const CLUSTER_MAX_N: u64 = 2 * 16 * CLUSTER as u64 * THREADS as u64;
/// Elements each thread of the cluster twin has in flight: all of its share
/// of `CLUSTER_MAX_N` in one round of loads, whatever the dtype (a small
/// reduction waits on each round's memory latency in turn).
pub const CLUSTER_ELEMENTS: u32 = (CLUSTER_MAX_N / (CLUSTER as u64 * THREADS as u64)) as u32;
/// gridDim.y's limit: the column kernel's splits.
pub const MAX_SPLITS: u64 = 65_535;
/// gridDim.x's limit.
pub const MAX_GRID: u64 = i32::MAX as u64;
/// Bytes of one block's partial state in the workspace (the largest state,
/// argmax's value and 64-bit index, is 16).
pub const PARTIAL_BYTES: usize = 16;

/// One reduce kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReduceSpec {
    /// What is reduced: the whole array, each row or each column.
    pub axis: ReduceAxis,
    /// The reduction computed.
    pub op: ReduceOp,
    /// The element type of the input(s).
    pub input: DType,
    /// The type sums are accumulated in: f32, or (lossy) the input's own 16-bit
    /// type; for an integer input (i8), i64 (exact) for the ops with an integer
    /// form (`ReduceOpInfo::int_functor`), f32 for the others.
    pub accum: DType,
    /// The row kernel's twin for short rows, a warp per row (named with a
    /// trailing `_w`). The launcher picks it itself from the row length and
    /// compiles it on first use; ask for `axis: Rows` without it.
    pub warp_per_row: bool,
    /// The full-array kernel's twin for small sizes on sm_90+, one cluster of
    /// `CLUSTER` blocks (named with a trailing `_c`). The launcher picks it
    /// itself from the size and the device; ask for `axis: All` without it.
    pub cluster: bool,
    /// The row kernel's twin for fewer rows than the SMs hold blocks: each row
    /// cut into splits of a block each, the row's last block merging them
    /// (named with a trailing `_s`). The launcher picks it itself from the
    /// shape and the device; ask for `axis: Rows` without it.
    pub split_rows: bool,
    /// The layout of the block-per-row, column and (non-cluster) full-array
    /// kernels: `None` takes the family's defaults (`THREADS` and 64 bytes in
    /// flight per thread). A spec without one takes, at each launch, the
    /// device's tuning table's choice for the shape (named `_t<threads>u<unroll>`).
    pub strategy: Option<ReduceStrategy>,
}

/// Threads per block and loads in flight per thread of a reduce kernel: what
/// a tuning table chooses per device and shape class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReduceStrategy {
    /// Threads per block (the launch bound): a power of two, 64 to 1024.
    pub threads: u32,
    /// Loads each thread keeps in flight: packs (full array, rows; the input
    /// type's `reduce_pack` elements) or 16-byte rows of its columns
    /// (columns), 1 to `MAX_UNROLL`.
    pub unroll: u32,
}

/// Most loads in flight per thread a strategy may ask for.
pub const MAX_UNROLL: u32 = 32;

impl ReduceStrategy {
    /// Checks the strategy against the rules its fields document.
    pub fn validate(&self) -> Result<(), SpecError> {
        if !(64..=1024).contains(&self.threads) || !self.threads.is_power_of_two() {
            return Err(SpecError::invalid(
                "threads",
                self.threads,
                "a reduce kernel's threads per block must be a power of two from 64 to 1024",
            ));
        }
        if !(1..=MAX_UNROLL).contains(&self.unroll) {
            return Err(SpecError::invalid(
                "unroll",
                self.unroll,
                format!("a reduce kernel keeps 1 to {MAX_UNROLL} loads in flight per thread"),
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for ReduceStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{}u{}", self.threads, self.unroll)
    }
}

impl FromStr for ReduceStrategy {
    type Err = SpecError;

    /// `t<threads>u<unroll>`, e.g. `t128u8`.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let err = || {
            parse_error(
                "reduce strategy",
                s,
                "expected t<threads>u<unroll>, e.g. t128u8",
            )
        };
        let (t, u) = s
            .strip_prefix('t')
            .and_then(|r| r.split_once('u'))
            .ok_or_else(err)?;
        let num = |v: &str| {
            (v.len() <= 4
                && !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
                && !v.starts_with('0'))
            .then(|| v.parse::<u32>().ok())
            .flatten()
            .ok_or_else(err)
        };
        let st = ReduceStrategy {
            threads: num(t)?,
            unroll: num(u)?,
        };
        st.validate()?;
        Ok(st)
    }
}

impl Default for ReduceSpec {
    /// The full-array f32 sum.
    fn default() -> Self {
        ReduceSpec {
            axis: ReduceAxis::All,
            op: ReduceOp::Sum,
            input: DType::F32,
            accum: DType::F32,
            warp_per_row: false,
            cluster: false,
            split_rows: false,
            strategy: None,
        }
    }
}

/// What one launch reduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// n contiguous elements.
    All {
        /// Elements in the array.
        n: u64,
    },
    /// A rows x cols matrix whose row r starts at element r * ld.
    Matrix {
        /// Rows of the matrix.
        rows: u64,
        /// Elements per row.
        cols: u64,
        /// Elements between the starts of two rows (>= cols).
        ld: u64,
    },
}

/// How a launch is laid out: derived from the spec, the shape and the device
/// (SM count and the kernel's resident blocks per SM), never fixed for one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// (gridDim.x, gridDim.y).
    pub grid: (u32, u32),
    /// blockDim.x: the kernel's threads per block (`ReduceSpec::threads`).
    pub threads: u32,
    /// Column kernels: rows per split (gridDim.y splits); else 0.
    pub rows_per_split: u64,
    /// The split-row twin: columns per split (gridDim.y splits, a block
    /// each); else 0.
    pub cols_per_split: u64,
    /// The twin of the spec's kernel the launch takes, if any.
    pub twin: Option<Twin>,
    /// Zeroed u32 arrival counters the launch needs (0: a single block
    /// finishes alone).
    pub counters: usize,
    /// Partial states the launch writes (`PARTIAL_BYTES` each).
    pub partials: usize,
    /// The longest chain of rounded operations any input element goes
    /// through on its way to the result: with the accumulator's unit roundoff
    /// it bounds a sum's error (`reference_reduce` derives tolerances from it).
    pub chain: u64,
}

/// A kernel a spec's launcher may take instead of the spec's own, for the
/// shapes its layout serves badly; each has the family's default block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Twin {
    /// Row kernels of short rows: a warp a row (`_w`).
    WarpPerRow,
    /// Full-array kernels of small sizes on sm_90+: one thread-block
    /// cluster, grid = the cluster (`_c`).
    Cluster,
    /// Row kernels whose rows leave resident blocks idle: each row split
    /// over blocks (`_s`).
    SplitRows,
}

impl Twin {
    /// Every twin, in the order [`Twin::index`] numbers them.
    pub const ALL: [Twin; 3] = [Twin::WarpPerRow, Twin::Cluster, Twin::SplitRows];

    /// This twin's place in [`Twin::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Plan {
    /// `grid` blocks of `threads`: no twin, no splits, no workspace.
    fn plain(grid: (u32, u32), threads: u32, chain: u64) -> Plan {
        Plan {
            grid,
            threads,
            rows_per_split: 0,
            cols_per_split: 0,
            twin: None,
            counters: 0,
            partials: 0,
            chain,
        }
    }
}

impl ReduceSpec {
    /// Every op x input x its accumulators, for one axis: the test matrix.
    pub fn matrix(axis: ReduceAxis) -> Vec<ReduceSpec> {
        let mut out = Vec::new();
        for &op in ReduceOp::ALL {
            for &input in DType::ALL.iter().filter(|d| d.info().reduce_input) {
                let accums = DType::ALL
                    .iter()
                    .filter(|d| d.info().reduce_accum.is_some());
                for &accum in accums {
                    let spec = ReduceSpec {
                        axis,
                        op,
                        input,
                        accum,
                        warp_per_row: false,
                        cluster: false,
                        split_rows: false,
                        strategy: None,
                    };
                    if spec.validate().is_ok() && !out.contains(&spec) {
                        out.push(spec);
                    }
                }
            }
        }
        out
    }

    /// This spec's twin `twin` (the family's default block).
    pub fn for_twin(&self, twin: Twin) -> ReduceSpec {
        match twin {
            Twin::WarpPerRow => self.for_warp_per_row(),
            Twin::Cluster => self.for_cluster(),
            Twin::SplitRows => self.for_split_rows(),
        }
    }

    /// This spec's warp-per-row twin (the family's default block).
    pub fn for_warp_per_row(&self) -> ReduceSpec {
        ReduceSpec {
            warp_per_row: true,
            strategy: None,
            ..self.clone()
        }
    }

    /// This spec's cluster twin (full-array kernels, sm_90+; the family's
    /// default block).
    pub fn for_cluster(&self) -> ReduceSpec {
        ReduceSpec {
            cluster: true,
            strategy: None,
            ..self.clone()
        }
    }

    /// This spec's split-row twin (row kernels; the family's default block).
    pub fn for_split_rows(&self) -> ReduceSpec {
        ReduceSpec {
            split_rows: true,
            strategy: None,
            ..self.clone()
        }
    }

    /// This spec laid out by `strategy` (`None`: the defaults).
    pub fn with_strategy(&self, strategy: Option<ReduceStrategy>) -> ReduceSpec {
        ReduceSpec {
            strategy,
            ..self.clone()
        }
    }

    /// The layout the defaults give: `THREADS`, and 64 bytes of packs in
    /// flight per thread (4 packs of f32, 8 of a 16-bit type, 16 of a 1-byte
    /// type) or `COL_UNROLL` 16-byte column loads.
    pub fn default_strategy(&self) -> ReduceStrategy {
        ReduceStrategy {
            threads: THREADS,
            unroll: match self.axis {
                ReduceAxis::Cols => COL_UNROLL,
                _ => self.unroll_of_64_bytes(),
            },
        }
    }

    /// Elements of one pack load of the full-array and row walks.
    pub fn pack(&self) -> u32 {
        self.input.info().reduce_pack
    }

    /// Packs that make 64 bytes in flight per thread.
    fn unroll_of_64_bytes(&self) -> u32 {
        64 / (self.pack() * self.input.info().bytes)
    }

    /// Threads per block of this kernel.
    pub fn threads(&self) -> u32 {
        if self.warp_per_row || self.cluster || self.split_rows {
            return THREADS;
        }
        self.strategy
            .unwrap_or_else(|| self.default_strategy())
            .threads
    }

    /// Pack loads each thread keeps in flight (the strategy's, else 64
    /// bytes' worth); the cluster twin `CLUSTER_ELEMENTS` elements' packs.
    pub fn unroll(&self) -> u32 {
        if self.cluster {
            return CLUSTER_ELEMENTS / self.pack();
        }
        if self.warp_per_row || self.axis == ReduceAxis::Cols {
            return self.unroll_of_64_bytes();
        }
        self.strategy
            .unwrap_or_else(|| self.default_strategy())
            .unroll
    }

    /// Column kernels: rows' 16-byte loads each thread keeps in flight.
    pub fn col_unroll(&self) -> u32 {
        match (self.axis, self.strategy) {
            (ReduceAxis::Cols, Some(s)) => s.unroll,
            _ => COL_UNROLL,
        }
    }

    /// Column kernels: adjacent columns per thread, one 16-byte load (4 of f32, 8
    /// of a 16-bit type, 16 of a 1-byte type).
    pub fn col_vec(&self) -> u32 {
        COL_VEC_BYTES / self.input.info().bytes
    }

    /// Column kernels: columns per tile (a block's width; a counter each).
    pub fn col_tile(&self) -> u64 {
        32 * u64::from(self.col_vec())
    }

    /// Accumulates exactly in integers: an integer input and an op with an
    /// integer form (the spec's accumulator is then i64).
    pub fn integer(&self) -> bool {
        self.input.info().integer && self.op.info().int_functor.is_some()
    }

    /// The accumulator of `op` over `input` unless asked otherwise: i64 for
    /// the ops of an integer input that have an integer form (exact), else f32.
    pub fn default_accum(op: ReduceOp, input: DType) -> DType {
        if input.info().integer && op.info().int_functor.is_some() {
            DType::I64
        } else {
            DType::F32
        }
    }

    /// The result is an i64: an index, or an exact integer (sum, sum of
    /// squares, dot of an integer input).
    pub fn result_i64(&self) -> bool {
        self.op.info().index || (self.integer() && self.op.info().int_result)
    }

    /// The result's type: `"i64"` (see `result_i64`), else `"f32"`.
    pub fn result(&self) -> &'static str {
        if self.result_i64() { "i64" } else { "f32" }
    }

    /// The launch layout for `shape` on a device with `sm_count` SMs that holds
    /// `blocks_per_sm` of this kernel at once (`THREADS` threads each). The
    /// shape must suit the axis (the launcher checks it first); the warp-per-row
    /// choice is made here for row kernels. Never the cluster twin: see
    /// `plan_on`.
    pub fn plan(&self, shape: Shape, sm_count: u32, blocks_per_sm: u32) -> Plan {
        self.plan_on(shape, sm_count, blocks_per_sm, Arch(0))
    }

    /// `plan` on a device of compute capability `arch`: from sm_90 on, a
    /// full-array size past one block's round and up to `CLUSTER_MAX_N` goes to
    /// the cluster twin (no workspace, no last-block finish).
    pub fn plan_on(&self, shape: Shape, sm_count: u32, blocks_per_sm: u32, arch: Arch) -> Plan {
        let resident = u64::from(sm_count.max(1)) * u64::from(blocks_per_sm.max(1));
        let block = self.threads();
        let threads = u64::from(block);
        // Levels of a warp and of a block reduction.
        let (warp_levels, block_levels) = (5, 5 + u64::from(block / 32).ilog2() as u64);
        match (self.axis, shape) {
            (ReduceAxis::All, Shape::All { n }) => {
                // One round of full packs per thread at least, one wave of
                // resident blocks at most: each block then loops.
                let per_round = threads * self.elements_per_round_of_a_thread();
                let blocks = n
                    .div_ceil(per_round)
                    .clamp(1, resident.min(u64::from(MAX_ALL_BLOCKS)));
                if blocks > 1 && n <= CLUSTER_MAX_N && arch >= Arch::SM90 {
                    // The twin has the default block, whatever the strategy.
                    let lanes = u64::from(CLUSTER) * u64::from(THREADS);
                    let block_levels = 5 + u64::from(THREADS / 32).ilog2() as u64;
                    let cluster_levels = u64::from(CLUSTER).ilog2() as u64;
                    let chain = n.div_ceil(lanes) + 2 + block_levels + cluster_levels + 1;
                    return Plan {
                        twin: Some(Twin::Cluster),
                        ..Plan::plain((CLUSTER, 1), THREADS, chain)
                    };
                }
                let lanes = blocks * threads;
                let per_thread = n.div_ceil(lanes) + 2;
                let last = if blocks > 1 {
                    blocks.div_ceil(threads) + block_levels
                } else {
                    0
                };
                Plan {
                    counters: usize::from(blocks > 1),
                    partials: if blocks > 1 { blocks as usize } else { 0 },
                    ..Plan::plain(
                        (blocks as u32, 1),
                        block,
                        per_thread + block_levels + last + 1,
                    )
                }
            }
            (ReduceAxis::Rows, Shape::Matrix { rows, cols, .. }) => {
                let warp = cols <= WARP_ROW_MAX_COLS;
                if warp {
                    let grid = rows.div_ceil(threads / 32).clamp(1, MAX_GRID) as u32;
                    let chain = cols.div_ceil(32) + 2 + warp_levels + 1;
                    return Plan {
                        twin: Some(Twin::WarpPerRow),
                        ..Plan::plain((grid, 1), THREADS, chain)
                    };
                }
                let twin = self.for_split_rows();
                let cols_per_split = twin.cols_per_split(rows, cols, resident);
                let grid = rows.clamp(1, MAX_GRID) as u32;
                if !self.split_rows && cols_per_split >= cols {
                    let chain = cols.div_ceil(threads) + 2 + block_levels + 1;
                    return Plan::plain((grid, 1), block, chain);
                }
                // The split-row twin, with the family's default block.
                let threads = u64::from(twin.threads());
                let block_levels = 5 + (threads / 32).ilog2() as u64;
                let splits = cols.div_ceil(cols_per_split.max(1)).max(1);
                let chain = cols_per_split.div_ceil(threads)
                    + 2
                    + block_levels
                    + splits.div_ceil(threads)
                    + block_levels
                    + 1;
                Plan {
                    cols_per_split,
                    twin: Some(Twin::SplitRows),
                    counters: rows as usize,
                    partials: (rows * splits) as usize,
                    ..Plan::plain((grid, splits as u32), twin.threads(), chain)
                }
            }
            (ReduceAxis::Cols, Shape::Matrix { rows, cols, .. }) => {
                let tiles = cols.div_ceil(self.col_tile()).max(1);
                let phases = threads / 32;
                // As many splits as fit one wave of resident blocks beside the
                // others' tiles (rounding up put a few blocks in a second wave
                // that then ran alone: 800 blocks on 792 slots).
                let wanted = (resident / tiles).max(1);
                let most = (rows / MIN_ROWS_PER_SPLIT).clamp(1, MAX_SPLITS);
                let splits = wanted.clamp(1, most);
                let rows_per_split = rows.div_ceil(splits).max(1);
                let splits = rows.div_ceil(rows_per_split).max(1);
                let chain = rows_per_split.div_ceil(phases) + phases + 1;
                let finish = if splits > 1 {
                    splits.div_ceil(phases) + phases
                } else {
                    0
                };
                Plan {
                    rows_per_split,
                    counters: if splits > 1 { tiles as usize } else { 0 },
                    partials: if splits > 1 {
                        (splits * cols) as usize
                    } else {
                        0
                    },
                    ..Plan::plain(
                        (tiles.min(MAX_GRID) as u32, splits as u32),
                        block,
                        chain + finish,
                    )
                }
            }
            // A shape for another axis: the launcher never asks (it checks
            // first); one block and no workspace is still a safe answer.
            _ => Plan::plain((1, 1), block, 0),
        }
    }

    /// The split-row twin's columns per split: the whole row where the
    /// rows alone fill the resident blocks; else the row cut so the rows'
    /// splits fill them, each split at least one round of the block's packs
    /// in flight and a whole number of packs (every split keeps the row's
    /// pack phase): a block a row left three rows of 100003 to three SMs.
    fn cols_per_split(&self, rows: u64, cols: u64, resident: u64) -> u64 {
        let per_round = u64::from(self.threads()) * self.elements_per_round_of_a_thread();
        let wanted = (resident / rows.max(1))
            .min(cols / per_round)
            .min(MAX_SPLITS);
        if wanted < 2 {
            return cols;
        }
        cols.div_ceil(wanted)
            .next_multiple_of(u64::from(self.pack()))
    }

    /// Elements a thread has in flight in one round of its loads.
    pub fn elements_per_round_of_a_thread(&self) -> u64 {
        u64::from(self.pack()) * u64::from(self.unroll())
    }

    fn context(&self) -> ReduceContext {
        let policy = self.accum.info().reduce_accum.unwrap_or("rj_acc_f32");
        let functor = match self.op.info().int_functor {
            Some(f) if self.integer() => f,
            _ => self.op.info().functor,
        };
        ReduceContext {
            name: self.name(),
            axis: self.axis.slug(),
            op: self.op.slug(),
            functor: format!("{functor}<{policy}>"),
            input: self.input.slug(),
            srcs: self.op.info().inputs,
            result: match (self.op.info().index, self.result()) {
                (true, _) => "an i64 index",
                (false, "i64") => "an exact i64 value",
                _ => "an f32 value",
            },
            threads: self.threads(),
            unroll: self.unroll(),
            pack: self.pack(),
            warp_per_row: self.warp_per_row,
            split_rows: self.split_rows,
            phases: self.threads() / 32,
            col_unroll: self.col_unroll(),
            col_vec: self.col_vec(),
            cluster: if self.cluster { CLUSTER } else { 0 },
        }
    }
}

/// What the `reduce.cu` template is rendered from.
#[derive(Serialize)]
struct ReduceContext {
    name: String,
    axis: &'static str,
    op: &'static str,
    functor: String,
    input: &'static str,
    srcs: usize,
    result: &'static str,
    threads: u32,
    unroll: u32,
    /// Elements of a pack load (`ReduceSpec::pack`).
    pack: u32,
    warp_per_row: bool,
    split_rows: bool,
    phases: u32,
    col_unroll: u32,
    col_vec: u32,
    /// Blocks of the cluster twin; 0 for every other kernel.
    cluster: u32,
}

impl KernelSpec for ReduceSpec {
    fn family(&self) -> Family {
        Family::Reduce
    }

    fn params(&self) -> Vec<Param> {
        let mut p = vec![Param::ptr("src0_ptr")];
        if self.op.info().inputs == 2 {
            p.push(Param::ptr("src1_ptr"));
        }
        p.extend([
            Param::ptr("out_ptr"),
            Param::ptr("counters_ptr"),
            Param::ptr("partials_ptr"),
        ]);
        match self.axis {
            ReduceAxis::All => p.push(Param::u64("n")),
            ReduceAxis::Rows => p.extend([
                Param::u64("rows"),
                Param::u64("cols"),
                Param::u64("ld"),
                Param::u64("cols_per_split"),
            ]),
            ReduceAxis::Cols => p.extend([
                Param::u64("rows"),
                Param::u64("cols"),
                Param::u64("ld"),
                Param::u64("rows_per_split"),
            ]),
        }
        p
    }

    fn validate(&self) -> Result<(), SpecError> {
        let list = |pred: fn(&DType) -> bool| {
            DType::ALL
                .iter()
                .filter(|d| pred(d))
                .map(|d| d.slug())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.input.info().reduce_input {
            return Err(SpecError::invalid(
                "input",
                self.input,
                format!(
                    "a reduction's input must be one of: {}",
                    list(|d| d.info().reduce_input)
                ),
            ));
        }
        if self.accum.info().reduce_accum.is_none() {
            return Err(SpecError::invalid(
                "accum",
                self.accum,
                format!(
                    "a reduction's accumulator must be one of: {}",
                    list(|d| d.info().reduce_accum.is_some())
                ),
            ));
        }
        let integer_input = self.input.info().integer;
        if integer_input && self.op.info().int_functor.is_some() {
            // Exact: the integer ops of an integer input accumulate in the
            // integer accumulator, never in floats.
            if !self.accum.info().integer {
                return Err(SpecError::invalid(
                    "accum",
                    self.accum,
                    format!(
                        "{} of {} inputs accumulates exactly in integers: the accumulator must be one of: {}",
                        self.op,
                        self.input,
                        list(|d| d.info().integer && d.info().reduce_accum.is_some())
                    ),
                ));
            }
        } else if self.accum.info().integer {
            let with_int: Vec<_> = ReduceOp::ALL
                .iter()
                .filter(|o| o.info().int_functor.is_some())
                .map(|o| o.slug())
                .collect();
            return Err(SpecError::invalid(
                "accum",
                self.accum,
                format!(
                    "integer accumulation is for integer inputs ({}) and the ops {}; {} of {} accumulates in f32",
                    list(|d| d.info().integer && d.info().reduce_input),
                    with_int.join(", "),
                    self.op,
                    self.input
                ),
            ));
        } else if self.accum != DType::F32 {
            if self.accum != self.input {
                return Err(SpecError::invalid(
                    "accum",
                    self.accum,
                    format!(
                        "low-precision accumulation is in the input's own type ({}); otherwise accumulate in f32",
                        self.input
                    ),
                ));
            }
            if !self.op.info().lossy_accum {
                let lossy: Vec<_> = ReduceOp::ALL
                    .iter()
                    .filter(|o| o.info().lossy_accum)
                    .map(|o| o.slug())
                    .collect();
                return Err(SpecError::invalid(
                    "accum",
                    self.accum,
                    format!(
                        "{} accumulates in f32 only; low-precision accumulation is for {}",
                        self.op,
                        lossy.join(", ")
                    ),
                ));
            }
        }
        if self.warp_per_row && self.axis != ReduceAxis::Rows {
            return Err(SpecError::invalid(
                "warp_per_row",
                "true",
                format!(
                    "only row reductions have a warp-per-row kernel, not axis {}",
                    self.axis
                ),
            ));
        }
        if self.split_rows && (self.axis != ReduceAxis::Rows || self.warp_per_row) {
            return Err(SpecError::invalid(
                "split_rows",
                "true",
                format!(
                    "only the block-per-row kernel has a split-row twin, not axis {}{}",
                    self.axis,
                    if self.warp_per_row {
                        " with a warp per row"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if let Some(st) = self.strategy {
            st.validate()?;
            if self.warp_per_row || self.cluster || self.split_rows {
                return Err(SpecError::invalid(
                    "strategy",
                    st,
                    "the warp-per-row, cluster and split-row twins have the default layout; a strategy lays out the block kernels",
                ));
            }
            if self.axis == ReduceAxis::Cols && st.unroll > COL_MAX_UNROLL {
                return Err(SpecError::invalid(
                    "unroll",
                    st.unroll,
                    format!(
                        "a column kernel keeps 1 to {COL_MAX_UNROLL} rows' loads in flight per thread"
                    ),
                ));
            }
        }
        if self.cluster && self.axis != ReduceAxis::All {
            return Err(SpecError::invalid(
                "cluster",
                "true",
                format!(
                    "only full-array reductions have a cluster kernel, not axis {}",
                    self.axis
                ),
            ));
        }
        Ok(())
    }

    fn name(&self) -> String {
        format!(
            "{}_{}_{}_{}_{}",
            Family::Reduce.slug(),
            self.axis,
            self.op,
            self.input,
            self.accum
        ) + if self.warp_per_row { "_w" } else { "" }
            + if self.cluster { "_c" } else { "" }
            + if self.split_rows { "_s" } else { "" }
            + &self.strategy.map_or(String::new(), |st| format!("_{st}"))
    }

    fn min_arch(&self) -> Arch {
        // acq_rel atomics and fences are sm_70+.
        [
            Arch(70),
            // Thread-block clusters and distributed shared memory.
            if self.cluster { Arch::SM90 } else { Arch(70) },
            self.op.info().min_arch,
            self.input.info().min_arch,
            self.accum.info().min_arch,
        ]
        .into_iter()
        .max()
        .unwrap_or(Arch(70))
    }

    /// The family's preludes (every float dtype file among them), then what the
    /// input and the accumulator bring that is not there yet: the 1-byte types'
    /// byte loads and dtype file, the integer functors.
    fn preludes(&self) -> Vec<&'static str> {
        let mut out = Family::Reduce.info().preludes.to_vec();
        for d in [self.input, self.accum] {
            for &p in d.info().needs.iter().chain([&d.info().prelude]) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }

    /// As the trait's, with the input's conversions named when the input is
    /// what needs the newer GPU (fp8: `cvt.rn.f16x2.e4m3x2` is sm_89+).
    fn check_arch(&self, arch: Arch) -> Result<(), SpecError> {
        self.validate()?;
        let needs = self.min_arch();
        if arch < needs {
            let what = if self.input.info().min_arch > arch {
                format!(
                    "{} (its {} input's PTX conversions)",
                    self.name(),
                    self.input
                )
            } else {
                self.name()
            };
            return Err(SpecError::Unsupported { what, arch, needs });
        }
        Ok(())
    }

    fn render_body(&self) -> Result<String, SpecError> {
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for ReduceSpec {
    type Err = SpecError;

    /// Parses a kernel name, e.g. `reduce_rows_varsamp_bf16_f32` or
    /// `reduce_rows_sum_f16_f16_w`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::Reduce)?;
        let (rest, strategy) = match rest.rsplit_once('_') {
            Some((r, last)) if last.starts_with('t') && last.contains('u') => {
                (r, Some(last.parse()?))
            }
            _ => (rest, None),
        };
        let (rest, split_rows) = match rest.strip_suffix("_s") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let (rest, warp_per_row) = match rest.strip_suffix("_w") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let (rest, cluster) = match rest.strip_suffix("_c") {
            Some(r) if !warp_per_row => (r, true),
            _ => (rest, false),
        };
        let parts: Vec<&str> = rest.split('_').collect();
        let [axis, op, input, accum] = parts.as_slice() else {
            return Err(name.bad());
        };
        let spec = ReduceSpec {
            axis: axis.parse()?,
            op: op.parse()?,
            input: input.parse()?,
            accum: accum.parse()?,
            warp_per_row,
            cluster,
            split_rows,
            strategy,
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
    fn strategies_name_their_kernel_and_lay_out_its_launch() {
        let st = ReduceStrategy {
            threads: 128,
            unroll: 16,
        };
        let spec: ReduceSpec = "reduce_rows_sum_bf16_f32".parse().unwrap();
        let tuned = spec.with_strategy(Some(st));
        assert_eq!(tuned.name(), "reduce_rows_sum_bf16_f32_t128u16");
        assert_eq!(tuned.name().parse::<ReduceSpec>().unwrap(), tuned);
        assert_eq!((tuned.threads(), tuned.unroll()), (128, 16));
        let src = tuned.render().unwrap().code;
        assert!(src.contains("__launch_bounds__(128)"), "{src}");
        assert!(src.contains("const int kUnroll = 16;"));
        let m = Shape::Matrix {
            rows: 32768,
            cols: 4096,
            ld: 4096,
        };
        assert_eq!(tuned.plan(m, 132, 16).threads, 128);
        // Short rows take the warp twin, which keeps the default block.
        let short = Shape::Matrix {
            rows: 32768,
            cols: 512,
            ld: 512,
        };
        assert_eq!(tuned.plan(short, 132, 16).threads, THREADS);
        // The default strategy is the unnamed kernel's layout.
        let default = spec.with_strategy(Some(spec.default_strategy()));
        assert_eq!(
            default.render().unwrap().code.replace("_t256u4", ""),
            spec.render().unwrap().code
        );
        // Columns: the strategy's loads are rows in flight, and its threads the phases.
        let cols: ReduceSpec = "reduce_cols_sum_bf16_f32_t512u2".parse().unwrap();
        assert_eq!(cols.col_unroll(), 2);
        assert!(
            cols.render()
                .unwrap()
                .code
                .contains("const int kColUnroll = 2;")
        );
        // Twins have the default layout; a strategy on one is refused.
        assert!(tuned.for_warp_per_row().strategy.is_none());
        let bad = ReduceSpec {
            warp_per_row: true,
            ..tuned.clone()
        };
        assert!(bad.validate().is_err());
        for name in [
            "reduce_all_sum_f32_f32_t96u4",
            "reduce_all_sum_f32_f32_t128u0",
            "reduce_all_sum_f32_f32_t128u33",
            "reduce_cols_sum_f32_f32_t128u9",
            "reduce_all_sum_f32_f32_t0128u4",
            "reduce_all_sum_f32_f32_tu",
        ] {
            assert!(name.parse::<ReduceSpec>().is_err(), "{name}");
        }
    }

    #[test]
    fn names_round_trip() {
        for &axis in ReduceAxis::ALL {
            for spec in ReduceSpec::matrix(axis) {
                assert_eq!(spec.name().parse::<ReduceSpec>().unwrap(), spec);
                if axis == ReduceAxis::Rows {
                    let w = spec.for_warp_per_row();
                    assert_eq!(w.name().parse::<ReduceSpec>().unwrap(), w);
                }
                if axis == ReduceAxis::All {
                    let c = spec.for_cluster();
                    assert_eq!(c.name().parse::<ReduceSpec>().unwrap(), c);
                    assert_eq!(c.min_arch(), Arch::SM90);
                } else {
                    assert!(spec.for_cluster().validate().is_err());
                }
            }
        }
    }

    #[test]
    fn the_matrix_has_every_op_and_dtype_and_the_lossy_variants() {
        let m = ReduceSpec::matrix(ReduceAxis::All);
        // 11 ops x 3 float inputs in f32, plus 4 lossy ops x 2 16-bit inputs
        // (the configurations before fp8 and i8, unchanged).
        let float16: Vec<_> = m
            .iter()
            .filter(|s| [DType::F32, DType::BF16, DType::F16].contains(&s.input))
            .collect();
        assert_eq!(float16.len(), 11 * 3 + 4 * 2);
        assert!(m.iter().any(|s| s.name() == "reduce_all_sum_bf16_bf16"));
        assert!(m.iter().any(|s| s.name() == "reduce_all_dot_f16_f16"));
        assert!(!m.iter().any(|s| s.name() == "reduce_all_max_f16_f16"));
        // fp8: 11 ops x 2 inputs in f32 only; i8: 11 ops, 6 of them exact in i64.
        assert_eq!(m.len(), 11 * 3 + 4 * 2 + 11 * 2 + 11);
        let i8s: Vec<_> = m
            .iter()
            .filter(|s| s.input == DType::I8)
            .map(|s| s.name())
            .collect();
        for name in [
            "reduce_all_sum_i8_i64",
            "reduce_all_mean_i8_i64",
            "reduce_all_varsamp_i8_i64",
            "reduce_all_dot_i8_i64",
            "reduce_all_sumsq_i8_i64",
            "reduce_all_max_i8_f32",
            "reduce_all_argmin_i8_f32",
            "reduce_all_lse_i8_f32",
        ] {
            assert!(i8s.iter().any(|n| n == name), "{name}: {i8s:?}");
        }
        assert!(m.iter().any(|s| s.name() == "reduce_all_sum_e4m3_f32"));
        assert!(m.iter().any(|s| s.name() == "reduce_all_argmax_e5m2_f32"));
    }

    #[test]
    fn integer_inputs_accumulate_exactly_and_others_refuse_i64() {
        let spec = |name: &str| name.parse::<ReduceSpec>();
        // i8 sums must be exact: an f32 accumulator is refused, naming i64.
        let e = spec("reduce_all_sum_i8_f32").unwrap_err().to_string();
        assert!(
            e.contains("invalid accum = f32")
                && e.contains("exactly in integers")
                && e.contains("i64"),
            "{e}"
        );
        // i64 is for integer inputs and the ops with an integer form.
        let e = spec("reduce_all_sum_f32_i64").unwrap_err().to_string();
        assert!(
            e.contains("invalid accum = i64") && e.contains("integer inputs (i8)"),
            "{e}"
        );
        let e = spec("reduce_all_max_i8_i64").unwrap_err().to_string();
        assert!(
            e.contains("invalid accum = i64") && e.contains("max of i8 accumulates in f32"),
            "{e}"
        );
        // fp8 accumulates in f32 only; i64 is no input.
        let e = spec("reduce_all_sum_e4m3_e4m3").unwrap_err().to_string();
        assert!(
            e.contains("invalid accum = e4m3")
                && e.contains("accumulator must be one of: f32, bf16, f16, i64"),
            "{e}"
        );
        let e = spec("reduce_all_sum_i64_i64").unwrap_err().to_string();
        assert!(
            e.contains("invalid input = i64") && e.contains("f32, bf16, f16, e4m3, e5m2, i8"),
            "{e}"
        );
        // Result types: the exact integers are i64, mean and var f32.
        let r = |n: &str| spec(n).unwrap().result();
        assert_eq!(r("reduce_all_sum_i8_i64"), "i64");
        assert_eq!(r("reduce_rows_dot_i8_i64"), "i64");
        assert_eq!(r("reduce_cols_sumsq_i8_i64"), "i64");
        assert_eq!(r("reduce_all_mean_i8_i64"), "f32");
        assert_eq!(r("reduce_all_varpop_i8_i64"), "f32");
        assert_eq!(r("reduce_all_max_i8_f32"), "f32");
        assert_eq!(r("reduce_all_argmax_i8_f32"), "i64");
        assert_eq!(r("reduce_all_sum_e4m3_f32"), "f32");
        // The integer functors and their prelude.
        let s = spec("reduce_all_varsamp_i8_i64").unwrap();
        assert!(s.integer());
        let src = s.render().unwrap().code;
        assert!(
            src.contains("typedef rj_red_ivarsamp<rj_acc_i64> Op;"),
            "{src}"
        );
        assert!(src.contains("typedef rj_dtype_i8 T;"));
        assert!(s.preludes().ends_with(&[
            "prelude/packs8.cuh",
            "prelude/dtype_i8.cuh",
            "prelude/reduce_int.cuh"
        ]));
        let max = spec("reduce_all_max_i8_f32").unwrap();
        assert!(!max.integer());
        assert!(!max.preludes().contains(&"prelude/reduce_int.cuh"));
        // The float inputs' kernels keep their preludes (and so their text).
        assert_eq!(
            ReduceSpec::default().preludes(),
            Family::Reduce.info().preludes.to_vec()
        );
    }

    #[test]
    fn fp8_needs_sm89_with_an_error_naming_the_conversion() {
        for name in ["reduce_all_sum_e4m3_f32", "reduce_cols_argmax_e5m2_f32"] {
            let s: ReduceSpec = name.parse().unwrap();
            assert_eq!(s.min_arch(), Arch::SM89);
            let e = s.check_arch(Arch::SM80).unwrap_err();
            assert!(
                matches!(
                    e,
                    SpecError::Unsupported {
                        arch: Arch::SM80,
                        needs: Arch::SM89,
                        ..
                    }
                ),
                "{e:?}"
            );
            let msg = e.to_string();
            assert!(
                msg.contains(name)
                    && msg.contains("input's PTX conversions")
                    && msg.contains("not supported on sm_80: it needs sm_89 or newer"),
                "{msg}"
            );
            assert!(s.check_arch(Arch::SM89).is_ok() && s.check_arch(Arch::SM90).is_ok());
        }
        // i8 has no arch rule of its own.
        let s: ReduceSpec = "reduce_all_sum_i8_i64".parse().unwrap();
        assert!(s.check_arch(Arch::SM80).is_ok());
        // The 1-byte types: 16 packs of one word in flight, 16 columns a thread.
        assert_eq!((s.unroll(), s.col_vec(), s.col_tile()), (16, 16, 512));
    }

    #[test]
    fn full_plans_scale_with_the_device_and_the_size() {
        let spec = ReduceSpec::default();
        // f32: 256 threads x 16 elements per round.
        let small = spec.plan(Shape::All { n: 4096 }, 132, 8);
        assert_eq!((small.grid, small.counters, small.partials), ((1, 1), 0, 0));
        let mid = spec.plan(Shape::All { n: 4097 }, 132, 8);
        assert_eq!((mid.grid, mid.counters, mid.partials), ((2, 1), 1, 2));
        let big = spec.plan(Shape::All { n: 1 << 28 }, 132, 8);
        assert_eq!(big.grid, (1056, 1));
        let other = spec.plan(Shape::All { n: 1 << 28 }, 78, 6);
        assert_eq!(other.grid, (468, 1));
        // bf16 packs are 16 bytes of 8 elements: 4 in flight, 64 bytes a
        // thread as f32's, 32 elements per round.
        let bf16 = ReduceSpec {
            input: DType::BF16,
            ..spec
        };
        assert_eq!((bf16.pack(), bf16.unroll()), (8, 4));
        assert_eq!(bf16.elements_per_round_of_a_thread(), 32);
        assert_eq!(bf16.plan(Shape::All { n: 4097 }, 132, 8).grid, (1, 1));
        // sm_90: past one block's round and up to CLUSTER_MAX_N, one cluster.
        for n in [4097, 1 << 16, CLUSTER_MAX_N] {
            let p = spec.plan_on(Shape::All { n }, 132, 8, Arch::SM90);
            assert_eq!(p.twin, Some(Twin::Cluster), "{n}: {p:?}");
            assert_eq!((p.grid, p.counters, p.partials), ((CLUSTER, 1), 0, 0));
        }
        let p = spec.plan_on(Shape::All { n: 4096 }, 132, 8, Arch::SM90);
        assert!(p.twin.is_none() && p.grid == (1, 1));
        let p = spec.plan_on(
            Shape::All {
                n: CLUSTER_MAX_N + 1,
            },
            132,
            8,
            Arch::SM90,
        );
        assert!(p.twin.is_none() && p.grid.0 > CLUSTER);
        assert_eq!(
            spec.plan_on(Shape::All { n: 1 << 16 }, 132, 8, Arch::SM80)
                .twin,
            None
        );
        // The chain: about n / threads elements per thread plus the tree.
        assert!(
            big.chain >= (1 << 28) / (1056 * 256) && big.chain < 1100,
            "{big:?}"
        );
    }

    #[test]
    fn row_plans_pick_a_warp_for_short_rows() {
        let spec = ReduceSpec {
            axis: ReduceAxis::Rows,
            ..ReduceSpec::default()
        };
        let short = spec.plan(
            Shape::Matrix {
                rows: 262_144,
                cols: 128,
                ld: 128,
            },
            132,
            8,
        );
        assert_eq!(short.twin, Some(Twin::WarpPerRow));
        assert_eq!(short.grid, (262_144 / 8, 1));
        let long = spec.plan(
            Shape::Matrix {
                rows: 7,
                cols: 1025,
                ld: 1100,
            },
            132,
            8,
        );
        assert_ne!(long.twin, Some(Twin::WarpPerRow));
        assert_eq!(long.grid, (7, 1));
        assert!(long.twin.is_none());
        assert_eq!(
            (long.cols_per_split, long.counters, long.partials),
            (0, 0, 0)
        );
    }

    #[test]
    fn few_long_rows_split_into_whole_packs_within_one_wave() {
        let matrix = |rows, cols| Shape::Matrix {
            rows,
            cols,
            ld: cols,
        };
        for input in [DType::F32, DType::BF16] {
            let spec = ReduceSpec {
                axis: ReduceAxis::Rows,
                input,
                ..ReduceSpec::default()
            };
            let twin = spec.for_split_rows();
            let per_round = u64::from(twin.threads()) * twin.elements_per_round_of_a_thread();
            for (rows, cols) in [(3, 100_003), (1, 1 << 20), (5, 77_777), (1, 2 * per_round)] {
                let p = spec.plan(matrix(rows, cols), 132, 8);
                let splits = u64::from(p.grid.1);
                assert!(
                    splits > 1 && p.twin == Some(Twin::SplitRows),
                    "{rows}x{cols} {input:?}: {p:?}"
                );
                assert_eq!(p.threads, twin.threads());
                // The twin plans the same split for itself.
                assert_eq!(twin.plan(matrix(rows, cols), 132, 8), p);
                assert_eq!(p.grid.0 as u64, rows);
                assert_eq!(p.cols_per_split % 4, 0, "{p:?}");
                assert!(p.cols_per_split >= per_round, "{p:?}");
                // Every split has columns, and together they cover the row.
                assert!(
                    (splits - 1) * p.cols_per_split < cols && splits * p.cols_per_split >= cols
                );
                assert!(rows * splits <= 132 * 8, "{p:?}");
                assert_eq!(p.counters as u64, rows);
                assert_eq!(p.partials as u64, rows * splits);
            }
            // Rows that fill the SMs, or a row under two rounds, stay whole.
            for (rows, cols) in [(32_768, 4096), (1056, 100_003), (2, 2 * per_round - 1)] {
                let p = spec.plan(matrix(rows, cols), 132, 8);
                assert!(p.grid.1 == 1 && p.twin.is_none(), "{rows}x{cols}: {p:?}");
                assert_eq!((p.cols_per_split, p.counters, p.partials), (0, 0, 0));
                // Asked for directly, the twin takes the whole row in one
                // split, with its workspace.
                let t = twin.plan(matrix(rows, cols), 132, 8);
                assert!(t.twin == Some(Twin::SplitRows) && t.grid.1 == 1, "{t:?}");
                assert_eq!((t.cols_per_split, t.counters), (cols, rows as usize));
            }
        }
    }

    #[test]
    fn column_plans_split_tall_matrices_and_never_tiny_splits() {
        let spec = ReduceSpec {
            axis: ReduceAxis::Cols,
            ..ReduceSpec::default()
        };
        // f32: 4 columns a thread, 128 a tile. 128 columns: 1 tile; 1056
        // resident blocks want 1056 splits: 249 rows each, 1053 of them.
        let tall = spec.plan(
            Shape::Matrix {
                rows: 262_144,
                cols: 128,
                ld: 128,
            },
            132,
            8,
        );
        assert_eq!(tall.grid, (1, 1053));
        assert_eq!((tall.counters, tall.partials), (1, 1053 * 128));
        // Wide: 256 tiles, 4 splits fit the 1056 slots (5 would not).
        let wide = spec.plan(
            Shape::Matrix {
                rows: 4096,
                cols: 32_768,
                ld: 32_768,
            },
            132,
            8,
        );
        assert_eq!(wide.grid, (256, 4));
        // Never more blocks than one wave when the tiles leave room for splits.
        for (rows, cols) in [(32_768u64, 4096u64), (8192, 16_384)] {
            for (sms, per_sm) in [(132, 6), (132, 8), (78, 5)] {
                let p = spec.plan(
                    Shape::Matrix {
                        rows,
                        cols,
                        ld: cols,
                    },
                    sms,
                    per_sm,
                );
                let blocks = u64::from(p.grid.0) * u64::from(p.grid.1);
                assert!(blocks <= u64::from(sms * per_sm), "{rows}x{cols}: {p:?}");
                assert!(p.grid.1 > 1, "{rows}x{cols}: {p:?}");
            }
        }
        // bf16: 8 columns a thread, 256 a tile.
        let bf16 = ReduceSpec {
            input: DType::BF16,
            ..spec.clone()
        };
        assert_eq!(bf16.col_vec(), 8);
        let m = Shape::Matrix {
            rows: 32_768,
            cols: 4096,
            ld: 4096,
        };
        assert_eq!(bf16.plan(m, 132, 8).grid, (16, 66));
        // 7 rows: one split, no workspace.
        let short = spec.plan(
            Shape::Matrix {
                rows: 7,
                cols: 1000,
                ld: 1000,
            },
            132,
            8,
        );
        assert_eq!((short.grid, short.counters, short.partials), ((8, 1), 0, 0));
        // Every split but the last is full and the splits cover the rows.
        for rows in [64u64, 65, 1000, 4097, 1 << 20] {
            let p = spec.plan(
                Shape::Matrix {
                    rows,
                    cols: 33,
                    ld: 40,
                },
                132,
                8,
            );
            let splits = u64::from(p.grid.1);
            assert!(p.rows_per_split * splits >= rows, "{rows}: {p:?}");
            assert!(p.rows_per_split * (splits - 1) < rows, "{rows}: {p:?}");
            assert!(splits == 1 || p.rows_per_split >= MIN_ROWS_PER_SPLIT);
        }
    }
}
