//! The all-reduce's fused norm epilogue (issue 60): an all-reduce (one-shot,
//! two-stage, push or LL) of each rank's partial rows, the residual added and written back in place, then
//! RMS norm with a weight, written in the input type or as e4m3 (a per-row
//! dynamic scale or one given scale). What tensor-parallel inference runs
//! after every attention and MLP block; `templates/all_reduce_norm.cu` holds
//! the kernel, `redjit_runtime::all_reduce` its call
//! (`Communicator::all_reduce_add_rms_norm`).
//!
//! A block owns whole rows (row b, b + grid, ...), `threads` threads each
//! holding `packs` 16-byte packs of a row in registers with every rank's
//! packs of them: the reduction over ranks, the residual, the row's sum of
//! squares and the output all happen before the row leaves the registers.
//! The LL kernel may instead give each row a thread-block cluster (sm_90+),
//! each block a chunk of the row, the blocks exchanging their sums of squares
//! through distributed shared memory: a few rows then keep many SMs sending
//! and polling lines, where one block a row kept one SM per row.

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::DType;
use crate::spec::all_reduce::AllReduceAlgo;
use crate::spec::norm::Fp8Scale;

/// Most 16-byte packs of one rank a thread holds per row.
pub const MAX_PACKS: u32 = 8;
/// Fewest and most threads of a block (a power of two between: the block
/// reduction merges one state a warp in a power-of-two lane group).
pub const MIN_THREADS: u32 = 128;
/// Most threads of a block: at 1024 the launch bound leaves 64 registers, and
/// every layout that needed it spilled (ptxas 13.0, sm_90).
pub const MAX_THREADS: u32 = 512;
/// Bytes of the longest row one block holds (MAX_THREADS x MAX_PACKS packs).
pub const MAX_ROW_BYTES: usize = (MAX_THREADS * MAX_PACKS * super::PACK_BYTES) as usize;
/// Cluster sizes a row may take (a power of two; 8 is the portable most).
pub const CLUSTERS: [u32; 4] = [1, 2, 4, 8];
/// The LL kernel's default layout gives each row a cluster of blocks, the
/// largest that keeps rows x cluster within this many blocks and each block
/// at least [`MIN_THREADS`] packs: at 1 and 16 rows of 4096 and 8192 bf16 on
/// 2 ranks, the largest such cluster ran fastest
/// (`benchmarks/h200x2/bench-all-reduce-norm.json`).
pub const CLUSTER_BLOCKS: usize = 128;

/// Elements of `dtype` in a 16-byte pack.
fn pack_elts(dtype: DType) -> u32 {
    super::PACK_BYTES / dtype.info().bytes
}

/// Registers a thread's row state takes: every rank's packs, the residual's
/// and the weight's (4 each), and the row's values in f32 (a pack's elements).
fn row_registers(packs: u32, world: u32, dtype: DType) -> u32 {
    packs * (4 * world + 8 + pack_elts(dtype))
}

/// Registers the LL kernel's row state takes: [`row_registers`], and one a
/// rank for its polling.
fn ll_registers(packs: u32, world: u32, dtype: DType) -> u32 {
    row_registers(packs, world, dtype) + world
}

/// Threads of every layout an SM holds: a block of `threads` is launched
/// with at least 512 / threads blocks an SM (its launch bound), so a smaller
/// block puts more rows in flight on an SM and every layout gets the
/// registers of 512 threads.
pub const SM_THREADS: u32 = 512;

/// Registers the row state may take: 65536 / 512 = 128 a thread, less 32 for
/// addresses, the loop and the reduction (with 24 left, 448 threads x 5 packs
/// at two ranks spilled: tests/all_reduce_compile_grid.rs).
const REGISTER_BUDGET: u32 = 65536 / SM_THREADS - 32;
/// The LL kernel's budget for [`ll_registers`]: its polling (line
/// addresses, timers, flags) takes about a third of the registers (at 80
/// and 96 for the row state alone, layouts from 2 to 8 ranks spilled; with
/// the row's residual and weight asked for before the first wait, 5 ranks of
/// f32 at 2 packs spilled at 64: tests/all_reduce_compile_grid.rs).
const LL_REGISTER_BUDGET: u32 = 68;
/// The LL kernel's budget for the row state and every peer's lines of the
/// row's packs at once (at 80, 6 ranks spilled: tests/all_reduce_compile_grid.rs).
const LL_BATCHED_BUDGET: u32 = 72;

