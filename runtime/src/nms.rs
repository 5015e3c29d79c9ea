//! The launcher of the `nms` pipeline (non-maximum suppression with
//! torchvision's semantics): the one place its kernels are launched, and the
//! one place a call is checked.
//!
//! ```no_run
//! use redjit_runtime::{NmsSpec, Runtime};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let s = rt.stream();
//! // Two overlapping boxes (IoU 0.9025) and a distant one.
//! let boxes = s.clone_htod(&[0.0f32, 0.0, 10.0, 10.0, 0.5, 0.5, 10.0, 10.0, 20.0, 20.0, 30.0, 30.0])?;
//! let scores = s.clone_htod(&[0.9f32, 0.95, 0.1])?;
//! let nms = rt.nms(&NmsSpec::default())?;
//! assert_eq!(nms.run(s, &boxes, &scores, 0.5)?, [1, 2]);
//! # Ok(()) }
//! ```
//!
//! Semantics (the CPU twin, [`crate::reference_nms`], is the definition):
//! - Order: score descending; equal scores (and `-0.0` against `+0.0`) lowest
//!   index first, always (the keys are (score, index) pairs, so the order is
//!   total). torchvision sorts with `scores.sort(0, descending=True)`; torch's
//!   CUDA sort is stable above 32 elements (warp merge sort, then cub block and
//!   segmented radix sorts: equal scores keep index order, the same as here),
//!   while at 32 elements or fewer it uses an unstable bitonic sort, so there its
//!   tie order is unspecified and may differ from redjit's. A radix sort may also
//!   order `-0.0` and `+0.0` by their sign bit; redjit takes them as equal.
//! - A box is dropped when its IoU with a kept, earlier box is strictly greater
//!   than the threshold. Areas are `(x2 - x1) * (y2 - y1)`; a union of 0 or
//!   less (zero-area or inverted boxes) counts as IoU 0, never suppressing
//!   (torchvision's 0 / 0 is NaN, which never suppresses either).
//! - Refused with a typed error naming the value: a NaN or negative threshold
//!   (IoU is never negative, so a negative threshold would drop every box
//!   after the first; torchvision accepts it), a threshold of 1 or more keeps
//!   every box; a NaN score or a non-finite coordinate (torchvision computes
//!   NaN IoUs and keeps such boxes silently); boxes not 4 x scores long;
//!   buffers other than f32; more than 2^31 boxes. Inverted boxes (x2 < x1)
//!   are accepted and computed with the same formula as torchvision.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};
use redjit_codegen::params::Param;
use redjit_codegen::spec::nms::{COL_BLOCK, MAX_BOXES};
use redjit_codegen::{DType, KernelSpec, NmsSpec, NmsStage};

use crate::elem::KernelInput;
use crate::error::{DriverContext, Error, Result};
use crate::launch_args::CheckedArgs;
use crate::runtime::Runtime;

/// Bytes of mask one launch of the mask kernel writes at most: a call whose
/// whole mask (n x ceil(n / 64) words) is larger runs in row chunks (100 003
/// boxes: 5 chunks; 2^20 boxes: 512).
pub const MASK_BUDGET_BYTES: u64 = 256 << 20;
/// The mask kernel's grid.y limit, in rows (65535 row blocks of 64).
const MAX_CHUNK_ROWS: u64 = 65_535 * COL_BLOCK;

/// What [`check_call`] needs to know of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct NmsCall {
    /// The boxes buffer: (dtype, elements).
    pub boxes: (DType, usize),
    /// The scores buffer: (dtype, elements).
    pub scores: (DType, usize),
    /// The IoU threshold.
    pub iou_threshold: f32,
    /// Rows per mask chunk, when the caller forces one (tests); `None`: from
    /// [`MASK_BUDGET_BYTES`].
    pub chunk_rows: Option<usize>,
}

