//! `nms`: non-maximum suppression with torchvision's semantics (issue 11).
//! Boxes are `(x1, y1, x2, y2)` f32, scores f32; the boxes are ordered by score
//! (descending; equal scores, `-0.0` and `+0.0` included, lowest index first),
//! and a box is dropped when its IoU with a kept, earlier box is strictly
//! greater than the threshold. The kept indices come back in that order.
//!
//! The pipeline is one kernel per stage ([`NmsStage`]), all rendered into one
//! program by the launcher: the scores become u64 sort keys and each tile of
//! `4 x threads` keys is sorted in shared memory (bitonic), bitonic merge steps
//! across tiles (global memory) and within tiles (shared memory) finish the sort
//! for any count, the mask kernel writes a 64-bit suppression word per (sorted
//! box, 64-box column block) pair of the upper triangle, and one block walks
//! the column blocks in order with a removed bitset, writing the kept indices
//! and their count on the GPU (torchvision copies the whole mask to the host).
//!
//! ```
//! use redjit_codegen::{KernelSpec, NmsSpec, NmsStage};
//!
//! let spec: NmsSpec = "nms_walk_t256".parse().unwrap();
//! assert_eq!(spec, NmsSpec::default());
//! let names: Vec<String> = spec.pipeline().iter().map(|s| s.name()).collect();
//! assert_eq!(names, ["nms_sort_t1024", "nms_merge_t1024", "nms_tilemerge_t1024", "nms_mask_t64", "nms_walk_t256"]);
//! assert_eq!(NmsSpec::new(NmsStage::Sort).tile(), 4096);
//! let src = spec.render().unwrap();
//! assert!(src.code.contains("nms_walk_t256("));
//! ```

use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{Arch, Family, NmsStage};
use crate::spec::{KernelSpec, NameParse};

/// Boxes per column block of the mask: one bit each in a u64.
pub const COL_BLOCK: u64 = 64;
/// Keys a sort thread holds in its tile (the tile is `KEYS_PER_THREAD x threads`).
pub const KEYS_PER_THREAD: u32 = 4;
/// The most boxes one call takes: indices travel in the low 32 bits of the sort
/// keys, and the mask's row count per launch in a 32-bit work index.
pub const MAX_BOXES: u64 = 1 << 31;

/// One kernel of the NMS pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NmsSpec {
    /// Which stage.
    pub stage: NmsStage,
    /// Threads per block (each stage's row of the registry lists the allowed ones).
    pub threads: u32,
}

impl Default for NmsSpec {
    /// The walk stage at 256 threads: the spec a caller hands `Runtime::nms`.
    fn default() -> Self {
        NmsSpec::new(NmsStage::Walk)
    }
}

impl NmsSpec {
    /// `stage` at its default block size: 1024 for the sort stages (tiles of
    /// 4096 keys, 32 KB of shared memory), 64 for the mask, 256 for the walk.
    pub fn new(stage: NmsStage) -> NmsSpec {
        let threads = match stage {
            NmsStage::Sort | NmsStage::Merge | NmsStage::TileMerge => 1024,
            NmsStage::Mask => 64,
            NmsStage::Walk => 256,
        };
        NmsSpec { stage, threads }
    }

    /// Keys one sort or tile-merge block holds in shared memory.
    pub fn tile(&self) -> u32 {
        KEYS_PER_THREAD * self.threads
    }

    /// Every stage of the pipeline this spec belongs to, in launch order: the
    /// default sort and mask stages, and this spec as the walk when it is one
    /// (otherwise the default walk).
    pub fn pipeline(&self) -> [NmsSpec; 5] {
        let walk = if self.stage == NmsStage::Walk {
            *self
        } else {
            NmsSpec::default()
        };
        [
            NmsSpec::new(NmsStage::Sort),
            NmsSpec::new(NmsStage::Merge),
            NmsSpec::new(NmsStage::TileMerge),
            NmsSpec::new(NmsStage::Mask),
            walk,
        ]
    }

    fn context(&self) -> NmsContext {
        NmsContext {
            name: self.name(),
            stage: self.stage.slug(),
            threads: self.threads,
            tile: self.tile(),
        }
    }
}

/// What the `nms.cu` template is rendered from.
#[derive(Serialize)]
struct NmsContext {
    name: String,
    stage: &'static str,
    threads: u32,
    tile: u32,
}

impl KernelSpec for NmsSpec {
    fn family(&self) -> Family {
        Family::Nms
    }