/// The fused epilogue of an all-reduce kernel: `residual = allreduce(x) +
/// residual` (in place), `y = rms_norm(residual) * weight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArNorm {
    /// Threads per block.
    pub threads: u32,
    /// 16-byte packs of the row a thread holds (a block's chunk of the row is
    /// at most `threads x packs` packs long).
    pub packs: u32,
    /// Blocks a row (one of [`CLUSTERS`]): 1, one block a row; else a
    /// thread-block cluster of that many, block k taking chunk k of the row's
    /// packs in `cluster` parts (the LL kernel only, sm_90+).
    pub cluster: u32,
    /// `Some`: y is written as e4m3, divided by its scale.
    pub fp8: Option<Fp8Scale>,
}

/// The name mark of the fused epilogue, before its layout:
/// `_addrms_t<threads>x<packs>[c<cluster>][_qd|_qs]`.
pub(crate) const MARK: &str = "_addrms_";

impl ArNorm {
    /// Every layout for rows of `cols` elements of `dtype` over `world`
    /// ranks: one block a row, widest block first (for each block of 512, 256
    /// and 128 threads the fewest packs a thread that cover the row), then
    /// for each cluster of 2, 4 and 8 blocks its widest block; each where it
    /// fits the registers. Empty where the row is no whole number of packs or
    /// no layout holds it.
    pub fn candidates(world: u32, dtype: DType, cols: usize, fp8: Option<Fp8Scale>) -> Vec<ArNorm> {
        let mut out: Vec<ArNorm> = Vec::new();
        for cluster in CLUSTERS {
            let layouts = Self::layouts(world, dtype, cols, cluster, fp8);
            // A cluster's row comes in its widest block only.
            for a in layouts.take(if cluster == 1 { 3 } else { 1 }) {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        out
    }

    /// The layout a call of `rows` x `cols` on `algo`'s kernel takes unless
    /// told: on the LL kernel, each row the largest cluster that keeps rows x
    /// cluster within [`CLUSTER_BLOCKS`] and gives every block at least one
    /// pack a thread of [`MIN_THREADS`]; on the two-stage kernel, the widest
    /// block of two packs a thread or more (t256x2 ran ahead of t512x1 at 512
    /// and 2048 rows of 4096 bf16 on 4 ranks:
    /// `benchmarks/h200x4/bench-all-reduce-norm.json`); then the widest block
    /// (the fewest packs a thread). `None` where no layout holds the row.
    pub fn for_call(
        world: u32,
        dtype: DType,
        (rows, cols): (usize, usize),
        fp8: Option<Fp8Scale>,
        algo: AllReduceAlgo,
    ) -> Option<ArNorm> {
        let ll = algo == AllReduceAlgo::PushLl;
        if algo == AllReduceAlgo::TwoStage {
            let mut one_block = Self::layouts(world, dtype, cols, 1, fp8);
            let widest = one_block.next()?;
            if widest.packs >= 2 {
                return Some(widest);
            }
            return Some(one_block.find(|a| a.packs >= 2).unwrap_or(widest));
        }
        let row_packs = cols / pack_elts(dtype) as usize;
        let cluster = CLUSTERS
            .into_iter()
            .rev()
            .find(|&c| {
                c == 1
                    || ll
                        && rows.saturating_mul(c as usize) <= CLUSTER_BLOCKS
                        && row_packs >= (c * MIN_THREADS) as usize
            })
            .unwrap_or(1);
        Self::layouts(world, dtype, cols, cluster, fp8)
            .next()
            .or_else(|| Self::layouts(world, dtype, cols, 1, fp8).next())
    }

    /// The layout of one block a row: the widest block (the fewest packs a
    /// thread). `None` where no layout holds the row.
    pub fn for_row(world: u32, dtype: DType, cols: usize, fp8: Option<Fp8Scale>) -> Option<ArNorm> {
        Self::layouts(world, dtype, cols, 1, fp8).next()
    }

    /// The layouts of rows of `cols` in clusters of `cluster` blocks, widest
    /// block first, a short chunk's one layout perhaps more than once (no
    /// allocation: the call's default takes the first).
    fn layouts(
        world: u32,
        dtype: DType,
        cols: usize,
        cluster: u32,
        fp8: Option<Fp8Scale>,
    ) -> impl Iterator<Item = ArNorm> {
        let elts = pack_elts(dtype) as usize;
        let chunk = (cols > 0 && cols.is_multiple_of(elts))
            .then(|| (cols / elts).div_ceil(cluster as usize));
        [512u32, 256, 128].into_iter().filter_map(move |threads| {
            let chunk = chunk?;
            let packs = u32::try_from(chunk.div_ceil(threads as usize)).ok()?;
            // A chunk that a narrower block covers at one pack a thread takes it.
            let threads = if packs == 1 {
                (chunk.next_power_of_two() as u32).clamp(MIN_THREADS, threads)
            } else {
                threads
            };
            let a = ArNorm {
                threads,
                packs,
                cluster,
                fp8,
            };
            // A cluster is the LL kernel's only.
            let fits = if cluster == 1 {
                row_registers(packs, world, dtype) <= REGISTER_BUDGET
            } else {
                a.fits_ll(world, dtype)
            };
            (packs <= MAX_PACKS && fits).then_some(a)
        })
    }

    /// The kernels that take this layout for `world` ranks of `dtype`: LL
    /// where it fits the LL kernel's registers; push, one-shot and two-stage
    /// for one block a row.
    pub fn algos(&self, world: u32, dtype: DType) -> Vec<AllReduceAlgo> {
        let mut out = Vec::new();
        if self.fits_ll(world, dtype) {
            out.push(AllReduceAlgo::PushLl);
        }
        if self.cluster == 1 {
            out.extend([
                AllReduceAlgo::Push,
                AllReduceAlgo::OneShot,
                AllReduceAlgo::TwoStage,
            ]);
        }
        out
    }

    /// Rows of its slice whose every rank's packs a block of the two-stage
    /// kernel asks for at once: as many as 64 registers hold, at most 4; one
    /// from 4 packs a thread (two rows of 4 packs on 2 ranks spilled beside
    /// the FP8 row state: tests/all_reduce_compile_grid.rs).
    pub fn sum_rows(&self, world: u32) -> u32 {
        if self.packs >= 4 {
            1
        } else {
            (16 / (self.packs * world)).clamp(1, 4)
        }
    }

    /// Rows a block of the two-stage kernel normalises a batch, the next
    /// batch's sums and residuals asked for meanwhile: as many as two batches
    /// in 64 registers hold, at most 4.
    pub fn norm_rows(&self) -> u32 {
        (4 / self.packs).clamp(1, 4)
    }

    /// Blocks an SM runs at once (the launch bound's second number).
    pub fn min_blocks(&self) -> u32 {
        (SM_THREADS / self.threads).max(1)
    }

    /// Whether this layout holds rows of `cols` elements of `dtype`.
    pub fn holds(&self, dtype: DType, cols: usize) -> bool {
        let elts = pack_elts(dtype) as usize;
        cols > 0
            && cols.is_multiple_of(elts)
            && (cols / elts).div_ceil(self.cluster.max(1) as usize)
                <= (self.threads * self.packs) as usize
    }

    /// The layout in short: `t<threads>x<packs>[c<cluster>]`.
    pub fn layout_name(&self) -> String {
        let c = if self.cluster > 1 {
            format!("c{}", self.cluster)
        } else {
            String::new()
        };
        format!("t{}x{}{c}", self.threads, self.packs)
    }

    /// The suffix of kernel names.
    pub fn suffix(&self) -> String {
        let q = self
            .fp8
            .map_or(String::new(), |s| format!("_{}", s.suffix()));
        format!("{MARK}{}{q}", self.layout_name())
    }

    /// Parses what follows `_addrms_` in a name (`t512x2`, `t128x1c8`,
    /// `t256x1_qd`).
    pub(crate) fn parse(rest: &str) -> Option<ArNorm> {
        let rest = rest.strip_prefix('t')?;
        let (rest, fp8) = match rest.rsplit_once('_') {
            Some((r, "qd")) => (r, Some(Fp8Scale::PerRow)),
            Some((r, "qs")) => (r, Some(Fp8Scale::Given)),
            Some(_) => return None,
            None => (rest, None),
        };
        let (t, rest) = rest.split_once('x')?;
        let (p, cluster) = match rest.split_once('c') {
            Some((p, c)) => (p, c.parse().ok().filter(|&c| c > 1)?),
            None => (rest, 1),
        };
        Some(ArNorm {
            threads: t.parse().ok()?,
            packs: p.parse().ok()?,
            cluster,
            fp8,
        })
    }

    /// Whether the LL kernel takes this layout for `world` ranks of `dtype`
    /// (within its smaller register budget).
    pub fn fits_ll(&self, world: u32, dtype: DType) -> bool {
        ll_registers(self.packs, world, dtype) <= LL_REGISTER_BUDGET
    }

    /// Whether the LL kernel asks for every peer's lines of the row's packs
    /// at once (one round trip a row, not one a pack and peer), which holds
    /// both lines of each peer's packs (8 registers a pack and peer) beside
    /// the row state.
    pub fn ll_batched(&self, world: u32, dtype: DType) -> bool {
        row_registers(self.packs, world, dtype) + 8 * self.packs * (world - 1) <= LL_BATCHED_BUDGET
    }

    /// Whether the one-shot and push kernels ask for a block's next row while it
    /// reduces and stores this one, which holds a second row's packs of every
    /// rank and of the residual (4 registers a pack each) beside the row state.
    pub fn prefetches(&self, world: u32, dtype: DType) -> bool {
        row_registers(self.packs, world, dtype) + 4 * self.packs * (world + 1) <= REGISTER_BUDGET
    }

    /// The rules of the fused layout, for a spec of `world` ranks of
    /// `dtype`, of the LL kernel with `ll` (the all-reduce spec checks what
    /// it is an epilogue of).
    pub(crate) fn validate(&self, world: u32, dtype: DType, ll: bool) -> Result<(), SpecError> {
        if !(MIN_THREADS..=MAX_THREADS).contains(&self.threads) || !self.threads.is_power_of_two() {
            return Err(SpecError::invalid(
                "threads",
                self.threads,
                format!(
                    "a fused norm's block has {MIN_THREADS} to {MAX_THREADS} threads, a power of two"
                ),
            ));
        }
        if !CLUSTERS.contains(&self.cluster) {
            return Err(SpecError::invalid(
                "cluster",
                self.cluster,
                format!("a fused norm's row takes a cluster of {CLUSTERS:?} blocks"),
            ));
        }
        if self.cluster > 1 && !ll {
            return Err(SpecError::invalid(
                "cluster",
                self.cluster,
                "a row in a cluster of blocks is the LL kernel's only",
            ));
        }
        if !(1..=MAX_PACKS).contains(&self.packs) {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!("a fused norm's thread holds 1 to {MAX_PACKS} packs of a row"),
            ));
        }
        let (budget, need) = if ll {
            (LL_REGISTER_BUDGET, ll_registers(self.packs, world, dtype))
        } else {
            (REGISTER_BUDGET, row_registers(self.packs, world, dtype))
        };
        if need > budget {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "{} packs of {world} ranks take {need} registers a thread; a thread of the {} kernel keeps {budget} for them",
                    self.packs,
                    if ll { "LL" } else { "one-shot" }
                ),
            ));
        }
        if self.fp8.is_some() && dtype == DType::F32 {
            return Err(SpecError::invalid(
                "dtype",
                dtype,
                "an FP8-output fused norm reads bf16 or f16 (a pack of 8 is one 8-byte e4m3 store)",
            ));
        }
        Ok(())
    }

    /// The kernel's parameters: the one-shot kernel's; the two-stage
    /// kernel's (with its scratch sets and their size); or the in-place
    /// kernels' (their own input in place, their buffers, a region's size).
    pub(crate) fn params(&self, algo: AllReduceAlgo) -> Vec<Param> {
        // The in-place kernels read this rank's x and exchange it through
        // their buffer; the one-shot and two-stage kernels read every rank's
        // through a table.
        let (input, buffer) = match algo {
            AllReduceAlgo::PushLl => ("in_ptr", Some("ll")),
            AllReduceAlgo::Push => ("in_ptr", Some("push")),
            AllReduceAlgo::TwoStage => ("in_table", Some("tmp")),
            AllReduceAlgo::OneShot => ("in_table", None),
        };
        // What every thread reads first, then the tables (the world's entries
        // only): at 2 ranks all of it sits in two lines of the parameter bank.
        let mut p = vec![
            Param::ptr(input),
            Param::ptr("residual_ptr"),
            Param::ptr("weight_ptr"),
            Param::ptr("out_ptr"),
            Param::ptr("scale_ptr"),
            Param::ptr("error_ptr"),
            Param::u32("rows32"),
            Param::u32("cols32"),
            Param::u64("timeout_ns"),
        ];
        if buffer.is_some() {
            p.push(Param::u64("window"));
        }
        p.extend([
            Param::f32("eps"),
            Param::u32("rank"),
            Param::peer_table("sig"),
        ]);
        p.extend(buffer.map(Param::peer_table));
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_llm_widths_take_one_block_of_whole_packs() {
        let n = |world, dtype, cols| {
            ArNorm::for_row(world, dtype, cols, None).map(|a| (a.threads, a.packs))
        };
        for world in [2, 4, 8] {
            assert_eq!(n(world, DType::BF16, 4096), Some((512, 1)));
            assert_eq!(n(world, DType::BF16, 8192), Some((512, 2)));
            assert_eq!(n(world, DType::F32, 4096), Some((512, 2)));
            assert_eq!(n(world, DType::BF16, 1000), Some((128, 1)));
            assert_eq!(n(world, DType::BF16, 1001), None);
            assert_eq!(n(world, DType::BF16, 0), None);
        }
        assert_eq!(n(2, DType::BF16, 6144), Some((512, 2)));
        assert_eq!(n(2, DType::BF16, 16384), Some((512, 4)));
        assert_eq!(n(4, DType::BF16, 16384), None);
        assert_eq!(n(2, DType::BF16, 16384 + 8), None);
        assert_eq!(n(2, DType::BF16, 12288 + 8), Some((512, 4)));
        assert_eq!(n(2, DType::BF16, 32768 + 8), None);
        let c = |world, dtype, cols| {
            ArNorm::candidates(world, dtype, cols, None)
                .iter()
                .map(|a| a.layout_name())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            c(2, DType::BF16, 4096),
            [
                "t512x1", "t256x2", "t128x4", "t256x1c2", "t128x1c4", "t128x1c8"
            ]
        );
        assert_eq!(
            c(2, DType::BF16, 8192),
            ["t512x2", "t256x4", "t512x1c2", "t256x1c4", "t128x1c8"]
        );
        assert_eq!(
            c(8, DType::BF16, 8192),
            ["t512x2", "t512x1c2", "t256x1c4", "t128x1c8"]
        );
        assert_eq!(
            c(2, DType::BF16, 1000),
            ["t128x1", "t128x1c2", "t128x1c4", "t128x1c8"]
        );
        // A call's default: a cluster a row while the rows' blocks stay
        // within CLUSTER_BLOCKS and each block has a pack a thread of 128, on
        // LL only.
        let call = |rows, cols, ll: bool| {
            let algo = if ll {
                AllReduceAlgo::PushLl
            } else {
                AllReduceAlgo::OneShot
            };
            ArNorm::for_call(2, DType::BF16, (rows, cols), None, algo).map(|a| a.layout_name())
        };
        assert_eq!(call(1, 8192, true).as_deref(), Some("t128x1c8"));
        assert_eq!(call(16, 8192, true).as_deref(), Some("t128x1c8"));
        assert_eq!(call(17, 8192, true).as_deref(), Some("t256x1c4"));
        assert_eq!(call(64, 8192, true).as_deref(), Some("t512x1c2"));
        assert_eq!(call(65, 8192, true).as_deref(), Some("t512x2"));
        assert_eq!(call(1, 16384, true).as_deref(), Some("t256x1c8"));
        assert_eq!(call(1, 6144, true).as_deref(), Some("t256x1c4"));
        assert_eq!(call(1, 4096, true).as_deref(), Some("t128x1c4"));
        assert_eq!(call(64, 4096, true).as_deref(), Some("t256x1c2"));
        assert_eq!(call(65, 4096, true).as_deref(), Some("t512x1"));
        assert_eq!(call(1, 8192, false).as_deref(), Some("t512x2"));
        assert_eq!(call(1, 1000, true).as_deref(), Some("t128x1"));
        assert_eq!(call(1, 1001, true), None);
        // The two-stage kernel's: two packs a thread where the widest block
        // has one.
        let two_stage = |world, cols| {
            ArNorm::for_call(
                world,
                DType::BF16,
                (512, cols),
                None,
                AllReduceAlgo::TwoStage,
            )
            .map(|a| a.layout_name())
        };
        assert_eq!(two_stage(4, 4096).as_deref(), Some("t256x2"));
        assert_eq!(two_stage(4, 8192).as_deref(), Some("t512x2"));
        assert_eq!(two_stage(8, 2048).as_deref(), Some("t128x2"));
        assert_eq!(two_stage(4, 1000).as_deref(), Some("t128x1"));
        assert_eq!(two_stage(4, 1001), None);
        // The LL kernel asks for every peer's lines at once where that fits.
        let wide = |world, cols| ArNorm::for_row(world, DType::BF16, cols, None).unwrap();
        assert!(wide(2, 4096).ll_batched(2, DType::BF16));
        assert!(wide(4, 4096).ll_batched(4, DType::BF16));
        assert!(!wide(8, 4096).ll_batched(8, DType::BF16));
        assert!(wide(8, 4096).fits_ll(8, DType::BF16));
        // The one-shot and push kernels load the next row ahead where the registers hold it.
        assert!(wide(2, 4096).prefetches(2, DType::BF16));
        assert!(wide(2, 8192).prefetches(2, DType::BF16));
        assert!(wide(8, 4096).prefetches(8, DType::BF16));
        assert!(!wide(8, 8192).prefetches(8, DType::BF16));
        // Every layout it offers is valid and holds the row.
        for world in 2..=8 {
            for dtype in [DType::F32, DType::BF16] {
                for cols in (8..40000).step_by(8 * 37) {
                    for a in ArNorm::candidates(world, dtype, cols, None) {
                        assert_eq!(a.validate(world, dtype, false).is_ok(), a.cluster == 1);
                        assert_eq!(
                            a.validate(world, dtype, true).is_ok(),
                            a.fits_ll(world, dtype)
                        );
                        assert!(a.holds(dtype, cols), "{a:?} {cols}");
                        let past = (a.threads * a.packs * a.cluster) as usize * 8;
                        assert!(!a.holds(dtype, cols + past));
                        // The kernels it names all take it.
                        for algo in a.algos(world, dtype) {
                            let ll = algo == AllReduceAlgo::PushLl;
                            a.validate(world, dtype, ll).unwrap();
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn two_ranks_parameters_fill_two_lines_of_the_parameter_bank() {
        // 112 bytes from 0x210 end at 0x280: a warp waits for two lines.
        use crate::AllReduceAlgo;
        use crate::spec::KernelSpec;
        use crate::spec::all_reduce::AllReduceSpec;
        let norm = ArNorm::for_row(2, DType::BF16, 4096, Some(Fp8Scale::PerRow));
        for algo in [
            AllReduceAlgo::PushLl,
            AllReduceAlgo::Push,
            AllReduceAlgo::OneShot,
            AllReduceAlgo::TwoStage,
        ] {
            for fused in [None, norm] {
                if fused.is_some() && algo == AllReduceAlgo::TwoStage {
                    continue;
                }
                let spec = AllReduceSpec {
                    world: 2,
                    dtype: DType::BF16,
                    algo,
                    norm: fused,
                    ..AllReduceSpec::default()
                };
                let ends = crate::params::param_ends(&spec.params(), 2);
                let end = ends.last().unwrap().1;
                assert!(end <= 112, "{}: {end} bytes", spec.name());
            }
        }
    }

    #[test]
    fn suffixes_round_trip() {
        for fp8 in [None, Some(Fp8Scale::PerRow), Some(Fp8Scale::Given)] {
            for cluster in CLUSTERS {
                let a = ArNorm {
                    threads: 256,
                    packs: 3,
                    cluster,
                    fp8,
                };
                assert_eq!(ArNorm::parse(&a.suffix()[MARK.len()..]), Some(a));
            }
        }
        assert_eq!(ArNorm::parse("t512x"), None);
        assert_eq!(ArNorm::parse("t512x1_qq"), None);
        assert_eq!(ArNorm::parse("512x1"), None);
        // One block a row has no cluster part: `c1` is not canonical.
        assert_eq!(ArNorm::parse("t512x1c1"), None);
        assert_eq!(ArNorm::parse("t512x1c"), None);
    }

    #[test]
    fn fused_specs_round_trip_render_their_parameters_and_refuse_the_rest() {
        use crate::spec::KernelSpec;
        use crate::spec::all_reduce::{AllReduceSpec, ArStage};
        use crate::{AllReduceAlgo, Op};
        let mut seen = 0;
        for world in 2..=8 {
            for dtype in [DType::F32, DType::BF16, DType::F16] {
                for cols in [1000, 4096, 8192] {
                    for fp8 in [None, Some(Fp8Scale::PerRow), Some(Fp8Scale::Given)] {
                        for norm in ArNorm::candidates(world, dtype, cols, fp8) {
                            for algo in [
                                AllReduceAlgo::OneShot,
                                AllReduceAlgo::TwoStage,
                                AllReduceAlgo::PushLl,
                            ] {
                                let spec = AllReduceSpec {
                                    world,
                                    dtype,
                                    algo,
                                    norm: Some(norm),
                                    ..AllReduceSpec::default()
                                };
                                let ok = !(fp8.is_some() && dtype == DType::F32)
                                    && norm.algos(world, dtype).contains(&algo);
                                assert_eq!(spec.validate().is_ok(), ok, "{}", spec.name());
                                if !ok {
                                    continue;
                                }
                                assert_eq!(spec.name().parse::<AllReduceSpec>().unwrap(), spec);
                                crate::spec::check_params(&spec).unwrap();
                                seen += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(seen > 300, "{seen}");
        let norm = ArNorm::for_row(2, DType::BF16, 4096, None);
        let base = AllReduceSpec {
            norm,
            ..AllReduceSpec::default()
        };
        for (bad, says) in [
            (
                AllReduceSpec {
                    algo: AllReduceAlgo::TwoStage,
                    cp_async: true,
                    ..base.clone()
                },
                "epilogue of the whole",
            ),
            (
                AllReduceSpec {
                    algo: AllReduceAlgo::TwoStage,
                    norm: Some(ArNorm {
                        threads: 256,
                        packs: 1,
                        cluster: 2,
                        fp8: None,
                    }),
                    ..base.clone()
                },
                "LL kernel's only",
            ),
            (
                AllReduceSpec {
                    op: Op::Max,
                    ..base.clone()
                },
                "follows a sum",
            ),
            (
                AllReduceSpec {
                    dtype: DType::F32,
                    transport: Some(DType::BF16),
                    ..base.clone()
                },
                "no quantized transport",
            ),
            (
                AllReduceSpec {
                    stage: ArStage::ReduceScatter,
                    ..base.clone()
                },
                "invalid stage",
            ),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