/// How one call is laid out: derived from the box count and the sort tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NmsPlan {
    /// Boxes.
    pub n: u64,
    /// Sort keys: n rounded up to a power of two, at least one tile.
    pub padded: u64,
    /// Keys per sort tile.
    pub tile: u64,
    /// 64-box column blocks: ceil(n / 64).
    pub col_blocks: u64,
    /// Sorted rows per mask chunk (a multiple of 64).
    pub chunk_rows: u64,
    /// The bitonic stages past the tile, in order: each `(k, [j...])` is the
    /// global steps j >= tile, then one tile-merge launch for the steps j < tile.
    pub merges: Vec<(u64, Vec<u64>)>,
}

impl NmsPlan {
    /// The plan for `n` boxes with sort tiles of `tile` keys; `chunk_rows`
    /// forces the mask chunk (a multiple of 64).
    pub fn new(n: u64, tile: u64, chunk_rows: Option<u64>) -> NmsPlan {
        let padded = n.max(1).next_power_of_two().max(tile);
        let col_blocks = n.div_ceil(COL_BLOCK);
        let chunk_rows = chunk_rows.unwrap_or_else(|| {
            let per_row = col_blocks.max(1) * 8;
            (MASK_BUDGET_BYTES / per_row / COL_BLOCK * COL_BLOCK).max(COL_BLOCK)
        });
        let chunk_rows = chunk_rows
            .min(n.next_multiple_of(COL_BLOCK).max(COL_BLOCK))
            .min(MAX_CHUNK_ROWS);
        let mut merges = Vec::new();
        let mut k = tile * 2;
        while k <= padded {
            let mut steps = Vec::new();
            let mut j = k / 2;
            while j >= tile {
                steps.push(j);
                j /= 2;
            }
            merges.push((k, steps));
            k *= 2;
        }
        NmsPlan {
            n,
            padded,
            tile,
            col_blocks,
            chunk_rows,
            merges,
        }
    }

    /// Mask words of one chunk.
    pub fn mask_words(&self) -> u64 {
        self.chunk_rows * self.col_blocks
    }
}

/// Checks a call of the pipeline whose walk is `spec` without a GPU. Returns
/// the launch plan. Every call goes through here.
pub fn check_call(spec: &NmsSpec, c: &NmsCall) -> Result<NmsPlan> {
    spec.validate()?;
    let err = Error::launch_of(|| spec.name());
    if spec.stage != NmsStage::Walk {
        return Err(err(
            "spec",
            spec.name(),
            "Runtime::nms takes the walk stage's spec (e.g. nms_walk_t256); the other stages are fixed".into(),
        ));
    }
    for (what, b) in [("boxes", c.boxes), ("scores", c.scores)] {
        if b.0 != DType::F32 {
            return Err(err(what, b.0.to_string(), format!("{what} are f32")));
        }
    }
    let n = c.scores.1;
    if c.boxes.1 != n.saturating_mul(4) {
        return Err(err(
            "boxes",
            format!("{} elements", c.boxes.1),
            format!(
                "4 per box (x1, y1, x2, y2): 4 x {n} scores = {}",
                n.saturating_mul(4)
            ),
        ));
    }
    if n as u64 > MAX_BOXES {
        return Err(err(
            "scores",
            format!("{n} elements"),
            format!("at most {MAX_BOXES} boxes (indices are 32-bit in the sort keys)"),
        ));
    }
    let t = c.iou_threshold;
    if t.is_nan() || t < 0.0 {
        return Err(err(
            "iou_threshold",
            t.to_string(),
            "the IoU threshold must be a number >= 0 (IoU lies in [0, 1]; 1 or more keeps every box)".into(),
        ));
    }
    if let Some(r) = c.chunk_rows
        && (r == 0 || !(r as u64).is_multiple_of(COL_BLOCK))
    {
        return Err(err(
            "chunk_rows",
            r.to_string(),
            format!("a mask chunk is a positive multiple of {COL_BLOCK} rows"),
        ));
    }
    let tile = u64::from(NmsSpec::new(NmsStage::Sort).tile());
    Ok(NmsPlan::new(n as u64, tile, c.chunk_rows.map(|r| r as u64)))
}

