//! The all-reduce's fused norm epilogue (issue 60): a one-shot all-reduce of
//! each rank's partial rows, the residual added and written back in place, then
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

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::DType;
use crate::spec::norm::Fp8Scale;

/// Most 16-byte packs of one rank a thread holds per row.
pub const MAX_PACKS: u32 = 8;
/// Fewest and most threads of a block (a power of two between: the block
/// reduction merges one state a warp in a power-of-two lane group).
pub const MIN_THREADS: u32 = 128;
/// Most threads of a block: at 1024 the launch bound leaves 64 registers, and
/// every layout that needed it spilled (ptxas 13.0, sm_90).
pub const MAX_THREADS: u32 = 512;

/// Registers a thread's row state takes: every rank's packs, the residual's
/// and the weight's (4 each), and the row's values in f32 (`elts` a pack).
fn row_registers(packs: u32, world: u32, elts: u32) -> u32 {
    packs * (4 * world + 8 + elts)
}

/// Registers a thread of a block of `threads` gets under its launch bound
/// (ptxas 13.0, sm_90, as it reported for this kernel: 255 up to 256
/// threads, 168 up to 384, 128 above).
fn register_cap(threads: u32) -> u32 {
    match threads {
        0..=256 => 255,
        257..=384 => 168,
        _ => 128,
    }
}

/// Registers the row state may take: the cap less 32 for addresses, the
/// loop and the reduction (with 24 left, 448x5 and 384x6 with FP8 output at
/// two ranks spilled: tests/all_reduce_compile_grid.rs).
fn register_budget(threads: u32) -> u32 {
    register_cap(threads) - 32
}

/// The fused epilogue of an all-reduce kernel: `residual = allreduce(x) +
/// residual` (in place), `y = rms_norm(residual) * weight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArNorm {
    /// Threads per block, one block a row.
    pub threads: u32,
    /// 16-byte packs of the row a thread holds (the row is at most
    /// `threads x packs` packs long).
    pub packs: u32,
    /// `Some`: y is written as e4m3, divided by its scale.
    pub fp8: Option<Fp8Scale>,
}

/// The name mark of the fused epilogue: `_addrms_t<threads>x<packs>[_qd|_qs]`.
pub(crate) const MARK: &str = "_addrms_t";

impl ArNorm {
    /// The layout for rows of `cols` elements of `dtype` over `world` ranks:
    /// the fewest packs a thread whose block (the fewest threads, a power of
    /// two, at least 128, that cover the row) stays within 512 threads and
    /// keeps the row state within the launch bound's registers. `None` where
    /// the row is no whole number of packs or no layout holds it.
    pub fn for_row(world: u32, dtype: DType, cols: usize, fp8: Option<Fp8Scale>) -> Option<ArNorm> {
        let elts = (crate::spec::all_reduce::PACK_BYTES / dtype.info().bytes) as usize;
        if cols == 0 || !cols.is_multiple_of(elts) {
            return None;
        }
        let row_packs = cols / elts;
        (1..=MAX_PACKS).find_map(|packs| {
            let threads = row_packs
                .div_ceil(packs as usize)
                .next_power_of_two()
                .max(MIN_THREADS as usize);
            let threads = u32::try_from(threads).ok()?;
            let fits = threads <= MAX_THREADS
                && row_registers(packs, world, elts as u32) <= register_budget(threads);
            fits.then_some(ArNorm {
                threads,
                packs,
                fp8,
            })
        })
    }

    /// The suffix of kernel names.
    pub fn suffix(&self) -> String {
        let q = self
            .fp8
            .map_or(String::new(), |s| format!("_{}", s.suffix()));
        format!("{MARK}{}x{}{q}", self.threads, self.packs)
    }

    /// Parses what follows `_addrms_t` in a name (`512x2`, `256x1_qd`).
    pub(crate) fn parse(rest: &str) -> Option<ArNorm> {
        let (rest, fp8) = match rest.rsplit_once('_') {
            Some((r, "qd")) => (r, Some(Fp8Scale::PerRow)),
            Some((r, "qs")) => (r, Some(Fp8Scale::Given)),
            Some(_) => return None,
            None => (rest, None),
        };
        let (t, p) = rest.split_once('x')?;
        Some(ArNorm {
            threads: t.parse().ok()?,
            packs: p.parse().ok()?,
            fp8,
        })
    }

    /// The rules of the fused layout, for a spec of `world` ranks of
    /// `dtype` (the all-reduce spec checks what it is an epilogue of).
    pub(crate) fn validate(&self, world: u32, dtype: DType) -> Result<(), SpecError> {
        if !(MIN_THREADS..=MAX_THREADS).contains(&self.threads) || !self.threads.is_power_of_two() {
            return Err(SpecError::invalid(
                "threads",
                self.threads,
                format!(
                    "a fused norm's block has {MIN_THREADS} to {MAX_THREADS} threads, a power of two"
                ),
            ));
        }
        if !(1..=MAX_PACKS).contains(&self.packs) {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!("a fused norm's thread holds 1 to {MAX_PACKS} packs of a row"),
            ));
        }
        let elts = crate::spec::all_reduce::PACK_BYTES / dtype.info().bytes;
        let (need, budget) = (
            row_registers(self.packs, world, elts),
            register_budget(self.threads),
        );
        if need > budget {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "{} packs of {world} ranks take {need} registers a thread; a block of {} keeps {budget} for them",
                    self.packs, self.threads
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

    /// The kernel's parameters.
    pub(crate) fn params(&self) -> Vec<Param> {
        vec![
            Param::ptr("in_table"),
            Param::peer_table("sig"),
            Param::ptr("residual_ptr"),
            Param::ptr("weight_ptr"),
            Param::ptr("out_ptr"),
            Param::ptr("scale_ptr"),
            Param::u32("rank"),
            Param::u64("rows"),
            Param::u64("cols"),
            Param::f32("eps"),
            Param::u64("timeout_ns"),
            Param::ptr("error_ptr"),
        ]
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
        // Every layout it picks is valid.
        for world in 2..=8 {
            for cols in (8..40000).step_by(8 * 37) {
                if let Some(a) = ArNorm::for_row(world, DType::BF16, cols, None) {
                    a.validate(world, DType::BF16).unwrap();
                }
            }
        }
    }

    #[test]
    fn suffixes_round_trip() {
        for fp8 in [None, Some(Fp8Scale::PerRow), Some(Fp8Scale::Given)] {
            let a = ArNorm {
                threads: 256,
                packs: 3,
                fp8,
            };
            assert_eq!(ArNorm::parse(&a.suffix()[MARK.len()..]), Some(a));
        }
        assert_eq!(ArNorm::parse("512x"), None);
        assert_eq!(ArNorm::parse("512x1_qq"), None);
    }
}