    fn params(&self) -> Vec<Param> {
        match self.stage {
            NmsStage::Sort => vec![
                Param::ptr("scores"),
                Param::ptr("boxes"),
                Param::u64("n"),
                Param::ptr("keys"),
                Param::ptr("status"),
            ],
            NmsStage::Merge => vec![
                Param::ptr("keys"),
                Param::u64("padded"),
                Param::u64("k"),
                Param::u64("j"),
            ],
            NmsStage::TileMerge => vec![Param::ptr("keys"), Param::u64("k")],
            NmsStage::Mask => vec![
                Param::ptr("boxes"),
                Param::ptr("keys"),
                Param::u64("n"),
                Param::u64("row0"),
                Param::u64("rows"),
                Param::u64("col_blocks"),
                Param::ptr("mask"),
                Param::f32("thr"),
            ],
            NmsStage::Walk => vec![
                Param::ptr("mask"),
                Param::ptr("keys"),
                Param::u64("n"),
                Param::u64("row0"),
                Param::u64("rows"),
                Param::u64("col_blocks"),
                Param::ptr("removed"),
                Param::ptr("keep"),
                Param::ptr("status"),
            ],
        }
    }

    fn validate(&self) -> Result<(), SpecError> {
        let allowed = self.stage.info().threads;
        if !allowed.contains(&self.threads) {
            let list: Vec<String> = allowed.iter().map(|t| t.to_string()).collect();
            return Err(SpecError::invalid(
                "threads",
                self.threads,
                format!(
                    "the nms {} stage runs {} threads per block",
                    self.stage,
                    list.join(", ")
                ),
            ));
        }
        Ok(())
    }

    fn name(&self) -> String {
        format!("{}_{}_t{}", Family::Nms.slug(), self.stage, self.threads)
    }

    fn min_arch(&self) -> Arch {
        // 64-bit red.global.or and the sync shuffles-free code: sm_70+ (the
        // oldest arch the other families' launchers meet).
        Arch(70)
    }

    fn render_body(&self) -> Result<String, SpecError> {
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for NmsSpec {
    type Err = SpecError;

    /// Parses a kernel name, e.g. `nms_walk_t256` or `nms_sort_t1024`, and
    /// validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::Nms)?;
        let (stage, threads) = rest.rsplit_once('_').ok_or_else(|| name.bad())?;
        let stage: NmsStage = stage.parse()?;
        let threads: u32 = threads
            .strip_prefix('t')
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| name.bad())?;
        let spec = NmsSpec { stage, threads };
        spec.validate()?;
        name.canonical(&spec)?;
        Ok(spec)
    }
}

/// Every spec of the family: each stage at each block size it allows.
pub fn all() -> Vec<NmsSpec> {
    NmsStage::ALL
        .iter()
        .flat_map(|&stage| {
            stage
                .info()
                .threads
                .iter()
                .map(move |&threads| NmsSpec { stage, threads })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in all() {
            assert_eq!(s.name().parse::<NmsSpec>().unwrap(), s, "{}", s.name());
        }
        assert_eq!(all().len(), 3 + 3 + 3 + 1 + 4);
    }

    #[test]
    fn bad_names_and_specs_are_refused_with_the_rule() {
        for bad in [
            "nms",
            "nms_walk",
            "nms_walk_256",
            "nms_walk_t",
            "nms_walk_t300",
            "nms_mask_t128",
            "nms_sorted_t1024",
            "nms_walk_t0256",
            "nmswalk_t256",
            "nms_WALK_t256",
        ] {
            assert!(bad.parse::<NmsSpec>().is_err(), "{bad}");
        }
        let e = NmsSpec {
            stage: NmsStage::Mask,
            threads: 128,
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("threads = 128") && e.contains("mask stage runs 64"),
            "{e}"
        );
        let e = "nms_walk_t300".parse::<NmsSpec>().unwrap_err().to_string();
        assert!(e.contains("128, 256, 512, 1024"), "{e}");
        let e = "nms_sorted_t1024"
            .parse::<NmsSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("sort, merge, tilemerge, mask, walk"), "{e}");
    }

    #[test]
    fn every_stage_renders() {
        for s in all() {
            let src = s.render().unwrap();
            assert_eq!(src.kernels, [s.name()]);
            assert!(src.code.contains(&format!("{}(", s.name())), "{}", s.name());
        }
    }
}