/// The device memory of a call, grown on demand and kept for the next one.
struct Workspace {
    keys: CudaSlice<u64>,
    mask: CudaSlice<u64>,
    removed: CudaSlice<u64>,
    keep: CudaSlice<i64>,
    /// [0]: kept count; [1]: 0xffffffff - the first bad input's index (0: none).
    status: CudaSlice<u32>,
}

/// The loaded NMS pipeline (every stage's kernel) and its workspace.
pub struct NmsKernel<'rt> {
    rt: &'rt Runtime,
    spec: NmsSpec,
    sort: CudaFunction,
    merge: CudaFunction,
    tile_merge: CudaFunction,
    mask: CudaFunction,
    walk: CudaFunction,
    stages: [NmsSpec; 5],
    /// Each stage's `params()`: what its launches push.
    params: [Vec<Param>; 5],
    chunk_rows: Option<usize>,
    workspace: Mutex<Option<Workspace>>,
}

impl Runtime {
    /// Compiles (through the cache, as one program) and loads the NMS pipeline
    /// whose reduction is the walk kernel `spec` (`NmsSpec::default()`: 256
    /// threads); the sort and mask stages are the fixed ones of
    /// [`NmsSpec::pipeline`].
    pub fn nms(&self, spec: &NmsSpec) -> Result<NmsKernel<'_>> {
        check_call(
            spec,
            &NmsCall {
                boxes: (DType::F32, 0),
                scores: (DType::F32, 0),
                iou_threshold: 0.5,
                chunk_rows: None,
            },
        )?;
        let stages = spec.pipeline();
        self.prepare(&stages)?;
        let f = |s: &NmsSpec| self.function(s);
        Ok(NmsKernel {
            rt: self,
            spec: *spec,
            sort: f(&stages[0])?,
            merge: f(&stages[1])?,
            tile_merge: f(&stages[2])?,
            mask: f(&stages[3])?,
            walk: f(&stages[4])?,
            params: stages.map(|s| s.params()),
            stages,
            chunk_rows: None,
            workspace: Mutex::new(None),
        })
    }
}

fn grid(items: u64, threads: u32) -> u32 {
    items.div_ceil(u64::from(threads)).clamp(1, i32::MAX as u64) as u32
}

impl NmsKernel<'_> {
    /// The walk spec the pipeline was built from.
    pub fn spec(&self) -> &NmsSpec {
        &self.spec
    }

    /// Every stage's spec, in launch order.
    pub fn stages(&self) -> &[NmsSpec; 5] {
        &self.stages
    }

    /// Forces the rows per mask chunk (a positive multiple of 64), e.g. to test
    /// the chunked path at small counts; `None`: from [`MASK_BUDGET_BYTES`].
    pub fn with_chunk_rows(mut self, rows: Option<usize>) -> Self {
        self.chunk_rows = rows;
        self
    }

    /// The plan of a call with `n` boxes.
    pub fn plan(&self, n: usize) -> Result<NmsPlan> {
        check_call(
            &self.spec,
            &NmsCall {
                boxes: (DType::F32, n.saturating_mul(4)),
                scores: (DType::F32, n),
                iou_threshold: 0.5,
                chunk_rows: self.chunk_rows,
            },
        )
    }

    /// Runs NMS on `stream`: `boxes` holds n boxes as (x1, y1, x2, y2) f32,
    /// `scores` n f32. Returns the kept indices (into the original arrays) in
    /// score order. Reads back only the count, the first bad input's index, and
    /// the kept indices.
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        boxes: &dyn KernelInput,
        scores: &dyn KernelInput,
        iou_threshold: f32,
    ) -> Result<Vec<i64>> {
        let plan = check_call(
            &self.spec,
            &NmsCall {
                boxes: (boxes.dtype(), boxes.len()),
                scores: (scores.dtype(), scores.len()),
                iou_threshold,
                chunk_rows: self.chunk_rows,
            },
        )?;
        if plan.n == 0 {
            return Ok(Vec::new());
        }
        let name = self.spec.name();
        let mut guard = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        let fits = guard.as_ref().is_some_and(|w| {
            w.keys.len() as u64 >= plan.padded
                && w.mask.len() as u64 >= plan.mask_words()
                && w.removed.len() as u64 >= plan.col_blocks
                && w.keep.len() as u64 >= plan.n
        });
        if !fits {
            // Drop the old workspace first: its memory may be needed.
            *guard = None;
            let alloc = |what: &str, words: u64| {
                stream
                    .alloc_zeros::<u64>(words.max(1) as usize)
                    .during(|| format!("allocating the {what} of {name} ({words} words)"))
            };
            *guard = Some(Workspace {
                keys: alloc("sort keys", plan.padded)?,
                mask: alloc("mask", plan.mask_words())?,
                removed: alloc("removed bitset", plan.col_blocks)?,
                keep: stream
                    .alloc_zeros::<i64>(plan.n as usize)
                    .during(|| format!("allocating the kept indices of {name}"))?,
                status: stream
                    .alloc_zeros::<u32>(2)
                    .during(|| format!("allocating the status of {name}"))?,
            });
        }
        let Some(ws) = guard.as_mut() else {
            unreachable!("the workspace was just allocated")
        };
        let during = |what: &str| format!("{what} of {name}");
        stream
            .memset_zeros(&mut ws.status)
            .during(|| during("zeroing the status"))?;
        {
            let mut removed = ws.removed.slice_mut(..plan.col_blocks as usize);
            stream
                .memset_zeros(&mut removed)
                .during(|| during("zeroing the removed bitset"))?;
        }
        let n = plan.n;
        let cfg = |grid: (u32, u32), threads: u32| LaunchConfig {
            grid_dim: (grid.0, grid.1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let [sort, merge, tile_merge, mask, walk] = self.stages;
        let tiles = grid(plan.padded, sort.tile());
        {
            let mut a = CheckedArgs::new(stream, &self.sort, &self.stages[0], &self.params[0]);
            a.input(scores)
                .input(boxes)
                .u64(&n)
                .ptr(&mut ws.keys)
                .ptr(&mut ws.status);
            let mut a = a.ready()?;
            // SAFETY: nms_sort(scores, boxes: f32*, n: u64, keys: u64*, status: u32*).
            // check_call proved scores holds n f32 and boxes 4n f32; keys holds
            // `padded` words, tiles x tile = padded; status 2 words.
            unsafe { a.launch(cfg((tiles, 1), sort.threads)) }
                .during(|| format!("launching {}", sort.name()))?;
        }
        for (k, steps) in &plan.merges {
            for j in steps {
                let mut a = CheckedArgs::new(stream, &self.merge, &self.stages[1], &self.params[1]);
                a.ptr(&mut ws.keys).u64(&plan.padded).u64(k).u64(j);
                let mut a = a.ready()?;
                // SAFETY: nms_merge(keys: u64*, padded, k, j: u64); threads past
                // padded / 2 pairs return; every pair index is below padded.
                unsafe {
                    a.launch(cfg(
                        (grid(plan.padded / 2, merge.threads), 1),
                        merge.threads,
                    ))
                }
                .during(|| format!("launching {}", merge.name()))?;
            }
            let mut a =
                CheckedArgs::new(stream, &self.tile_merge, &self.stages[2], &self.params[2]);
            a.ptr(&mut ws.keys).u64(k);
            let mut a = a.ready()?;
            // SAFETY: nms_tilemerge(keys: u64*, k: u64); tiles x tile = padded
            // words of keys; its tile equals the sort stage's (same threads).
            unsafe { a.launch(cfg((tiles, 1), tile_merge.threads)) }
                .during(|| format!("launching {}", tile_merge.name()))?;
        }
        let mut row0 = 0u64;
        while row0 < n {
            let rows = plan.chunk_rows.min(n - row0);
            let row_blocks = rows.div_ceil(COL_BLOCK) as u32;
            {
                let mut a = CheckedArgs::new(stream, &self.mask, &self.stages[3], &self.params[3]);
                a.input(boxes)
                    .ptr(&ws.keys)
                    .u64(&n)
                    .u64(&row0)
                    .u64(&rows)
                    .u64(&plan.col_blocks)
                    .ptr(&mut ws.mask)
                    .f32(&iou_threshold);
                let mut a = a.ready()?;
                // SAFETY: nms_mask(boxes: f32*, keys: u64*, n, row0, rows,
                // col_blocks: u64, mask: u64*, thr: f32); keys[0..n] hold
                // indices below n (sorted keys; padding sorts after them); the
                // mask holds chunk_rows x col_blocks words and rows <= chunk_rows;
                // col_blocks < 2^31 and row_blocks <= 65535 (plan).
                unsafe { a.launch(cfg((plan.col_blocks as u32, row_blocks), mask.threads)) }
                    .during(|| format!("launching {}", mask.name()))?;
            }
            let mut a = CheckedArgs::new(stream, &self.walk, &self.stages[4], &self.params[4]);
            a.ptr(&ws.mask)
                .ptr(&ws.keys)
                .u64(&n)
                .u64(&row0)
                .u64(&rows)
                .u64(&plan.col_blocks)
                .ptr(&mut ws.removed)
                .ptr(&mut ws.keep)
                .ptr(&mut ws.status);
            let mut a = a.ready()?;
            // SAFETY: nms_walk(mask, keys: u64*, n, row0, rows, col_blocks: u64,
            // removed: u64*, keep: i64*, status: u32*); one block; it reads the
            // mask words the mask launch just wrote (same stream), removed holds
            // col_blocks words, keep n (at most n boxes are kept).
            unsafe { a.launch(cfg((1, 1), walk.threads)) }
                .during(|| format!("launching {}", walk.name()))?;
            row0 += rows;
        }
        let status = stream
            .clone_dtoh(&ws.status)
            .during(|| during("reading the status"))?;
        if status[1] != 0 {
            let i = (u32::MAX - status[1]) as usize;
            return Err(self.bad_input(stream, boxes, scores, i));
        }
        let count = status[0] as usize;
        if count == 0 || count > n as usize {
            return Err(Error::Launch {
                kernel: name,
                what: "kept count",
                value: count.to_string(),
                rule: format!("between 1 and {n}: the first box is always kept (a redjit bug)"),
            });
        }
        stream
            .clone_dtoh(&ws.keep.slice(..count))
            .during(|| during("reading the kept indices"))
    }

    /// The typed error for the bad input at index `i` (the kernel found it):
    /// its score and box are read back so the message names the values.
    fn bad_input(
        &self,
        stream: &Arc<CudaStream>,
        boxes: &dyn KernelInput,
        scores: &dyn KernelInput,
        i: usize,
    ) -> Error {
        let read = |b: &dyn KernelInput, at: usize, len: usize| -> Result<Vec<f32>> {
            let mut out = vec![0f32; len];
            let src = b.address(stream) + (at * 4) as u64;
            // SAFETY: `len` f32 from inside `b` (the kernel reported index i < n;
            // boxes hold 4n f32, scores n) into a host buffer of `len` f32; the
            // stream was synchronised by the status read, so no kernel writes it.
            unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut out, src) }
                .during(|| format!("reading bad input {i} of {}", self.spec.name()))?;
            Ok(out)
        };
        let (score, b) = match (read(scores, i, 1), read(boxes, 4 * i, 4)) {
            (Ok(s), Ok(b)) => (s[0], b),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let (what, value, rule) = if score.is_nan() {
            (
                "scores",
                format!("scores[{i}] = NaN"),
                "a score must not be NaN",
            )
        } else {
            (
                "boxes",
                format!("box {i} = [{}, {}, {}, {}]", b[0], b[1], b[2], b[3]),
                "box coordinates must be finite",
            )
        };
        Error::Launch {
            kernel: self.spec.name(),
            what,
            value,
            rule: format!("{rule} (the first bad input)"),
        }
    }

    /// The runtime the pipeline was loaded on.
    pub fn runtime(&self) -> &Runtime {
        self.rt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: usize, thr: f32) -> NmsCall {
        NmsCall {
            boxes: (DType::F32, 4 * n),
            scores: (DType::F32, n),
            iou_threshold: thr,
            chunk_rows: None,
        }
    }

    #[test]
    fn plans_cover_every_count() {
        let spec = NmsSpec::default();
        for n in [
            0usize,
            1,
            2,
            63,
            64,
            65,
            4096,
            4097,
            20_000,
            100_003,
            1 << 20,
        ] {
            let p = check_call(&spec, &call(n, 0.5)).unwrap();
            assert!(p.padded >= n as u64 && p.padded.is_power_of_two(), "{n}");
            assert_eq!(p.padded % p.tile, 0, "{n}");
            assert_eq!(p.col_blocks, (n as u64).div_ceil(64));
            assert!(p.chunk_rows.is_multiple_of(64) && p.chunk_rows >= 64, "{n}");
            assert!(
                p.mask_words() * 8 <= MASK_BUDGET_BYTES.max(64 * p.col_blocks * 8),
                "{n}"
            );
            // Every bitonic stage past the tile, each with its global steps.
            let ks: Vec<u64> = p.merges.iter().map(|m| m.0).collect();
            let mut want = Vec::new();
            let mut k = 2 * p.tile;
            while k <= p.padded {
                want.push(k);
                k *= 2;
            }
            assert_eq!(ks, want, "{n}");
            for (k, steps) in &p.merges {
                assert_eq!(steps.len() as u32, (k / p.tile).trailing_zeros(), "{n}");
            }
        }
        let p = check_call(&spec, &call(20_000, 0.5)).unwrap();
        assert_eq!((p.padded, p.col_blocks, p.chunk_rows), (32768, 313, 20_032));
        let p = check_call(&spec, &call(100_003, 0.5)).unwrap();
        assert_eq!(p.chunk_rows, 21_440);
        let p = check_call(&spec, &call(1 << 20, 0.5)).unwrap();
        assert_eq!(p.chunk_rows, 2048);
    }

    #[test]
    fn bad_calls_name_the_value_and_the_rule() {
        let spec = NmsSpec::default();
        let cases: Vec<(NmsCall, &str)> = vec![
            (call(10, f32::NAN), "iou_threshold = NaN"),
            (call(10, -0.5), "iou_threshold = -0.5"),
            (
                NmsCall {
                    boxes: (DType::F32, 39),
                    ..call(10, 0.5)
                },
                "boxes = 39 elements: 4 per box",
            ),
            (
                NmsCall {
                    scores: (DType::BF16, 10),
                    ..call(10, 0.5)
                },
                "scores = bf16",
            ),
            (
                NmsCall {
                    chunk_rows: Some(100),
                    ..call(10, 0.5)
                },
                "chunk_rows = 100",
            ),
        ];
        for (c, want) in cases {
            let e = check_call(&spec, &c)
                .map(|p| format!("{want}: passed with {p:?}"))
                .expect_err(want)
                .to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        for thr in [0.0, 0.5, 1.0, 2.0, f32::INFINITY] {
            check_call(&spec, &call(10, thr)).unwrap();
        }
        let e = check_call(&NmsSpec::new(NmsStage::Mask), &call(10, 0.5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("walk stage"), "{e}");
    }
}
