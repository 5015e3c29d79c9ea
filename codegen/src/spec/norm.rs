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

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::registry::{Arch, DType, Family, NormLayout, NormOp, SoftmaxAlgo};
use crate::render;
use crate::spec::KernelSpec;

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

/// Blocks per SM for the launch bound of the whole-pack kernels, by (op, layout,
/// f32 in and out, a 16-bit type in and out, different dtypes): for each, the
/// most of 1, 2, 3, 4, 6, 8 at which ptxas 13.0 compiled every dtype pair of the
/// group for sm_90 without
/// a stack frame or a spill (`scripts/norm-occupancy.py` swept them; warp layouts
/// are named with 32 lanes and stand for every group size without its own entry).
/// tests/norm_compile_grid checks that no kernel of the ladder or the variants
/// spills with these: the entries for smaller groups, and layer norm's b256x8 and
/// b512x8, are the bounds it found spilling lowered to the most that compiled
/// clean with the bound in the source (`_o<n>`); the sweep rewrites the bound in
/// NVRTC's PTX, which NVRTC itself compiles a little differently. A prefetching
/// kernel (`_p`) takes its layout's entry unless it has its own: those are the
/// four that spilled 8 bytes at their layout's bound, lowered the same way.
/// An exact kernel (`_x`) takes its own entry where it has one: 16-bit RMS
/// norm's b512x8_x compiles clean at 2 (64 registers) where its ragged form
/// spills 12 bytes.
/// The 16-bit split s512x4 layer norm (here) and log-softmax general twin
/// (`OCCUPANCY_GENERAL`) went from 3 to 2 when the split rows' sync moved into
/// warp 0 (2026-11-25): at 3 they spilled 4 and 8 bytes. The split cohorts'
/// staged kernels (`s512x8_p`) spilled 4-16 bytes at their layout's bound but
/// for the online softmax; in the deferred form (2026-11-25, eighth session)
/// 16-bit RMS norm s512x8_p spilled 80 bytes at 2, and the log-softmax entry
/// went: at 2 blocks an SM (its layout's) it ran at 80.7-81.5 % of copy against
/// 65.9-66.2 % at 1 (bf16, 64x1048576, run10). A bound is also capped by the SM's shared
/// memory over the staged rows (`min_blocks`). f32 layer norm's s512x4_p
/// spilled 4 bytes at 2.
/// 16-bit layer norm w8x4 takes 5, a bound the sweep did not try: it compiles
/// clean at 48 registers (63 at 4), and at 262144x128 bf16 ran at 82.9-88.7 %
/// of copy against 79.5-85.8 % at 4, ahead in each of nine alternating rounds
/// of three calls (H100, 2026-11-25, ninth session, runs 2, 3 and 10; Nsight
/// Compute: achieved occupancy 52.1 % against 42.1 %). Bound 5 lost for 16-bit layer norm with
/// the residual and for the f32 residual norms, and tied for 16-bit RMS norm.
/// Layer norm w16x2 between two types takes 5 (its kernels spilled 4 bytes
/// at 6), the online softmax and log-softmax s512x8_p between them 1 (4
/// bytes at 2; `MEASURED_LAYOUTS` has what that cost), softmax s256x8_p 3 and
/// log-softmax s512x4_p 2 (measured so; at their layouts' 4 and 3 the
/// softmax spilled 4 bytes and the log-softmax's staging twin 60).
const OCCUPANCY: &[(&str, &str, u32, u32, u32)] = &[
    ("layernorm", "b256x2", 6, 8, 6),
    ("layernorm", "b256x4", 4, 6, 3),
    ("layernorm", "b256x8", 3, 3, 2),
    ("layernorm", "b512x4", 2, 3, 1),
    ("layernorm", "b512x8", 1, 2, 1),
    ("layernorm", "b512x8_p", 1, 1, 1),
    ("layernorm", "l512x4", 2, 2, 2),
    ("layernorm", "s256x8", 4, 3, 2),
    ("layernorm", "s512x4", 2, 2, 1),
    ("layernorm", "s512x8", 2, 1, 1),
    ("layernorm", "s512x4_p", 1, 1, 1),
    ("layernorm", "s512x8_p", 1, 1, 1),
    ("layernorm", "w16x2", 4, 6, 5),
    ("layernorm", "w32x1", 6, 6, 6),
    ("layernorm", "w32x2", 4, 6, 6),
    ("layernorm", "w32x4", 4, 4, 4),
    ("layernorm", "w32x8", 3, 3, 2),
    ("layernorm", "w4x2", 4, 6, 6),
    ("layernorm", "w8x2", 4, 6, 6),
    ("layernorm", "w8x4", 4, 5, 2),
    ("layernorm_res", "b256x2", 6, 6, 6),
    ("layernorm_res", "b256x4", 4, 4, 4),
    ("layernorm_res", "b256x8", 4, 4, 2),
    ("layernorm_res", "b512x4", 2, 2, 3),
    ("layernorm_res", "b512x8", 2, 2, 1),
    ("layernorm_res", "b256x8_p", 3, 3, 2),
    ("layernorm_res", "b512x8_p", 1, 1, 1),
    ("layernorm_res", "l512x4", 2, 2, 2),
    ("layernorm_res", "s256x8", 2, 4, 4),
    ("layernorm_res", "s512x4", 3, 3, 2),
    ("layernorm_res", "s512x8", 1, 2, 2),
    ("layernorm_res", "s512x8_p", 1, 1, 1),
    ("layernorm_res", "w2x1", 4, 4, 6),
    ("layernorm_res", "w32x1", 4, 6, 6),
    ("layernorm_res", "w32x2", 4, 6, 6),
    ("layernorm_res", "w32x4", 4, 4, 4),
    ("layernorm_res", "w32x8", 2, 3, 3),
    ("layernorm_res", "w4x1", 4, 4, 6),
    ("layernorm_res", "w8x1", 4, 4, 6),
    ("logsoftmax_online", "b256x2", 8, 8, 8),
    ("logsoftmax_online", "b256x4", 8, 8, 8),
    ("logsoftmax_online", "b256x8", 4, 4, 4),
    ("logsoftmax_online", "b512x4", 4, 4, 4),
    ("logsoftmax_online", "b512x8", 2, 2, 2),
    ("logsoftmax_online", "l512x4", 2, 2, 2),
    ("logsoftmax_online", "s256x8", 4, 4, 4),
    ("logsoftmax_online", "s512x4", 3, 3, 3),
    ("logsoftmax_online", "s512x4_p", 3, 3, 2),
    ("logsoftmax_online", "s512x8", 2, 2, 2),
    ("logsoftmax_online", "s512x8_p", 2, 2, 1),
    ("logsoftmax_online", "w32x1", 8, 8, 8),
    ("logsoftmax_online", "w32x2", 8, 8, 8),
    ("logsoftmax_online", "w32x4", 6, 6, 6),
    ("logsoftmax_online", "w32x8", 4, 4, 4),
    ("logsoftmax_online", "w8x4", 6, 6, 4),
    ("rmsnorm", "b256x2", 8, 8, 8),
    ("rmsnorm", "b256x4", 4, 4, 4),
    ("rmsnorm", "b256x8", 4, 3, 2),
    ("rmsnorm", "b512x4", 2, 2, 2),
    ("rmsnorm", "b512x8", 2, 1, 1),
    ("rmsnorm", "b512x8_x", 2, 2, 1),
    ("rmsnorm", "l512x4", 2, 2, 2),
    ("rmsnorm", "s256x8", 4, 4, 3),
    ("rmsnorm", "s512x4", 2, 2, 2),
    ("rmsnorm", "s512x8", 2, 2, 1),
    ("rmsnorm", "s512x8_p", 1, 1, 1),
    ("rmsnorm", "w16x2", 6, 6, 8),
    ("rmsnorm", "w32x1", 8, 8, 8),
    ("rmsnorm", "w32x2", 8, 8, 8),
    ("rmsnorm", "w32x4", 4, 4, 4),
    ("rmsnorm", "w32x8", 4, 4, 2),
    ("rmsnorm", "w4x2", 6, 6, 8),
    ("rmsnorm", "w8x2", 6, 6, 8),
    ("rmsnorm_res", "b256x2", 8, 8, 8),
    ("rmsnorm_res", "b256x4", 6, 8, 6),
    ("rmsnorm_res", "b256x8", 4, 3, 4),
    ("rmsnorm_res", "b256x8_p", 2, 2, 2),
    ("rmsnorm_res", "b512x4", 3, 4, 3),
    ("rmsnorm_res", "b512x8", 2, 1, 1),
    ("rmsnorm_res", "l512x4", 2, 2, 2),
    ("rmsnorm_res", "s256x8", 2, 4, 4),
    ("rmsnorm_res", "s512x4", 3, 3, 3),
    ("rmsnorm_res", "s512x8", 1, 2, 1),
    ("rmsnorm_res", "s512x8_p", 1, 1, 1),
    ("rmsnorm_res", "w16x2", 6, 6, 6),
    ("rmsnorm_res", "w32x1", 6, 6, 6),
    ("rmsnorm_res", "w32x2", 6, 8, 6),
    ("rmsnorm_res", "w32x4", 4, 6, 4),
    ("rmsnorm_res", "w32x8", 4, 4, 4),
    ("rmsnorm_res", "w4x2", 6, 6, 6),
    ("rmsnorm_res", "w4x4", 4, 4, 4),
    ("rmsnorm_res", "w8x2", 6, 6, 6),
    ("softmax_online", "b256x2", 8, 8, 8),
    ("softmax_online", "b256x4", 8, 8, 8),
    ("softmax_online", "b256x8", 4, 4, 4),
    ("softmax_online", "b512x4", 4, 4, 4),
    ("softmax_online", "b512x8", 2, 2, 2),
    ("softmax_online", "l512x4", 2, 2, 2),
    ("softmax_online", "s256x8", 4, 4, 4),
    ("softmax_online", "s256x8_p", 4, 4, 3),
    ("softmax_online", "s512x4", 3, 3, 3),
    ("softmax_online", "s512x8", 2, 2, 2),
    ("softmax_online", "s512x8_p", 2, 2, 1),
    ("softmax_online", "w32x1", 8, 8, 8),
    ("softmax_online", "w32x2", 8, 8, 8),
    ("softmax_online", "w32x4", 6, 6, 6),
    ("softmax_online", "w32x8", 4, 4, 4),
    ("softmax_safe", "b256x2", 8, 8, 8),
    ("softmax_safe", "b256x4", 8, 8, 8),
    ("softmax_safe", "b256x8", 4, 4, 4),
    ("softmax_safe", "b512x4", 4, 4, 4),
    ("softmax_safe", "b512x8", 2, 2, 2),
    ("softmax_safe", "w32x1", 8, 8, 8),
    ("softmax_safe", "w32x2", 8, 8, 8),
    ("softmax_safe", "w32x4", 6, 6, 6),
    ("softmax_safe", "w32x8", 4, 4, 4),
];

/// The same for the general twins (`_g`, `norm-occupancy.py --general`), whose
/// element path takes more registers. Layer norm at b256x4 stays at 1: at 2 the
/// f32 kernel fell from 94 % to 71 % of the copy bandwidth at 32768x4096 on the
/// H100 (BENCHMARKS.md, third session, run4, when it was the only kernel). Layer
/// norm with residual at b256x8, same dtypes, went from 3 to 2 when Chan's merge
/// took one reciprocal for three divisions: at 3, ptxas spilled 4 words.
const OCCUPANCY_GENERAL: &[(&str, &str, u32, u32, u32)] = &[
    ("layernorm", "b256x2", 4, 4, 2),
    ("layernorm", "b256x4", 1, 1, 1),
    ("layernorm", "b256x8", 2, 2, 1),
    ("layernorm", "b512x4", 1, 1, 1),
    ("layernorm", "b512x8", 1, 1, 1),
    ("layernorm", "l512x4", 2, 2, 2),
    ("layernorm", "s256x8", 2, 2, 1),
    ("layernorm", "s512x4", 2, 2, 1),
    ("layernorm", "s512x8", 1, 1, 1),
    ("layernorm", "w32x1", 4, 4, 4),
    ("layernorm", "w32x2", 4, 4, 3),
    ("layernorm", "w32x4", 3, 3, 2),
    ("layernorm", "w32x8", 2, 2, 1),
    ("layernorm_res", "b256x2", 4, 4, 4),
    ("layernorm_res", "b256x4", 4, 4, 2),
    ("layernorm_res", "b256x8", 2, 2, 3),
    ("layernorm_res", "b512x4", 2, 2, 1),
    ("layernorm_res", "b512x8", 1, 1, 1),
    ("layernorm_res", "l512x4", 2, 2, 2),
    ("layernorm_res", "s512x8", 1, 1, 1),
    ("layernorm_res", "w32x1", 4, 4, 4),
    ("layernorm_res", "w32x2", 4, 4, 4),
    ("layernorm_res", "w32x4", 4, 4, 2),
    ("layernorm_res", "w32x8", 2, 2, 1),
    ("logsoftmax_online", "b256x2", 8, 8, 8),
    ("logsoftmax_online", "b256x4", 6, 6, 6),
    ("logsoftmax_online", "b256x8", 4, 4, 4),
    ("logsoftmax_online", "b512x4", 3, 3, 3),
    ("logsoftmax_online", "b512x8", 2, 2, 2),
    ("logsoftmax_online", "l512x4", 2, 2, 2),
    ("logsoftmax_online", "s256x8", 4, 4, 4),
    ("logsoftmax_online", "s512x4", 2, 2, 3),
    ("logsoftmax_online", "s512x8", 2, 2, 2),
    ("logsoftmax_online", "w32x1", 8, 8, 8),
    ("logsoftmax_online", "w32x2", 6, 6, 6),
    ("logsoftmax_online", "w32x4", 4, 4, 4),
    ("logsoftmax_online", "w32x8", 2, 2, 3),
    ("rmsnorm", "b256x2", 8, 8, 4),
    ("rmsnorm", "b256x4", 4, 4, 2),
    ("rmsnorm", "b256x8", 3, 3, 1),
    ("rmsnorm", "b512x4", 3, 3, 1),
    ("rmsnorm", "b512x8", 1, 1, 1),
    ("rmsnorm", "l512x4", 2, 2, 2),
    ("rmsnorm", "s512x8", 1, 1, 2),
    ("rmsnorm", "w32x1", 8, 8, 6),
    ("rmsnorm", "w32x2", 6, 6, 4),
    ("rmsnorm", "w32x4", 4, 4, 3),
    ("rmsnorm", "w32x8", 2, 2, 1),
    ("rmsnorm_res", "b256x2", 6, 6, 8),
    ("rmsnorm_res", "b256x4", 4, 4, 4),
    ("rmsnorm_res", "b256x8", 2, 2, 3),
    ("rmsnorm_res", "b512x4", 2, 2, 3),
    ("rmsnorm_res", "b512x8", 1, 1, 1),
    ("rmsnorm_res", "l512x4", 2, 2, 2),
    ("rmsnorm_res", "s512x8", 1, 1, 1),
    ("rmsnorm_res", "w32x1", 6, 6, 6),
    ("rmsnorm_res", "w32x2", 6, 6, 6),
    ("rmsnorm_res", "w32x4", 4, 4, 4),
    ("rmsnorm_res", "w32x8", 2, 2, 2),
    ("softmax_online", "b256x2", 8, 8, 8),
    ("softmax_online", "b256x4", 6, 8, 6),
    ("softmax_online", "b256x8", 3, 4, 4),
    ("softmax_online", "b512x4", 3, 4, 3),
    ("softmax_online", "b512x8", 1, 2, 2),
    ("softmax_online", "l512x4", 2, 2, 2),
    ("softmax_online", "s256x8", 4, 4, 4),
    ("softmax_online", "s512x4", 2, 2, 3),
    ("softmax_online", "s512x8", 2, 2, 2),
    ("softmax_online", "w32x1", 8, 8, 8),
    ("softmax_online", "w32x2", 6, 6, 6),
    ("softmax_online", "w32x4", 4, 4, 4),
    ("softmax_online", "w32x8", 2, 2, 3),
    ("softmax_safe", "b256x2", 8, 8, 8),
    ("softmax_safe", "b256x4", 8, 8, 6),
    ("softmax_safe", "b256x8", 4, 4, 4),
    ("softmax_safe", "b512x4", 4, 4, 4),
    ("softmax_safe", "b512x8", 2, 2, 2),
    ("softmax_safe", "w32x1", 8, 8, 8),
    ("softmax_safe", "w32x2", 6, 6, 6),
    ("softmax_safe", "w32x4", 4, 4, 4),
    ("softmax_safe", "w32x8", 2, 3, 3),
];

/// Packs of the weight and bias a deferred split kernel holds in registers
/// (`NormSpec::held_cols`) where all of its packs did not fit: (op, residual,
/// input, packs a thread, packs held). ptxas 13.0 at the kernels' bound of 1:
/// f32 s512x8_p_x spilled 4 bytes holding 8 packs, none at 7; f16 s512x16_p_x
/// spilled 48-544 bytes holding 8-16, none at 4 (bf16 held all 16 clean).
const HELD_CAPS: &[(NormOp, bool, DType, u32, u32)] = &[
    (NormOp::LayerNorm, false, DType::F32, 8, 7),
    (NormOp::LayerNorm, false, DType::F16, 16, 4),
];

/// The element types of a row, as the launch-bound tables and the measured
/// layouts group them (the discriminant is the tables' column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowTypes {
    /// f32 in and out.
    F32 = 0,
    /// One 16-bit type in and out.
    Sixteen = 1,
    /// Different types in and out.
    Mixed = 2,
}

/// The element types a measured layout is for. Rows between f32 and a
/// 16-bit type are apart by direction: a staged row holds the input, so the
/// two take different layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LayoutTypes {
    /// f32 in and out.
    F32,
    /// One 16-bit type in and out.
    Sixteen,
    /// A 16-bit type in, f32 out.
    Widening,
    /// f32 in, a 16-bit type out.
    Narrowing,
    /// Two 16-bit types (no measured layout).
    Other,
}

/// A layout the default ladder's rule does not give, chosen by measurement.
struct MeasuredLayout {
    op: NormOp,
    /// Softmax ops: the algorithm it was measured for (`None`: any).
    algo: Option<SoftmaxAlgo>,
    residual: bool,
    types: LayoutTypes,
    cols: std::ops::RangeInclusive<u64>,
    layout: NormLayout,
    lanes: u32,
    packs: u32,
    form: Form,
}

impl MeasuredLayout {
    /// Whether the entry was measured for `spec`'s op, algorithm, residual and
    /// row types (its columns, layout and form aside).
    fn serves(&self, spec: &NormSpec) -> bool {
        self.op == spec.op
            && self.algo.is_none_or(|a| Some(a) == spec.algo)
            && self.residual == spec.residual
            && self.types == spec.layout_types()
    }

    /// Whether it takes rows of `cols`: in its range, and for an exact-only
    /// form a whole number of its chunks.
    fn takes(&self, cols: u64) -> bool {
        let chunk = u64::from(self.lanes * self.packs) * 4;
        self.cols.contains(&cols)
            && (self.form != Form::PrefetchExactOnly || cols.is_multiple_of(chunk))
    }
}

/// Which form of a layout's kernel a measured entry takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The kernel as the ladder gives it.
    Plain,
    /// The prefetching block (`_p`).
    Prefetch,
    /// Row loads that allocate no L1 line (`_n`).
    NoL1,
    /// The exact-length kernel where the row fills the layout (`_x`).
    Exact,
    /// The deferred split kernel's exact form (`_p_x`) for rows of a whole
    /// number of its chunks; other rows take `_p`.
    PrefetchExact,
    /// `_p_x` for rows of a whole number of its chunks; other rows go on down
    /// the table (the layout's ragged `_p` spills).
    PrefetchExactOnly,
    /// The row's chunks in one cluster, staged a row ahead (`_c<n>_p`, n the
    /// row's chunks; `NormSpec::cluster`).
    Cluster,
}

impl Form {
    /// The deferred or prefetching kernel (`_p`).
    fn prefetches(self) -> bool {
        matches!(
            self,
            Form::Prefetch | Form::PrefetchExact | Form::PrefetchExactOnly | Form::Cluster
        )
    }

    /// The exact-length kernel (`_x`) where the row fills the layout.
    fn exact(self) -> bool {
        matches!(
            self,
            Form::Exact | Form::PrefetchExact | Form::PrefetchExactOnly
        )
    }
}

/// One row of `MEASURED_LAYOUTS`.
#[allow(clippy::too_many_arguments)]
const fn measured(
    op: NormOp,
    algo: Option<SoftmaxAlgo>,
    residual: bool,
    types: LayoutTypes,
    cols: std::ops::RangeInclusive<u64>,
    layout: NormLayout,
    lanes: u32,
    packs: u32,
    form: Form,
) -> MeasuredLayout {
    MeasuredLayout {
        op,
        algo,
        residual,
        types,
        cols,
        layout,
        lanes,
        packs,
        form,
    }
}

/// Layouts that beat the ladder's in three alternating rounds of the same call,
/// each alone in its process (H100, 2026-11-25, BENCHMARKS.md "the ladder's
/// exceptions"; a `--variants` sweep ranked them first, but its absolute figures
/// drifted by up to 25 points between calls, so only the alternating rounds
/// decide): 16-bit RMS norm of 2049..4096 columns in 128-thread blocks of 8 packs
/// (95.8-97.4 % of copy against 93.1-94.1 % for b256x4 at 32768x4096); f32
/// layer norm of 65..128 columns in 16 lanes of 2 packs (96.2-96.8 % against
/// 94.0-95.4 % for w8x4 at 262144x128); 16-bit RMS norm with the residual add
/// of 65..128 columns in 16 lanes of 4 packs (94.6-95.1 % against 92.9-94.3 %).
/// Split rows (past 32768 columns) of 16 packs a thread for 16-bit layer norm,
/// and f32 layer norm and RMS norm with the residual add, at 64x1048576 (three
/// rounds, each kernel alone in its process, BENCHMARKS.md fourth session of
/// 2026-11-25, run4): 46.6-47.7 % of copy against 31.9-32.2 % for s512x8,
/// 70.6-70.8 % against 60.3-61.1 %, 76.7-77.4 % against 69.1-70.1 %. Their
/// general twin stays s512x8_g.
/// Fifth session of 2026-11-25 (three rounds, each kernel alone in its process,
/// BENCHMARKS.md): the exact-length block kernel (`_x`) for 16-bit rows at
/// 8192x32768: online softmax 96.8-97.5 % of copy against 89.0-89.9 % for the
/// prefetching b512x16_p (run10), which had beaten b512x16's 85.4-85.8 % (run2);
/// online log-softmax 96.0-96.4 % against 89.4-90.8 %; layer norm 94.7-95.7 %
/// against 89.6-90.8 %; safe softmax 95.5-96.0 % against 90.0-90.5 % for b512x16,
/// RMS norm 97.6-97.9 % against 88.1-96.8 %, RMS norm + residual 98.6-99.4 %
/// against 98.5-98.7 %; at 8192x16384 online softmax b512x8_x 96.5-97.7 %
/// against 96.0-97.1 %; at 32768x4096 online softmax b256x4_x 96.8-97.4 %
/// against 95.8-97.2 % and f32 online log-softmax 99.6-99.9 % against 99.5-99.6 %
/// (run9); at 8192x16384 16-bit layer norm b512x8_x 95.9-96.2 % against
/// 87.8-89.0 % for b512x8_p (run14), which had beaten b512x8's 85.0-85.8 %
/// (run6); at 8192x32768 f32 RMS norm 98.5-98.8 % against 92.8-95.0 % (run15)
/// and f32 RMS norm + residual 98.5-98.6 % against 92.8-92.9 % (run14). It lost
/// elsewhere, by up to 30 points where it took more registers (16-bit layer
/// norm b256x4_x at 32768x4096: 74.6-75.6 % against 95.0-96.6 %), and f32 layer
/// norms spill in it. The prefetching block (`_p`) is no default: wherever it
/// had won, the exact kernel beat it; it lost for every f32 row op and for RMS
/// norm (16-bit RMS norm at 8192x32768: 86.9-88.0 % against 95.7-96.8 %, run2).
/// Row loads that allocate no L1 line (`_n`) at 8192x32768 (run3): layer norm with the residual add, bf16 97.0-97.5 %
/// against 81.1-81.7 % and f32 96.6-97.4 % against 87.0-92.0 %, and f32 layer norm
/// 92.0-93.1 % against 83.9-84.4 %; elsewhere they lost, by up to 12 points
/// (16-bit layer norm at 32768x4096: 81.9-94.1 % against 94.0-96.9 %; at
/// 8192x16384 76.8-77.4 % against 84.6-85.3 %).
/// Seventh session of 2026-11-25 (run5, three rounds, each kernel alone in its
/// process): split cohorts staging their next row (`s512x16_p`) for 16-bit
/// softmax and log-softmax at 64x1048576: bf16 softmax 64.9-65.4 % of copy
/// against 55.0-55.8 % for s512x8, log-softmax 64.7-65.0 % against 55.3-55.6 %,
/// f16 softmax 64.3 and 65.4 % against 55.3-55.8 % in two rounds and 52.9 %
/// in the third. They lost or tied elsewhere: 16-bit RMS norm 65.0-65.8 %
/// against 66.0-66.7 %, f32 softmax s512x8_p 74.3-75.1 % against 74.1-75.2 %,
/// the 16-bit residual norms at their bound of 1 (s512x8_p) 60-67 % against
/// 77-84 %.
/// Eighth session of 2026-11-25 (run17, three rounds, each kernel alone in its
/// process, 64x1048576): deferred split rows (`_p`: a block publishes its state
/// of a row, then finishes the row before) against the defaults before them.
/// bf16 softmax s512x8_p 76.5-77.4 % of copy against 65.1-65.2 % (s512x16_p),
/// log-softmax s512x8_p 82.3-83.3 % against 64.2-64.8 %, layer norm s512x8_p
/// 61.7-62.9 % against 50.7-51.4 % (s512x16), RMS norm s512x8_p 79.9-81.2 %
/// against 63.9-66.3 % (s512x8), RMS norm + residual s512x8_p 90.2-90.8 %
/// against 82.6-83.6 %; f32 softmax s512x8_p 86.4-86.8 % against 74.6-75.7 %,
/// log-softmax 87.7-88.1 % against 73.5-74.3 %, layer norm + residual s512x4_p
/// 81.8-82.2 % against 74.5-75.0 % (s512x16), RMS norm s512x8_p 82.4-83.3 %
/// against 78.9-80.1 %, RMS norm + residual s512x4_p 80.1-81.0 % against
/// 78.0-79.4 % (s512x16). They lost for 16-bit layer norm with the residual
/// (s512x8_p 73.2-74.6 % against 76.5-77.2 % for s512x8) and f32 layer norm
/// (s512x4_p 53.2-58.4 % against 73.3-74.0 % for s512x8; run13).
/// Ninth session of 2026-11-25 (runs 5 and 6, three rounds each, each kernel
/// alone in its process, 64x1048576): f32 layer norm s512x4_p, which since
/// run19 of the eighth session stages its columns of the weight and bias,
/// 75.5-76.4 % of copy against 72.8-74.2 % for s512x8 (run6) and 75.2-76.0 %
/// against 72.5-73.3 % (run5, a variant finishing two rows behind).
/// Tenth session of 2026-11-25 (64x1048576, two rounds, BENCHMARKS.md): the
/// deferred kernels stay. Two merging warps that take the row's states from
/// the row threads through named barriers (run2) ran 0.8-21.8 points slower
/// for ten of the eleven (f32 layer norm 54.3-55.2 % against 76.1-76.3 %) and
/// tied for 16-bit layer norm. A split form that reads each chunk twice, the
/// second time two rows later, meant to hit L2 (run5-run8), was DRAM-bound at
/// three passes: the second read missed (1.50x the DRAM bytes), 38-71 % of copy.
/// Twelfth session of 2026-11-25 (64x1048576, each kernel alone in its process,
/// after the split rows' exchange took two-pass totals): 16-bit RMS norm
/// s512x16_p 82.3-82.8 % of copy against 80.0-81.6 % for s512x8_p (run5) and
/// 82.6-83.3 % against 79.5-81.3 % (run8; f16 82.1-82.7 % against 79.5-80.0 %),
/// three rounds each, where the seventh session's s512x16_p had lost to s512x8.
/// Fourteenth session of 2026-11-25 (run9, three rounds, 64x1048576): 16-bit
/// layer norm + residual takes the deferred kernel once it exchanges f64 sums
/// (`NormSpec::f64_sums`): bf16 s512x8_p 82.8-84.0 % of copy against
/// 78.1-79.7 % for s512x8 and 75.1-76.1 % for s512x8_p with Chan's merge; f16
/// 83.7-85.0 % against 78.1-79.2 % and 77.9-79.1 %.
/// Fifteenth session (2026-11-26, run2, three rounds, each kernel alone in its
/// process, 64x1048576): the deferred kernels' exact form (`_p_x`, no bounds
/// test a pack where the row is a whole number of chunks), % of copy against
/// `_p`: bf16 softmax 86.4-86.8 against 82.2-83.1, log-softmax 86.4-89.5
/// against 85.9-86.6, layer norm 77.5-78.1 against 76.7-76.9, layer norm +
/// residual 87.4-88.5 against 83.8-84.0, RMS norm s512x16 88.3-89.1 against
/// 84.7-85.2, RMS norm + residual 92.7-93.1 against 90.5-90.8; f32 softmax
/// 89.8-90.0 against 87.8-88.3, log-softmax 90.2-90.7 against 89.2-89.7, layer
/// norm + residual 83.9-84.3 against 83.1-83.8. f32 layer norm (77.1-78.1
/// against 77.0-77.5) and RMS norm + residual (92.3-92.5 against 92.3-92.7)
/// tied and f32 RMS norm lost (85.9-87.0 against 87.1-87.4): they keep `_p`.
/// Twentieth session (2026-11-26, H100, three rounds, each kernel alone in its
/// process, the GPU held while each launch is issued so the events time the
/// GPU alone; spreads within 0.5 %), 262144x128, GB/s: a warp of one pack a
/// lane for the other f32 row ops, layer norm + residual 2972-2973 against
/// 2912-2914 for w8x4, RMS norm 2888-2896 against 2861-2865, RMS norm +
/// residual 2958-2969 against 2912-2914, online softmax 2886-2899 against
/// 2868-2873, safe softmax 2901-2909 against 2884-2886, log-softmax 2905-2918
/// against 2868-2878 (w16x4 within 0.8 % of it in each); bf16 layer norm +
/// residual in 16 lanes of 2 packs, 2866-2869 against 2837-2841.
/// Twenty-first session (2026-11-26, H100, two rounds, the GPU alone), softmax
/// and log-softmax rows of 32769..=65536, % of the copy of n f32, 4096 rows
/// of 36864 / 40000 / 50256 / 57344 (57344: a whole number of 8192-element
/// chunks) and, where s512x8's chunks divide the row, 49152 / 65536:
/// - bf16 softmax s256x8_p 79.7-79.9 / 83.1-83.4 / 75.7 / 86.9-87.0 (`_p_x`)
///   against s512x8_p 70.8-70.9 / 77.0-77.4 / 71.9 / 82.0-82.1; at 49152 and
///   65536 s512x8_p_x 91.3-91.7 and 92.5-92.6 against 86.6-87.0 and 87.8-87.9;
/// - bf16 log-softmax s512x4 87.6-87.7 / 90.4-90.5 / 86.2-86.4 / 90.8-91.1
///   against s512x8 84.3-84.5 / 87.7-88.0 / 85.5 / 89.2-89.7; at 49152 and
///   65536 s512x8_p_x 92.1-92.7 and 93.4-93.5 against 90.7-91.3 and 91.7-91.8;
/// - f32 softmax s512x4 88.4 / 91.5 / 85.9 / 91.3, 91.6-91.7 and 92.4-92.5
///   against s512x8 79.7-79.9 / 85.7 / 79.6-79.7 / 88.3-88.5, 90.9 and
///   91.7-91.8; f32 log-softmax s512x4 88.6-88.7 / 91.6-91.8 / 85.6-85.8 /
///   91.3, 92.0-92.1 and 92.3-92.4 against 86.8-87.2 / 88.5-89.1 / 84.3-84.9 /
///   88.8-88.9, 91.3-91.6 and 92.3.
///
/// Past 65536 (98304, 128256, 131072) s512x8 led for 16-bit rows and was
/// within 0.6 points of s512x4 for f32 rows.
/// Twenty-third session (2026-11-27, H100, three rounds, one process a shape
/// and round, the GPU alone): bf16 RMS norm at 8192x16384, the exact block of
/// 512 x 8 at 2 blocks an SM (its own `OCCUPANCY` entry, `b512x8_x`: 64
/// registers, no spill) 99.1-99.3 % of copy against 97.7-97.9 % for b256x16;
/// at 1 block an SM b512x8_x 84.8-85.0 %, b512x8 79.1-81.2 %. Its ragged form
/// spills at 2 (12 bytes), so other rows keep b256x16.
/// Twenty-fourth session (2026-11-27, H100, two rounds, one process a shape
/// and round, the GPU alone): rows between f32 and bf16, which took the plain
/// split s512x8 past 32768 columns (and layer norm past 8192), % of copy,
/// 4096x50256 / 64x1048576 against s512x8:
/// - bf16 -> f32 softmax s512x8_p 87.1-87.2 / 90.6-91.3 against 74.2-74.4 /
///   70.6-70.7, log-softmax s512x8_p 88.8-89.2 / 92.0-92.4 against 77.2 /
///   70.4-70.6, where they spill 4 bytes at their 2 blocks an SM; at 1
///   (`OCCUPANCY`'s s512x8_p entries, clean) softmax 71.2 / 86.2-86.3 and
///   log-softmax 84.7-84.8 / 89.7-89.8; past 65536 they take it, and up to
///   65536 softmax s256x8_p at 3 blocks an SM and log-softmax s512x4_p at 2
///   (both clean there, with their staging twins; run22, two rounds, 4096
///   rows of 40000 / 50256 / 57344): softmax 90.3-90.5 / 88.0-88.1 /
///   90.7-90.9 against 77.0-77.3 / 74.2-74.6 / 78.0-78.1 for s512x8,
///   log-softmax 89.5-90.2 / 88.0-88.2 / 90.0 against 86.9-87.0 / 84.7-84.9 /
///   89.9-90.0 for s512x8_p at 1 (s256x8 at 3 ran 0.1-1.2 points faster, but
///   its staging twin spills 20 bytes);
///   layer norm s256x8_p 83.6 (s512x8_p 74.6-74.7) / s512x8_p
///   88.3-88.7 against 44.0 / 45.9, and s512x8_p 86.3-86.7 against 52.6-52.8
///   at 8192x16384, 86.9-87.1 against 52.4-52.5 at 8192x32768; RMS norm
///   s512x4_p 88.1-88.2 / s512x8_p 90.6-90.9 against 53.4-53.5 / 55.6-56.0
///   (s256x8_p 88.7-88.9 at 50256, but its staging twin spills 12 bytes);
///   RMS norm + residual s512x4_p 88.1-88.4 / 82.5-82.7 (f16 83.6-83.9)
///   against 72.6-72.8 / 72.3-73.6 (s512x8_p, 87.8-88.1 / 93.6-94.0, spills
///   16 bytes for f16);
/// - f32 -> bf16 softmax s512x4_p 87.1-87.2 / s512x8_p 82.1-82.2 against
///   77.3-77.8 / 72.2-72.3 (s512x4_p 70.5-71.0 at 64x1048576), log-softmax
///   s512x4_p 86.4-86.9 / s512x8_p 84.3-84.4 against 81.9-82.1 / 72.0-72.3;
///   layer norm s512x4_p 54.1 / 66.3-66.7 against 47.2-47.3 / 43.7-44.3; RMS
///   norm s512x8_p 81.9-82.2 / 83.5-84.0 against 57.0-57.1 / 49.8-52.3; RMS
///   norm + residual s512x4_p 89.0-89.1 / 89.9 against 87.1-87.3 /
///   72.5-73.1.
///
/// Layer norm + residual keeps s512x8 both ways (bf16 -> f32 87.3 / 72.5-72.6
/// against 74.0-74.1 / 72.2-72.6 for s512x8_p; f32 -> bf16 96.6-96.7 /
/// 73.4-73.6 against 79.2-79.4 / 69.1-69.2 for s512x4_p).
/// Layer norm between the two takes a cluster of the row's chunks (`_c2_p`)
/// at 8193..32768 columns: bf16 -> f32 91.4-91.5 % at 8192x16384 (s256x8)
/// and 92.6 at 8192x32768 (s512x8) against 86.3-87.1 for s512x8_p and
/// 52.4-52.8 for s512x8; f32 -> bf16 93.7-93.8 both against 62.1-63.0 and
/// 53.8-54.3. 16-bit layer norm took one (s256x8_c<n>_p) at 32769..40960
/// and 49153..57344 until the loop layout (below) beat it there (run6,
/// run10, three rounds): 61.3-65.9 % at 33000,
/// 63.7-64.4 at 36864 and 63.4-64.0 at 50256 (f16 63.9-64.4) against
/// 52.2-52.4, 57.4-57.6 and 58.7-58.8 for s512x8_p, 67.6-67.7 at 57344
/// against 66.0-66.2; it lost at 45000 (c6, 56.2-62.5 against 67.1-67.4),
/// 49152 (60.3-60.7 against 75.9-76.1 for s512x8_p_x) and 65536 (c8,
/// 66.6-67.3 against 76.9-77.1), and for the other row ops at 50256 (H100,
/// run4: 16-bit RMS norm 70.5 against 81.4, softmax 64.2 against 78.8).
/// f32 -> bf16 layer norm took the same (runs 19-20, two rounds each), and
/// keeps it at 53249..57344:
/// 68.4-68.7 at 36864, 72.6-72.7 at 40000, 62.5-63.9 at 50256 and 72.8-73.6
/// at 57344 against 61.5-61.6, 66.4-66.5, 54.0-54.1 and 65.6-65.8 for
/// s512x4_p; f32 layer norm lost with it (60.3 for s512x8_c4_p against 68.4).
/// At 16385..32768 (8192x32768, three rounds, run16) the exact block kernel
/// for bf16 -> f32 softmax and log-softmax (97.4-97.5 against 93.4-93.9 for
/// b512x16) and RMS norm + residual (98.7 against 90.5-90.7), and f32 ->
/// bf16 RMS norm (101.4-101.5 against 87.8-88.2); bf16 -> f32 RMS norm at
/// 8193..16384 b512x8_x (92.7-93.0 against 81.1-81.3 for b256x16, its
/// ragged form 88.6-88.8), bf16 -> f32 layer norm at 2049..4096 b256x4_x
/// (98.5-98.6 at 32768x4096 against 93.3-93.5), f32 -> bf16 layer norm at
/// 65..128 w16x2 at 5 blocks an SM (98.1-98.7 at 262144x128 against
/// 90.8-91.3 for w8x4, run17; it spilled 4 bytes at 6).
///
/// The loop layout (twenty-fifth session, 2026-11-27, H100, run4: 4096 rows,
/// two rounds, one process a shape and round) took over where it beat the
/// defaults above by a point or more in both rounds: 16-bit layer norm
/// l512x4 (2 blocks an SM; Chan's merge then, f64 sums since: `f64_sums`)
/// 68.9 / 73.2-73.3 / 68.5-68.6 / 66.2-66.5 /
/// 69.7-69.9 % at 33000 / 40000 / 45000 / 50256 / 57344 against 61.3-65.8 /
/// 62.4-67.0 (s256x8_c5_p) / 66.9-67.0 (s512x8_p) / 63.4-63.7 / 67.2-67.5
/// (s256x8_c7_p); 16-bit RMS norm l512x4 80.3-80.5 / 81.1-81.2 at 33000 /
/// 40000 against 66.8-66.9 / 75.5-76.1 (s512x16_p; run5 81.6 against 73.5
/// at 36864), which won from 45000
/// (77.8-78.0 against 75.9-76.0); f32 -> bf16 layer norm l512x8 (1 block an
/// SM) 72.5-72.8 / 78.8-79.3 / 80.5-81.0 / 72.7-73.5 / 73.0 at 33000 / 40000
/// / 45000 / 50256 / 65536 against 63.4-63.7 / 72.8-73.1 / 59.5 / 62.8-62.9
/// / 67.2 (run5: 76.3 against 68.4 at 36864, 64.0-64.3 / 65.2-69.0 against
/// 63.6-64.0 / 64.1-64.3 at 53000 / 54000), and 65.8-65.9 against the
/// cluster's 72.1-72.2 at 57344, seven whole chunks, which keeps it. 16-bit
/// rows of 49152 keep the exact split kernel (run5: s512x8_p_x 75.5-75.6
/// against 71.5-71.7; at 40960 and 57344, no whole number of its chunks,
/// s512x8_p ran 63.0-63.1 / 65.6-65.7 against 74.9 / 69.8-70.0; at 60000
/// / 63000, past the range, 67.5-67.6 / 70.1 against 64.9-65.0 / 65.3, run7).
/// f32 layer norm takes l512x8 (1 block an SM) where the split kernel's
/// chunks are least full (run7, run2): 81.2-81.3 / 81.3-81.6 / 80.1 /
/// 76.0-76.1 at 33000 / 36864 / 45000 / 50256 against 71.6 / 75.8-76.1 /
/// 73.2-73.3 / 68.4 for s512x4_p, level at 40000 (80.2-80.5 against 80.5),
/// behind at 57344 and 65536 (74.1-74.2 / 73.9 against 80.0 / 81.3, whole
/// chunks). The other f32 row ops lost with it (e.g. RMS norm + residual
/// 74.6 against 89.0-89.1 at 33000) but for RMS norm at 33000 (85.1-85.2
/// against 82.3-82.6, not taken: 76.9-77.0 against 84.6 at 40000). It lost
/// everywhere between bf16 in and f32
/// out (e.g. layer norm 79.8-80.1 against 81.2 for s256x8_p at 33000), for
/// 16-bit RMS norm + residual (74.0 against 84.3-84.4 at 33000), 16-bit
/// layer norm + residual from 34816 (run11, with its f64 sums: 72.0-72.2 /
/// 71.8-71.9 against 72.3 / 72.6 for s512x8_p at 34816 / 35840; run5:
/// 71.3-71.5 against 75.8-75.9 at 36864), which takes it just past 32768
/// (run11: 73.3-73.4 against 68.9 at 33000, where s512x8_p's three chunks
/// are two-thirds full), and 16-bit layer norm at 65536 (69.5-69.8 against
/// 76.7 for s512x8_p_x).
/// Twenty-sixth session of 2026-11-27 (H100, run8, two rounds, one process a
/// shape and round, 4096 rows): the residual ops' loop rows, whose second pass
/// loads the residual's sum the first stored (one stream, not x and the
/// residual), % of copy: 16-bit layer norm + residual l512x4 86.5-86.6 /
/// 89.1 / 82.2-82.3 at 33000 / 36864 / 50256, against 73.3-73.5 (the loop
/// before) / 76.3-76.4 / 74.8-75.0 (s512x8_p); f32 layer norm + residual
/// l512x8 92.2-92.4 at 33000 against 88.4-88.7 for s512x4_p (at 36864 83.7
/// against 89.9-90.0); 16-bit RMS norm + residual l512x4 88.7-89.0 at 33000
/// against 84.2-84.4 for s512x8_p (level at 36864); f32 RMS norm + residual
/// l512x8 93.9-94.1 / 92.2-92.4 at 33000 / 36864 against 89.1-89.5 /
/// 87.9-88.3 for s512x4_p (at 50256 85.6-85.7 against 89.1). Run9: 16-bit
/// layer norm + residual l512x4 84.9-85.0 at 57344 against 82.7 for
/// s512x8_p; at 49152 86.4-86.5 against 91.7-91.8 for s512x8_p_x.
/// Twenty-seventh session of 2026-11-27 (H100, three rounds, each kernel alone
/// in its process, benchmarks/2026-11-27-h100-s27 run3): layer norm's deferred
/// split rows in larger chunks, so fewer blocks a row and more cohorts, on rows
/// of a whole number of them (their ragged forms spill), % of copy: 16-bit
/// s512x16_p_x, bf16 85.0-85.7 / 80.8-81.2 / 87.9-88.0 at 64x1048576 /
/// 256x262144 / 4096x65536 against 79.8-80.4 / 70.8-71.0 / 76.7-76.8 for
/// s512x8_p_x, f16 83.9-84.2 against 80.0-80.3 at 64x1048576; f32 s512x8_p_x
/// (its states merged over the warps, `fetch_wide`) 81.4-81.6 / 85.9-86.1 at
/// 64x1048576 / 4096x65536 against 77.1-77.3 / 81.2-81.3 for s512x4_p, but
/// 82.8-83.2 against 85.0 at 256x262144, which keeps s512x4_p.
#[rustfmt::skip]
const MEASURED_LAYOUTS: &[MeasuredLayout] = {
    use Form::*;
    use NormLayout::*;
    use LayoutTypes::*;
    use NormOp::*;
    use SoftmaxAlgo::*;
    &[
        // op, softmax algorithm (None: any), residual, row types, columns, layout, lanes,
        // packs, form
        measured(LayerNorm,  None,         false, Widening,  8193..=16384,     Split, 256, 8,  Cluster),
        measured(LayerNorm,  None,         false, Widening,  16385..=32768,    Split, 512, 8,  Cluster),
        measured(LayerNorm,  None,         false, Narrowing, 8193..=16383,     Split, 256, 8,  Cluster),
        measured(LayerNorm,  None,         false, Narrowing, 16384..=16384,    Block, 512, 8,  Exact),
        measured(LayerNorm,  None,         false, Narrowing, 16385..=32768,    Split, 512, 8,  Cluster),
        measured(LayerNorm,  None,         false, Sixteen,   32769..=49151,    Loop,  512, 4,  Plain),
        measured(LayerNorm,  None,         false, Sixteen,   49153..=57344,    Loop,  512, 4,  Plain),
        measured(RmsNorm,    None,         false, Sixteen,   32769..=40960,    Loop,  512, 4,  Plain),
        measured(LayerNorm,  None,         true,  Sixteen,   32769..=49151,    Loop,  512, 4,  Plain),
        measured(LayerNorm,  None,         true,  Sixteen,   49153..=57344,    Loop,  512, 4,  Plain),
        measured(LayerNorm,  None,         true,  F32,       32769..=33792,    Loop,  512, 8,  Plain),
        measured(RmsNorm,    None,         true,  Sixteen,   32769..=33792,    Loop,  512, 4,  Plain),
        measured(RmsNorm,    None,         true,  F32,       32769..=36864,    Loop,  512, 8,  Plain),
        measured(LayerNorm,  None,         false, F32,       32769..=38912,    Loop,  512, 8,  Plain),
        measured(LayerNorm,  None,         false, F32,       40961..=53248,    Loop,  512, 8,  Plain),
        measured(LayerNorm,  None,         false, Narrowing, 32769..=57343,    Loop,  512, 8,  Plain),
        measured(LayerNorm,  None,         false, Narrowing, 57344..=57344,    Split, 256, 8,  Cluster),
        measured(LayerNorm,  None,         false, Narrowing, 57345..=65536,    Loop,  512, 8,  Plain),
        measured(Softmax,    None,         false, Sixteen,   49152..=49152,    Split, 512, 8,  PrefetchExact),
        measured(Softmax,    None,         false, Sixteen,   32769..=65535,    Split, 256, 8,  PrefetchExact),
        measured(LogSoftmax, None,         false, Sixteen,   49152..=49152,    Split, 512, 8,  PrefetchExact),
        measured(LogSoftmax, None,         false, Sixteen,   32769..=65535,    Split, 512, 4,  PrefetchExact),
        measured(Softmax,    None,         false, F32,       32769..=65536,    Split, 512, 4,  PrefetchExact),
        measured(LogSoftmax, None,         false, F32,       32769..=65536,    Split, 512, 4,  PrefetchExact),
        measured(Softmax,    None,         false, Sixteen,   32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(Softmax,    None,         false, F32,       32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(LogSoftmax, None,         false, Sixteen,   32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(LogSoftmax, None,         false, F32,       32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(LayerNorm,  None,         false, Sixteen,   65536..=u64::MAX, Split, 512, 16, PrefetchExactOnly),
        measured(LayerNorm,  None,         false, Sixteen,   32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(LayerNorm,  None,         false, F32,       65536..=65536,    Split, 512, 8,  PrefetchExactOnly),
        measured(LayerNorm,  None,         false, F32,       1048576..=u64::MAX, Split, 512, 8, PrefetchExactOnly),
        measured(LayerNorm,  None,         false, F32,       32769..=u64::MAX, Split, 512, 4,  Prefetch),
        measured(LayerNorm,  None,         true,  F32,       32769..=u64::MAX, Split, 512, 4,  PrefetchExact),
        measured(LayerNorm,  None,         true,  Sixteen,   32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(RmsNorm,    None,         false, Sixteen,   32769..=u64::MAX, Split, 512, 16, PrefetchExact),
        measured(RmsNorm,    None,         false, F32,       32769..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(RmsNorm,    None,         true,  Sixteen,   32769..=u64::MAX, Split, 512, 8,  PrefetchExact),
        measured(RmsNorm,    None,         true,  F32,       32769..=u64::MAX, Split, 512, 4,  Prefetch),
        measured(Softmax,    None,         false, Widening,  32769..=65536,    Split, 256, 8,  Prefetch),
        measured(Softmax,    None,         false, Widening,  65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(LogSoftmax, None,         false, Widening,  32769..=65536,    Split, 512, 4,  Prefetch),
        measured(LogSoftmax, None,         false, Widening,  65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(LayerNorm,  None,         false, Widening,  8193..=32768,     Split, 512, 8,  Prefetch),
        measured(LayerNorm,  None,         false, Widening,  32769..=65536,    Split, 256, 8,  Prefetch),
        measured(LayerNorm,  None,         false, Widening,  65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(RmsNorm,    None,         false, Widening,  32769..=65536,    Split, 512, 4,  Prefetch),
        measured(RmsNorm,    None,         false, Widening,  65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(RmsNorm,    None,         true,  Widening,  32769..=u64::MAX, Split, 512, 4,  Prefetch),
        measured(Softmax,    None,         false, Narrowing, 32769..=65536,    Split, 512, 4,  Prefetch),
        measured(Softmax,    None,         false, Narrowing, 65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(LogSoftmax, None,         false, Narrowing, 32769..=65536,    Split, 512, 4,  Prefetch),
        measured(LogSoftmax, None,         false, Narrowing, 65537..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(LayerNorm,  None,         false, Narrowing, 32769..=u64::MAX, Split, 512, 4,  Prefetch),
        measured(RmsNorm,    None,         false, Narrowing, 32769..=u64::MAX, Split, 512, 8,  Prefetch),
        measured(RmsNorm,    None,         true,  Narrowing, 32769..=u64::MAX, Split, 512, 4,  Prefetch),
        measured(RmsNorm,    None,         false, Widening,  8193..=16384,     Block, 512, 8,  Exact),
        measured(RmsNorm,    None,         false, Narrowing, 16385..=32768,    Block, 512, 16, Exact),
        measured(RmsNorm,    None,         true,  Widening,  16385..=32768,    Block, 512, 16, Exact),
        measured(Softmax,    Some(Online), false, Widening,  16385..=32768,    Block, 512, 16, Exact),
        measured(LogSoftmax, Some(Online), false, Widening,  16385..=32768,    Block, 512, 16, Exact),
        measured(LayerNorm,  None,         false, Widening,  2049..=4096,      Block, 256, 4,  Exact),
        measured(LayerNorm,  None,         false, Narrowing, 65..=128,         Warp,  16,  2,  Plain),
        measured(RmsNorm,    None,         false, Sixteen,   2049..=4096,      Block, 128, 8,  Plain),
        measured(RmsNorm,    None,         false, Sixteen,   16384..=16384,    Block, 512, 8,  Exact),
        measured(LayerNorm,  None,         false, F32,       65..=128,         Warp,  16,  2,  Plain),
        measured(LayerNorm,  None,         true,  F32,       65..=128,         Warp,  32,  1,  Plain),
        measured(LayerNorm,  None,         true,  Sixteen,   65..=128,         Warp,  16,  2,  Plain),
        measured(RmsNorm,    None,         false, F32,       65..=128,         Warp,  32,  1,  Plain),
        measured(RmsNorm,    None,         true,  F32,       65..=128,         Warp,  32,  1,  Plain),
        measured(Softmax,    None,         false, F32,       65..=128,         Warp,  32,  1,  Plain),
        measured(LogSoftmax, None,         false, F32,       65..=128,         Warp,  32,  1,  Plain),
        measured(RmsNorm,    None,         true,  Sixteen,   65..=128,         Warp,  16,  4,  Plain),
        measured(Softmax,    Some(Online), false, Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(LogSoftmax, Some(Online), false, Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(LayerNorm,  None,         false, F32,       32768..=32768,    Block, 512, 16, Exact),
        measured(LayerNorm,  None,         false, F32,       16385..=32767,    Block, 512, 16, NoL1),
        measured(LayerNorm,  None,         true,  F32,       32768..=32768,    Block, 512, 16, Exact),
        measured(LayerNorm,  None,         true,  F32,       16385..=32767,    Block, 512, 16, NoL1),
        measured(LayerNorm,  None,         true,  Sixteen,   16385..=32768,    Block, 512, 16, NoL1),
        measured(LayerNorm,  None,         false, Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(LayerNorm,  None,         false, Sixteen,   8193..=16384,     Block, 512, 8,  Exact),
        measured(Softmax,    Some(Safe),   false, Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(RmsNorm,    None,         false, Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(RmsNorm,    None,         true,  Sixteen,   16385..=32768,    Block, 512, 16, Exact),
        measured(Softmax,    Some(Online), false, Sixteen,   8193..=16384,     Block, 512, 8,  Exact),
        measured(Softmax,    Some(Online), false, Sixteen,   2049..=4096,      Block, 256, 4,  Exact),
        measured(LogSoftmax, Some(Online), false, F32,       2049..=4096,      Block, 256, 4,  Exact),
        measured(RmsNorm,    None,         false, F32,       16385..=32768,    Block, 512, 16, Exact),
        measured(RmsNorm,    None,         true,  F32,       16385..=32768,    Block, 512, 16, Exact),
    ]
};

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
    /// Block or split layout, whole packs only (`_x` in names): rows of exactly
    /// the block's capacity, or of a whole number of the split layout's chunks
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
    /// Packs of its chunk's weight and bias a deferred split kernel loads
    /// into registers once and holds for the launch (`_h<n>` in names, 0 to
    /// `packs`), instead of `held_cols`'s rule: what the benchmarks compare.
    pub held: Option<u32>,
}

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

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        match self.layout {
            NormLayout::Warp => WARP_LAYOUT_THREADS,
            NormLayout::Block | NormLayout::Split | NormLayout::Loop => self.lanes,
        }
    }

    /// How the measured layouts group this kernel's element types.
    fn layout_types(&self) -> LayoutTypes {
        let (i, o) = (self.input.info().bytes, self.output.info().bytes);
        if self.input == self.output {
            if i == 4 {
                LayoutTypes::F32
            } else {
                LayoutTypes::Sixteen
            }
        } else {
            match (i, o) {
                (2, 4) => LayoutTypes::Widening,
                (4, 2) => LayoutTypes::Narrowing,
                _ => LayoutTypes::Other,
            }
        }
    }

    /// How the tables group this kernel's element types.
    fn row_types(&self) -> RowTypes {
        match self.layout_types() {
            LayoutTypes::F32 => RowTypes::F32,
            LayoutTypes::Sixteen => RowTypes::Sixteen,
            LayoutTypes::Widening | LayoutTypes::Narrowing | LayoutTypes::Other => RowTypes::Mixed,
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
        let mut op = self.op.to_string();
        if let Some(a) = self.algo {
            op += &format!("_{a}");
        }
        if self.residual {
            op += "_res";
        }
        // A warp-layout block is 256 threads whatever its group size: its
        // registers a thread mostly follow the packs, so the 32-lane entry
        // stands for a group size without an entry of its own.
        let letter = self.layout.info().letter;
        let plain = format!("{letter}{}x{}", self.lanes, self.packs);
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
    /// a piece each: w8x4, 64 bytes of each of four rows). H100, 2026-11-27,
    /// 262144x128, three rounds, % of copy (BENCHMARKS.md, twenty-ninth
    /// session): bf16 layer norm w8x4 94.9-95.2 -> 95.2-95.4, RMS norm
    /// 95.2-95.5 -> 95.4-95.8, log-softmax 95.2-95.3 -> 95.4-95.8, safe
    /// softmax 95.3-95.7 -> 95.8-95.9; the f32 kernels and bf16 layer norm +
    /// residual within their spread (f32 layer norm w16x2 99.0 against
    /// 98.9-99.6); 256-byte lines lost up to 0.5 (f32 online softmax
    /// 98.8-98.9 against 99.3).
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
    /// b512x16_x spilled 80 bytes (ptxas 13.0); storing as it goes, it ran at
    /// 98.9-99.1 % of copy at 8192x32768, against 95.1-95.2 % for b512x16_n,
    /// and bf16 b512x16_x level with the kernel before (96.5-96.6 % against
    /// 96.4-96.6; H100, 2026-11-27, BENCHMARKS.md twenty-sixth session).
    pub fn stores_each_pack(&self) -> bool {
        self.op == NormOp::LayerNorm && self.layout == NormLayout::Block && self.exact
    }

    /// Whether a block per row reduces layer norm's (sum, sum of squares) in
    /// f32, a second time only for a row far from zero, rather than Chan's
    /// merge of (n, mean, m2). The two plain sums it replaced (the row's sum,
    /// then its squares about the mean) won everywhere but at 16-bit rows in
    /// 512-thread blocks (H100, BENCHMARKS.md, 2026-11-24 run7: bf16
    /// 8192x32768 b512x16 73.2 % of copy against 88.6 %; b512x8 at
    /// 8192x16384, where Chan's merge also compiles clean at 2 blocks an SM,
    /// 84.4 % against 61.5 % at the 1 block the two sums compile clean at;
    /// with the residual the two sums won there too, bf16 b512x16 81.4 %
    /// against 74.9 %, b512x8 98.2 % against 97.0 %). The pair spills those
    /// 16-bit kernels without the residual as well (2026-11-25: bf16 b512x8_x
    /// 24 bytes, f16 b512x16_x 64), so they keep Chan's merge. Groups (warp
    /// layout) always take the pair; split rows exchange one state.
    pub fn sum_pair(&self) -> bool {
        self.residual
            || !(self.layout == NormLayout::Block
                && self.lanes >= 512
                && self.input.info().bytes < 4)
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
                exact: false,
                held: None,
                ..self.clone()
            };
        }
        // Staging is for whole packs: the twin loads its rows directly.
        let mut twin = NormSpec {
            general: true,
            prefetch: false,
            exact: false,
            held: None,
            ..self.clone()
        };
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
        // 4x1000003 and 64x1048573 (H100, 2026-11-25,
        // benchmarks/2026-11-25-h100-s11).
        let split_norm = !twin.op.info().softmax && self.layout == NormLayout::Split;
        // Of 8 packs, one pass, for RMS norm (without the residual, one dtype
        // in and out: 64 registers, none spilled; one wave of 248 items at
        // 4x1000003). Against s512x4_o2_g's two passes (H100,
        // 2026-11-27, two rounds each alone, GB/s, benchmarks/2026-11-27-h100-s31
        // run10): bf16 1113-1116 against 1055-1058 at 4x1000003 and 1478-1479
        // against 1374-1375 at 64x1048573, f16 1109-1118 against 1055-1057 and
        // 1476-1477 against 1371-1372, f32 1783-1797 against 1783 and 1989-1993
        // against 1880-1881. bf16 -> f32 spilled 4 bytes (a mixed norm: 4 packs).
        // 16-bit RMS norm + residual and layer norm (with and without the
        // residual) hold their rows as raw words to fit, and 16-bit RMS norm
        // too, for its weight's registers (`raw_rows`, whose figures are
        // there); f32 layer norm keeps two passes of 4 packs.
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
    /// kernels, and f32 layer norm (58.4-58.7 % of copy against 60.1-60.4 %
    /// for its direct twin at 64x1048573), have none: `general_twin`.
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
    /// norms' two passes). H100, % of copy at 4096 rows of 40001, 50257 and
    /// 65537.
    ///
    /// The softmaxes (twenty-first session, runs 7-8), s256x8_p_g against
    /// s512x8_p_g and the direct twin s512x8_g:
    /// - bf16 softmax 74.0 / 67.5 / 69.7 against 61.9 / 58.0 / 62.6 and
    ///   54.7 / 52.4 / 54.2; balanced (`balances`), at 3 blocks an SM, as
    ///   at 4 it spilled 8 bytes: 75.6-75.7 / 67.0-67.4 / 69.7-69.9 against
    ///   73.6-73.7 / 66.7-67.4 / 69.1-69.4 at 4 unbalanced (2026-11-27, run4);
    /// - bf16 log-softmax at 3 blocks an SM (16 bytes spilled at 4) 87.4 /
    ///   71.8 / 77.2 against 68.3 / 63.4 / 69.0 and 58.1 / 55.2 / 57.2;
    /// - f32 softmax 89.1 / 87.4 / 88.6 against 82.5 / 78.4 / 81.0 and 85.7
    ///   / 81.9 / 84.0;
    /// - f32 log-softmax has none (its direct twin 89.7-90.1 / 87.2-87.3 /
    ///   88.4-88.5 against 90.8-91.3 / 87.4-87.9 / 89.3).
    ///
    /// The norms (2026-11-27, twenty-second session, run5: balanced chunks in
    /// every split kernel, the direct twins' 1-2 points slower than as they
    /// run now; 40001 / 50257, two rounds within 0.7 points), the best of s128x8,
    /// s256x4, s256x8 (bounds 2, 3, 4), s512x4 and s512x8 against the
    /// direct twin s512x4_o2_g:
    /// - RMS norm, both widths, and 16-bit RMS norm + residual: s512x4 (f32
    ///   86.7 / 85.7 against 66.4 / 65.1; bf16 67.3 / 62.2 against 43.4 /
    ///   39.4; bf16 + residual 81.1 / 77.5 against 63.3 / 58.8);
    /// - layer norm: s256x8, 16-bit at 2 blocks an SM (72 bytes spilled at
    ///   3): f32 66.7 / 62.9 against 62.8 / 60.4, bf16 38.4 / 36.2 against
    ///   32.0 / 28.9;
    /// - f32 layer norm + residual: s256x4, 80.1 / 80.2 against 63.5 / 62.6;
    /// - 16-bit layer norm + residual: s512x4 with Chan's f32 state (`f64_sums`;
    ///   run8, at 50257: 58.0-58.2 against 42.4-42.5; run5 had left it out, as
    ///   it spilled with the f64 sums);
    /// - none for f32 RMS norm + residual (86.6 / 86.2 at best, against 94.9
    ///   / 92.0).
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
    /// `STAGED_TWIN_ROWS` rows or more each, else the direct one. H100,
    /// 2026-11-26 (BENCHMARKS.md, twenty-first session), % of copy, staging
    /// against direct twin:
    /// - 64x1048573 (65-129 chunks a row, 16-64 rows a cohort): ahead for
    ///   every op it has, e.g. 16-bit softmax 74.3-74.6 against 52.7-53.4, f32
    ///   RMS norm 77.6-78.6 against 63.9-64.1;
    /// - 4096x50257 (4-7 chunks a row): ahead for five ops (f32 RMS norm
    ///   77.2-77.5 against 65.2-65.3), behind for five (f32 RMS norm +
    ///   residual 84.4 against 92.2, bf16 RMS norm + residual 54.0-54.1
    ///   against 59.4-59.7);
    /// - 4x1000003 (1-4 rows a cohort): within 1.5 points for 16-bit rows,
    ///   behind for f32 (softmax 81.4-82.2 against 86.0-86.9).
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
    /// 4x1000003 (`general_twin`; H100, 2026-11-27, GB/s against s512x4_o2_g,
    /// benchmarks/2026-11-27-h100-s31 run12, run13: bf16 RMS norm + residual
    /// 1745-1753 against 1452-1456, layer norm + residual 1519-1523 against
    /// 1218-1222, layer norm 1146-1147 against 897-904). Plain RMS norm fit
    /// widened, and held raw it asks for its weight ahead of the stores in
    /// the registers that frees (rj_raw_cols; 2026-11-28,
    /// benchmarks/2026-11-28-h100-s32 run3: bf16 1305-1320 against 1109-1116
    /// at 4x1000003, 1848-1851 against 1476-1478 at 64x1048573). Softmax and
    /// log-softmax (s512x8_g) too, in pairs, each output's exponential made
    /// again from the row's state (run8, against the widened twin, which
    /// keeps e^(x - thread max)): bf16 softmax 1164-1171 against 1096-1098,
    /// log-softmax 1174-1181 against 1091-1094, f16 1164-1178 against
    /// 1089-1110; 64x1048573 bf16 softmax 1764-1781 against 1657-1660,
    /// log-softmax 1794-1808 against 1650-1659.
    pub fn raw_rows(&self) -> bool {
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
    /// streams, and every raw row (`raw_rows`, measured with pairs only). Against packs a lane apart (H100, 2026-11-27, two rounds each
    /// alone, GB/s, benchmarks/2026-11-27-h100-s31 run3, run7): bf16 RMS norm +
    /// residual s512x4_o2_g 1454-1462 against 1442-1446 at 4x1000003 and
    /// 1730-1731 against 1714-1715 at 64x1048573, f16 1458-1465 against
    /// 1455-1459 and 1729-1734 against 1711-1713; bf16 layer norm + residual
    /// 1215-1218 against 1132-1134 and 1352-1354 against 1245, f16 1214-1226
    /// against 1136-1142 and 1363-1364 against 1252-1253. The others lost
    /// with pairs: the softmax twins (s512x8_g, widened, before they held raw
    /// words; 64 registers either way, 5 % more SASS instructions) 3-6 % (bf16 softmax 1063-1071 against
    /// 1093-1103 at 4x1000003, 1556-1558 against 1658-1662 at 64x1048573), the
    /// two-pass layer norm 6 % and RMS norm 2 % at 64x1048573 (bf16
    /// 1032-1033 against 1101, 1351-1352 against 1375-1376; at 4x1000003 +2 %
    /// and level).
    pub fn paired_packs(&self) -> bool {
        (self.one_pass_split() || self.two_pass())
            && self.general
            && (self.residual || self.raw_rows())
            && self.input.info().bytes == 2
            && self.output.info().bytes == 2
            && self.packs.is_multiple_of(2)
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
    /// behind (H100, 2026-11-27, run3, % of copy against 722aea2: bf16
    /// softmax s512x8_p_g 67.8-68.2 against 73.7-74.6, spilling 8 bytes;
    /// bf16 softmax s512x8_g 55.1-55.3 against 56.1-56.2).
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

    /// The same kernel for rows of any length up to its capacity: without
    /// `exact` (the launcher takes it for the rows an exact kernel does not
    /// fit), its columns held by the rule (`held_cols`).
    pub fn ragged_twin(&self) -> NormSpec {
        let ragged = NormSpec {
            exact: false,
            held: None,
            ..self.clone()
        };
        // An exact-only layout (its ragged form spills): other rows take the
        // ladder's layout, as for a row a pack past the entry's first length.
        if !(self.exact && self.prefetch) {
            return ragged;
        }
        let exact_only = MEASURED_LAYOUTS.iter().find(|m| {
            m.form == Form::PrefetchExactOnly
                && m.serves(self)
                && (m.layout, m.lanes, m.packs) == (self.layout, self.lanes, self.packs)
        });
        match exact_only {
            Some(m) => ragged.for_cols(m.cols.start() + 4),
            None => ragged,
        }
    }

    /// Whether the whole-pack kernel (not the general twin) takes rows of
    /// `cols` with leading dimension `ld` from buffers at the (address, element
    /// bytes) of `buffers`, which are read only while everything before fits.
    pub fn whole_packs_fit(
        cols: u64,
        ld: u64,
        buffers: impl IntoIterator<Item = (u64, u64)>,
    ) -> bool {
        cols.is_multiple_of(4)
            && ld.is_multiple_of(4)
            && buffers
                .into_iter()
                .all(|(a, bytes)| a.is_multiple_of(4 * bytes))
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
    /// chunk, so its columns, in every row).
    fn can_hold_cols(&self) -> bool {
        self.deferred() && !self.general && self.vectors() > 0
    }

    /// Packs of its chunk's weight and bias a deferred split kernel loads into
    /// registers once and holds for the launch (0: none; the rest it loads
    /// each row it finishes): `held`, else every pack (at most `HELD_CAPS`'s)
    /// for layer norm and f32 RMS norm without the residual, where the columns
    /// are not staged in shared memory (`staged_cols`; f32 layer norm holds
    /// them where they would be). Loaded each row, they reached the finishing
    /// pass from L2 after the row's states came in. H100, 2026-11-27, % of
    /// copy, each kernel alone against its `_h0` (BENCHMARKS.md, twenty-ninth
    /// session): at 64x1048576 f32 layer norm s512x8_p_x 81.2-81.5 ->
    /// 88.6-88.8, bf16 s512x16_p_x 85.4-85.8 -> 88.7-89.1, f16 83.4-84.1 ->
    /// 86.7-86.9, f32 RMS norm s512x8_p 87.6-88.1 -> 91.0-91.3; at 4096x65536
    /// f32 layer norm 86.1 -> 91.3-91.5. 16-bit RMS norm (bf16 s512x16_p_x
    /// 90.8-91.5 -> 89.9-90.5 at 64x1048576) and the RMS norms with the
    /// residual (within a point either way) keep loading them.
    pub fn held_cols(&self) -> u32 {
        if !self.can_hold_cols() {
            return 0;
        }
        if let Some(h) = self.held {
            return h;
        }
        // Where the columns fit beside the staged rows, f32 layer norm
        // holds them rather than stage them (s512x4_p 71.9-72.0 % of copy
        // against 71.0-71.2 at 64x1000000, 85.7-85.8 against 84.8-84.9 at
        // 256x262144); 16-bit layer norm s512x8_p stages them (63.1-63.6
        // against 60.4 at 64x1000000).
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
    /// residual. At 64x1048576 (H100, 2026-11-25, run19, three rounds) staged
    /// columns made 16-bit layer norm s512x8_p 66.4-67.7 % of copy against
    /// 61.3-63.2 % and f32 RMS norm + residual s512x4_p 86.6-86.8 % against
    /// 80.8-80.9 %, and 16-bit RMS norm + residual s512x8_p 85.6-85.8 % against
    /// 89.6-90.1 %.
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
    /// one. At 64x1048576 (64 blocks a row, H100, 2026-11-25, run9) 4 made f32
    /// softmax 83.9-84.7 % of copy against 77.5-78.7 %; at bound 2 the 16-bit
    /// softmax spilled with it (36 bytes) and fell from 75.6-76.8 % to
    /// 64.6-64.7 %.
    pub fn fetch_ahead(&self) -> u32 {
        if self.min_blocks() == 1 { 4 } else { 1 }
    }

    /// Of those, the slots asked for before the block publishes its next row:
    /// all of them where their registers held (under 32 chunks a row of 2^20;
    /// not a layer norm's three words a slot beside a residual), else 1. With all 4
    /// early, 16-bit RMS norm of 16 packs spilled 8 bytes and 16-bit layer
    /// norm with the residual 20. 16-bit layer norm ran at 61.1-62.8 % of copy
    /// with 4 early (H100, 64x1048576, run11) and 53.9-54.3 % with 1 (run13).
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
        // (s512x4_p_x 74.3-74.5 % of copy against 77.2-77.6 % for s512x4_p,
        // H100, 64x1048576, 2026-11-27).
        let layer_f32_wide_rows = layer && self.input.info().bytes == 4 && self.packs >= 8;
        (self.deferred() && (f32_rms || layer_16 || layer_f32_wide_rows)) || self.two_pass()
    }

    /// A deferred split row, or a loop row, of 16-bit layer norm exchanges
    /// its sum and sum of squares in f64 (`rj_red_sum_sq64`) rather than
    /// Chan's (n, mean, m2). The loop's (H100, 2026-11-27, twenty-fifth
    /// session, run9, two rounds, 4096 rows, % of copy): bf16 l512x4 72.7 /
    /// 75.4-75.5 / 68.9-69.0 at 33000 / 36864 / 50256 against 68.8-68.9 /
    /// 72.1-72.2 / 66.0-66.1; f32 layer norm l512x8 lost with them (71.1-71.2
    /// / 67.5 against 81.0-81.1 / 76.0-76.1 at 36864 / 50256). The split's: At
    /// 64x1048576 (H100, 2026-11-25, three rounds, % of the copy of n f32):
    /// bf16 s512x8_p 75.6-77.2 against 70.0-70.9 (one round 52.3), and
    /// 75.2-75.6 against 69.2-71.1 in another call; f16 75.8-77.1 against
    /// 72.6-75.4; with the residual, bf16 82.8-84.0 against 75.1-76.1 and f16
    /// 83.7-85.0 against 77.9-79.1 (run9). Not the short staging twin of
    /// 16-bit layer norm + residual, s512x4, which spilled 4 bytes with them
    /// and ran faster without (4096x50257, 2026-11-27, run8: 58.0-58.2 %
    /// against 56.9; its staging twins without the residual, and the long
    /// ones, ran 2-4 points behind without them). It lost elsewhere (f32 layer norm s512x4_p 75.6-76.3
    /// against 77.6-79.3, f32 layer norm + residual s512x4_p 79.5-80.3 against
    /// 83.1-83.6, bf16 layer norm + residual s512x8 77.0-77.9 against
    /// 78.7-79.1) and spilled f32 layer norm s512x8 and s256x8 at their bounds.
    ///
    /// With its columns held in registers (`held_cols`), f32 layer norm +
    /// residual's exact deferred kernel takes them too (H100, 2026-11-27,
    /// twenty-ninth session, run14-run15, three rounds, % of copy):
    /// s512x4_p_x 86.5-87.0 against 83.5-84.8 at 64x1048576, 96.2-96.3
    /// against 95.5-95.6 at 4096x65536, 96.6-96.8 against 96.3-96.7 at
    /// 256x262144; its ragged s512x4_p lost at 64x1000000 (73.6-74.3 against
    /// 75.1-77.0), and f32 layer norm s512x8_p_x, holding a pack fewer for
    /// their registers, ran level (88.0-88.6 against 88.4-88.9).
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
    /// waits while a chunk of the first pass is unpublished. Against one pass
    /// (H100, 2026-11-25, three rounds each, % of the copy of n f32): layer
    /// norm bf16 45.5-47.1 against 43.0-43.6 at 4x1000003 and 32.3-32.4
    /// against 28.8-29.2 at 64x1048573, f32 89.3-93.9 against 76.1-77.7 and
    /// 59.9-60.5 against 50.7-51.0, RMS norm f32 95.7-97.4 against 85.5-86.4
    /// and 63.8-65.0 against 62.6-63.2; f32 layer norm + residual lost at
    /// 4x1000003 (96.4-100.7 against 101.6-102.8) and won at 64x1048573
    /// (64.8-65.1 against 60.6-60.8). The softmax twins (one wave at
    /// 4x1000003 already) and RMS norm + residual lost with it where the
    /// second load of a long row comes from memory (f32 RMS norm + residual
    /// 67.6-67.9 against 74.0-74.1 at 64x1048573, f32 softmax 66.9-67.2
    /// against 78.4-79.0): they keep one pass.
    ///
    /// Only the long rows' twins (4 packs: rows past 32768 columns, many
    /// chunks a row) take it. The twins of 16385..32768 columns (s512x8_g, 2
    /// or 3 chunks a row, whose waits overlap) lost with it where the rows
    /// outgrow L2 (8192x32767, two rounds: bf16 layer norm 17.5-17.6 against
    /// 20.1, bf16 RMS norm 25.1 against 28.4, bf16 layer norm + residual
    /// 24.1-24.2 against 27.6; f32 layer norm 48.3-48.4 against 46.8-46.9).
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
    /// RMS norm. The other loop twins ran slower with it (H100, 2026-11-27,
    /// run13, two rounds, % of copy): bf16 RMS norm l512x4_g 62.9-63.1 against
    /// 51.0-51.1 at 4096x36865; bf16 layer norm 38.1-38.2 against 42.3 at
    /// 4096x50257, f32 layer norm l512x8_g 52.8 against 59.5-59.6 at 4096x36865,
    /// f32 -> bf16 50.2 against 53.1 at 4096x45001, bf16 layer norm + residual
    /// 45.0 against 45.4.
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
    /// warps. Against counters a row (H100, 2026-11-27, two or three rounds
    /// each alone, GB/s; benchmarks/2026-11-27-h100-s30 run4, run5): bf16 RMS
    /// norm + residual s512x4_o2_g 1449-1462 against 1329-1345 at 4x1000003,
    /// bf16 softmax s512x8_g 1057-1063 against 1016-1021, f32 softmax
    /// s512x8_g 1613-1614 against 1570-1577, bf16 log-softmax s512x8_g level
    /// (1055-1062 against 1057-1066); whole-pack kernels at 4x1000008, which
    /// keep counting: bf16 softmax s512x8 1096-1100 against 1055-1057, f32 RMS
    /// norm s512x8 1858-1873 against 1837-1849.
    fn one_pass_split(&self) -> bool {
        self.flagged_states() && !self.second_pass()
    }

    /// Whether a one-pass split row asks for each thread's first slot of the
    /// row as the block publishes (`rj_red_split`'s kAsk): its general twins
    /// of 4 packs or fewer. bf16 RMS norm + residual s512x4_o2_g ran
    /// 1454-1462 GB/s with it against 1415-1425 without (H100, 2026-11-27,
    /// 4x1000003, run5); the twins of 8 packs at 64 registers spilled 16-76
    /// bytes with it (softmax and log-softmax s512x8_g, ptxas 13.0), none
    /// without.
    pub fn split_asks_early(&self) -> bool {
        self.one_pass_split() && self.general && self.packs <= 4
    }

    /// Whether a one-pass split kernel loads its launch's epoch beside its
    /// first ticket, both in flight at once, and takes each later ticket at
    /// the end of an item: stored to shared memory before the ticket's add,
    /// the epoch's load held the first row load back a round trip. Taken by
    /// the kernels that do not ask early (H100, 2026-11-27, 4x1000003, two
    /// rounds, GB/s, run10: bf16 softmax s512x8_g 1093-1096 against
    /// 1048-1064, f32 softmax 1665-1676 against 1612-1621, bf16 log-softmax
    /// 1091-1095 against 1055-1057); bf16 RMS norm + residual s512x4_o2_g,
    /// which asks early, ran 1420-1427 with it against 1451-1457. The
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
    /// driver's promise, not by the order of tickets. Taken by layer norm
    /// (H100, 2026-11-28, two rounds each alone, GB/s,
    /// benchmarks/2026-11-28-h100-s33 run3: bf16 layer norm s512x8_o2_g
    /// 1216-1221 against 1157-1177 at 4x1000003, 943-945 against 876-877 at
    /// 2x1000003; f16 1234-1235 against 1170-1175). Given to every one-pass
    /// kernel (run2), the others ran within 1.3 % of their ticket either way
    /// (bf16 softmax s512x8_g 1149-1170 against 1163-1164, bf16 RMS norm
    /// s512x8_o2_g 1317-1324 against 1307-1313, f32 softmax 1634-1657 against
    /// 1646-1675), and f16 softmax and log-softmax spilled 12 bytes with it and
    /// bf16 layer norm + residual 32 (ptxas 13.0), so they keep their tickets.
    pub fn one_wave(&self) -> bool {
        self.one_pass_split() && self.op == NormOp::LayerNorm && !self.residual
    }

    /// Whether a two-pass split kernel takes its next ticket as it starts an
    /// item, the add's round trip hidden behind the item, rather than before
    /// the next item's first load (its first ticket beside the epoch's load).
    /// Against the order before (H100, 2026-11-27, two rounds each alone,
    /// GB/s, benchmarks/2026-11-27-h100-s31 run4), at 4x1000003: bf16 RMS
    /// norm s512x4_o2_g 1053-1061 against 1005-1019, f16 1046-1052 against
    /// 1005-1011, bf16 layer norm 901-903 against 875, f16 897-907 against
    /// 869-878, f32 layer norm 1678-1691 against 1636-1638, f32 RMS norm
    /// 1790-1796 against 1780-1784; at 64x1048573 bf16 RMS norm 1376 against
    /// 1326, bf16 layer norm 1100-1101 against 1060-1061, f32 level to +0.7 %.
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
    /// form (`_x`) needs: the block's one chunk, or a whole number of a split
    /// row's chunks.
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

    /// The same operation laid out by the default ladder for rows of `cols`
    /// (the smallest register footprint that holds the row), or by
    /// `MEASURED_LAYOUTS` where a measurement on the H100 chose another.
    pub fn for_cols(&self, cols: u64) -> NormSpec {
        self.laid_out(cols, true)
    }

    /// The kernel the ladder gives this kernel's op and types without
    /// clusters, for rows up to this kernel's capacity: what a cluster row
    /// (`_c<n>`) hands the calls it does not take (rows off the pack grid,
    /// and devices below sm_90). Other kernels are their own.
    pub fn unclustered(&self) -> NormSpec {
        match (self.cluster, self.capacity()) {
            (Some(_), Some(cap)) => NormSpec {
                cluster: None,
                ..self.clone()
            }
            .laid_out(cap, false),
            _ => self.clone(),
        }
    }

    /// The kernel this one hands its calls off the pack grid to (odd `cols`
    /// or `ld`, misaligned buffers), with its own twins, if any: a cluster
    /// row's `unclustered()`, and a loop row's long-row split kernel (the
    /// ladder's for `MAX_COLS`), whose staging twins ran faster there than
    /// the loop's general twin (H100, 2026-11-27, run15, two rounds, % of
    /// copy): f32 layer norm s256x8_p_g 64.5-64.7 against 59.3-59.4 at
    /// 4096x36865, f32 -> bf16 55.7-55.8 against 53.0-53.1 at 4096x45001,
    /// bf16 layer norm + residual s512x4_p_g 52.1-52.2 against 45.6-45.7 at
    /// 4096x33001, bf16 RMS norm 67.3 against 64.5-64.6 at 4096x40001 (62.0-62.3
    /// against 62.9 at 36865). 16-bit layer norm keeps its loop twin
    /// (42.2-42.3 against 36.1-36.2 for s256x8_o2_p_g at 4096x50257).
    pub fn off_grid_kernel(&self) -> Option<NormSpec> {
        let layer_16 =
            self.op == NormOp::LayerNorm && !self.residual && self.input.info().bytes < 4;
        match self.layout {
            _ if self.general => None,
            NormLayout::Split if self.cluster.is_some() => Some(self.unclustered()),
            NormLayout::Loop if !layer_16 => Some(self.laid_out(MAX_COLS, false).ragged_twin()),
            _ => None,
        }
    }

    /// `for_cols`, with or without the measured cluster layouts.
    fn laid_out(&self, cols: u64, clusters: bool) -> NormSpec {
        let packs_for = |lanes: u64| {
            let p = cols.div_ceil(lanes * 4).next_power_of_two();
            p.clamp(1, 16) as u32
        };
        let measured = MEASURED_LAYOUTS
            .iter()
            .find(|m| m.serves(self) && m.takes(cols) && (clusters || m.form != Form::Cluster));
        let (layout, lanes, packs) = if let Some(m) = measured {
            (m.layout, m.lanes, m.packs)
        } else if cols <= 128 {
            // Up to 4 packs a lane and a group of lanes per row, several rows a
            // warp: at 262144 x 128 on the H100, 8 lanes x 4 packs beat a warp
            // of 1 pack for layer norm (f32: 95.6 % of copy against 65.3 %) and
            // the online softmax (bf16: 72.9 % against 58.7 %), and were within
            // 1.2 points of it for the other f32 row ops (BENCHMARKS.md, third
            // session, norm variants).
            let packs = cols.div_ceil(4).next_power_of_two().clamp(1, 4);
            let lanes = cols.div_ceil(4 * packs).next_power_of_two().clamp(1, 32);
            (NormLayout::Warp, lanes as u32, packs as u32)
        } else if cols <= 1024 {
            (NormLayout::Warp, 32, packs_for(32))
        } else if cols <= 4096 {
            (NormLayout::Block, 256, packs_for(256))
        } else if cols > 8192
            && cols <= 16384
            && self.op == NormOp::RmsNorm
            && !self.residual
            && self.input.info().bytes < 4
        {
            // 16-bit RMS norm: 256 threads of 16 packs, 94.6 % of copy against
            // 79.8 % for 512 x 8 (bf16 8192x16384, H100, 2026-11-24 run11);
            // softmax and layer norm measured slower so (93.3 %, 82.0 %).
            // Rows of exactly 16384 take 512 x 8's exact kernel at 2 blocks
            // an SM (MEASURED_LAYOUTS).
            (NormLayout::Block, 256, packs_for(256))
        } else if cols <= 32768 && !(self.op == NormOp::LayerNorm && self.input != self.output) {
            // 16 packs at 16384 < cols: one block of 512 holds the row, as
            // Triton's one-row-per-program kernel does (2974 GB/s at
            // 8192 x 32768 f32 on the H100, the issue's table) where the split
            // layout, waiting on the row's other blocks, reached 86.9 % of copy.
            // Layer norm between two dtypes spilled 152-176 bytes there
            // (ptxas 13.0) and stays split.
            (NormLayout::Block, 512, packs_for(512))
        } else {
            (NormLayout::Split, 512, 8)
        };
        let mut spec = NormSpec {
            layout,
            lanes,
            packs,
            prefetch: measured.is_some_and(|m| m.form.prefetches()),
            no_l1: measured.is_some_and(|m| m.form == Form::NoL1),
            exact: false,
            cluster: None,
            held: None,
            ..self.clone()
        };
        // A cluster of the row's chunks.
        if measured.is_some_and(|m| m.form == Form::Cluster) {
            spec.cluster = Some(cols.div_ceil(spec.chunk()).clamp(2, MAX_CLUSTER.into()) as u32);
        }
        // Exact where measured, and only for rows that fill the layout.
        spec.exact =
            measured.is_some_and(|m| m.form.exact()) && !spec.general && spec.fills_exactly(cols);
        // Safe softmax needs two exchanges across blocks; the split layout does one.
        if layout == NormLayout::Split && spec.algo == Some(SoftmaxAlgo::Safe) {
            spec.algo = Some(SoftmaxAlgo::Online);
        }
        spec
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

    fn functor(&self) -> String {
        match self.op {
            NormOp::Softmax | NormOp::LogSoftmax => format!(
                "rj_norm_softmax<{}, {}>",
                self.algo == Some(SoftmaxAlgo::Online),
                self.op == NormOp::LogSoftmax
            ),
            NormOp::LayerNorm | NormOp::RmsNorm => {
                // A prefetching kernel may read weight and bias from its
                // staged slots; a layer norm may exchange f64 sums.
                let f = self.op.info().functor;
                let cols = |staged| {
                    if staged {
                        "rj_cols_staged"
                    } else {
                        "rj_cols_global"
                    }
                };
                let cols = if self.held_cols() > 0 {
                    "Held"
                } else {
                    cols(self.staged_cols())
                };
                match (cols, self.f64_sums()) {
                    ("rj_cols_global", false) => format!("{f}<T>"),
                    (cols, false) => format!("{f}<T, {cols}>"),
                    (cols, true) => format!("{f}<T, {cols}, true>"),
                }
            }
        }
    }

    fn context(&self) -> NormContext {
        NormContext {
            name: self.name(),
            op: self.op.slug(),
            softmax: self.op.info().softmax,
            algo: self.algo.map_or("", |a| a.slug()),
            residual: self.residual,
            functor: self.functor(),
            input: self.input.slug(),
            output: self.output.slug(),
            // The input type's rounding policy: the residual sum is rounded to it.
            input_round: self.input.info().reduce_accum.unwrap_or("rj_acc_f32"),
            layout: self.layout.slug(),
            threads: self.threads(),
            min_blocks: self.min_blocks(),
            lanes: self.lanes,
            packs: self.packs,
            general: self.general,
            partial_bytes: self.partial_bytes(),
            fetch_ahead: self.fetch_ahead(),
            fetch_early: self.fetch_early(),
            fetch_wide: self.fetch_wide(),
            two_pass: self.two_pass(),
            flagged: self.flagged_states(),
            second_pass: self.second_pass(),
            split_asks_early: self.split_asks_early(),
            ticket_beside_epoch: self.ticket_beside_epoch(),
            one_wave: self.one_wave(),
            ticket_ahead: self.ticket_ahead(),
            sum_pair: self.sum_pair(),
            prefetch: self.prefetch,
            staged_cols: self.staged_cols(),
            row_shift: self.row_shift(),
            paired: self.paired_packs(),
            raw_rows: self.raw_rows(),
            grid: self.row_grid(),
            balanced: self.balances(),
            exact: self.exact,
            cluster: self.cluster.unwrap_or(0),
            stages_next: self.prefetch
                && (self.layout == NormLayout::Block || self.cluster.is_some()),
            stores_each_pack: self.stores_each_pack(),
            held: self.held_cols(),
            row_load: self.row_load(),
        }
    }
}

/// What the `norm.cu` template is rendered from.
#[derive(Serialize)]
struct NormContext {
    name: String,
    op: &'static str,
    softmax: bool,
    algo: &'static str,
    residual: bool,
    functor: String,
    input: &'static str,
    output: &'static str,
    input_round: &'static str,
    layout: &'static str,
    threads: u32,
    min_blocks: u32,
    lanes: u32,
    packs: u32,
    general: bool,
    partial_bytes: usize,
    fetch_ahead: u32,
    fetch_early: u32,
    fetch_wide: bool,
    two_pass: bool,
    /// Split rows whose states carry the launch's flag (all but a cluster's
    /// and the one-pass whole-pack kernels, which count arrivals).
    flagged: bool,
    /// Split rows that publish their states and finish them in a second pass
    /// (deferred `_p`, or two passes).
    second_pass: bool,
    /// A one-pass split row asks for its first slots as it publishes.
    split_asks_early: bool,
    /// A one-pass split row loads its epoch beside its first ticket.
    ticket_beside_epoch: bool,
    /// A one-pass split row of one wave takes its item from its block index.
    one_wave: bool,
    /// A two-pass split row takes its next ticket as it starts an item.
    ticket_ahead: bool,
    sum_pair: bool,
    prefetch: bool,
    staged_cols: bool,
    row_shift: bool,
    /// A thread's packs in adjacent pairs (`paired_packs`).
    paired: bool,
    /// The row held as raw 16-bit words (`raw_rows`).
    raw_rows: bool,
    /// Elements of the grid a general twin's chunks start on (`row_grid`).
    grid: u64,
    balanced: bool,
    exact: bool,
    /// Blocks of a cluster row, 0 for none.
    cluster: u32,
    /// A prefetching block that stages its next row (or chunk) as it reads
    /// this one: the block layout's, and a cluster row's.
    stages_next: bool,
    stores_each_pack: bool,
    /// Packs of the weight and bias held in registers (`held_cols`), 0 for none.
    held: u32,
    row_load: &'static str,
}

fn list(values: &[u32]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl KernelSpec for NormSpec {
    fn family(&self) -> Family {
        Family::Norm
    }

    fn validate(&self) -> Result<(), SpecError> {
        for (field, d) in [("input", self.input), ("output", self.output)] {
            if !d.info().store {
                return Err(SpecError::invalid(
                    field,
                    d,
                    format!(
                        "a norm kernel's input and output must be one of: {} (types with loads and stores; {d} is a reduction input only)",
                        DType::store_types()
                    ),
                ));
            }
        }
        let softmax = self.op.info().softmax;
        match (softmax, self.algo) {
            (true, None) => {
                return Err(SpecError::invalid(
                    "algo",
                    "none",
                    format!(
                        "{} needs an algorithm: one of {}",
                        self.op,
                        SoftmaxAlgo::allowed()
                    ),
                ));
            }
            (false, Some(a)) => {
                return Err(SpecError::invalid(
                    "algo",
                    a,
                    format!("{} takes no softmax algorithm", self.op),
                ));
            }
            _ => {}
        }
        if softmax && self.residual {
            return Err(SpecError::invalid(
                "residual",
                "true",
                format!(
                    "{} has no fused residual add (layernorm and rmsnorm do)",
                    self.op
                ),
            ));
        }
        let lanes_ok = match self.layout {
            NormLayout::Warp => GROUP_LANES,
            NormLayout::Block | NormLayout::Split | NormLayout::Loop => BLOCK_THREADS,
        };
        if !lanes_ok.contains(&self.lanes) {
            return Err(SpecError::invalid(
                "lanes",
                self.lanes,
                format!(
                    "the {} layout takes {} threads per row",
                    self.layout,
                    list(lanes_ok)
                ),
            ));
        }
        if !PACKS.contains(&self.packs) {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "a thread holds {} packs of 4 elements in registers",
                    list(PACKS)
                ),
            ));
        }
        if self.layout == NormLayout::Warp && self.packs > WARP_MAX_PACKS {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!("a lane of the warp layout holds at most {WARP_MAX_PACKS} packs"),
            ));
        }
        if let Some(b) = self.bound
            && (b == 0 || b * self.threads() > MAX_THREADS_PER_SM)
        {
            return Err(SpecError::invalid(
                "bound",
                b,
                format!(
                    "a launch bound is 1 to {} blocks of {} threads per SM",
                    MAX_THREADS_PER_SM / self.threads(),
                    self.threads()
                ),
            ));
        }
        if self.algo == Some(SoftmaxAlgo::Safe) {
            let why = match self.layout {
                NormLayout::Split => {
                    Some("the split layout exchanges one state per row across blocks")
                }
                NormLayout::Loop => {
                    Some("the loop layout reduces a row once, between its two passes")
                }
                NormLayout::Warp | NormLayout::Block => None,
            };
            if let Some(why) = why {
                return Err(SpecError::invalid(
                    "algo",
                    "safe",
                    format!("{why}: use the online softmax"),
                ));
            }
        }
        if self.layout == NormLayout::Loop && self.packs > GENERAL_MAX_PACKS {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "a loop's thread holds at most {GENERAL_MAX_PACKS} packs of a chunk (its general twin's)"
                ),
            ));
        }
        if let Some(n) = self.cluster {
            if self.layout != NormLayout::Split {
                return Err(SpecError::invalid(
                    "cluster",
                    n,
                    format!(
                        "only the split layout spreads a row over a cluster of blocks (this is the {} layout)",
                        self.layout
                    ),
                ));
            }
            if !(2..=MAX_CLUSTER).contains(&n) {
                return Err(SpecError::invalid(
                    "cluster",
                    n,
                    format!(
                        "a cluster row is 2 to {MAX_CLUSTER} blocks (the portable cluster size)"
                    ),
                ));
            }
            if self.packs > GENERAL_MAX_PACKS {
                return Err(SpecError::invalid(
                    "packs",
                    self.packs,
                    format!(
                        "a cluster row's thread holds at most {GENERAL_MAX_PACKS} packs (its general twin's)"
                    ),
                ));
            }
            if self.exact {
                return Err(SpecError::invalid(
                    "exact",
                    "true",
                    "a cluster row (`_c<n>`) cuts its rows in equal parts: it has no exact form",
                ));
            }
        }
        // `_x` and `_p` are forms of the block or split layout's whole-pack kernel;
        // `what` says what the form does.
        let whole_only = |field: &'static str, layouts: &str, what: &str| {
            SpecError::invalid(
                field,
                "true",
                format!(
                    "only the {layouts} whole-pack kernel {what} (this is the {} layout{})",
                    self.layout,
                    if self.general { ", general twin" } else { "" }
                ),
            )
        };
        if self.exact && (self.layout == NormLayout::Warp || self.general) {
            return Err(whole_only(
                "exact",
                "block or split layout's",
                "has an exact-length form",
            ));
        }
        if self.prefetch {
            if matches!(self.layout, NormLayout::Warp | NormLayout::Loop) {
                return Err(whole_only(
                    "prefetch",
                    "block or split layout's",
                    "stages its next row or chunk",
                ));
            }
            if self.general && self.layout != NormLayout::Split {
                return Err(SpecError::invalid(
                    "prefetch",
                    "true",
                    "of the general twins only the split layout's stages its chunks (`_p_g`); the block layout's loads its rows directly",
                ));
            }
            if self.no_l1 {
                return Err(SpecError::invalid(
                    "no_l1",
                    "true",
                    "a prefetching block stages its rows with cp.async, which takes no L1-bypassing load form for 8-byte packs: ask for one or the other",
                ));
            }
            let bytes = self.stage_bytes();
            if bytes > MAX_STAGE_BYTES {
                return Err(SpecError::invalid(
                    "prefetch",
                    format!("{bytes} bytes of staged row"),
                    format!(
                        "a block stages at most {MAX_STAGE_BYTES} bytes of shared memory: ({} row(s) x {} stream(s) + {} vector(s)) x {} threads x {} packs x 4 {} elements",
                        self.staged_rows(),
                        self.streams(),
                        self.staged_vectors(),
                        self.lanes,
                        self.packs,
                        self.input
                    ),
                ));
            }
        }
        if let Some(h) = self.held {
            if !self.can_hold_cols() {
                return Err(SpecError::invalid(
                    "held",
                    h,
                    "only a deferred split kernel's whole-pack form (`_p`, no `_c<n>` or `_g`) of layer or RMS norm holds its weight and bias in registers (`_h<n>`)",
                ));
            }
            if h > self.packs {
                return Err(SpecError::invalid(
                    "held",
                    h,
                    format!(
                        "a thread holds 0 to {} packs of the weight and bias (its packs a chunk)",
                        self.packs
                    ),
                ));
            }
        }
        Ok(())
    }

    fn name(&self) -> String {
        let mut s = format!("{}_{}", Family::Norm.slug(), self.op);
        if let Some(a) = self.algo {
            s += &format!("_{a}");
        }
        if self.residual {
            s += "_res";
        }
        format!(
            "{s}_{}_{}_{}{}x{}{}{}{}{}{}{}{}",
            self.input,
            self.output,
            self.layout.info().letter,
            self.lanes,
            self.packs,
            self.bound.map_or(String::new(), |b| format!("_o{b}")),
            self.cluster.map_or(String::new(), |n| format!("_c{n}")),
            if self.prefetch { "_p" } else { "" },
            if self.no_l1 { "_n" } else { "" },
            if self.exact { "_x" } else { "" },
            if self.general { "_g" } else { "" },
            self.held.map_or(String::new(), |h| format!("_h{h}"))
        )
    }

    fn min_arch(&self) -> Arch {
        // max.NaN and the 16-bit cvt are sm_80+; acquire loads and nanosleep sm_70+.
        // A cluster row's barrier and distributed shared memory are sm_90+.
        [
            if self.cluster.is_some() {
                Arch::SM90
            } else {
                Arch::SM80
            },
            self.input.info().min_arch,
            self.output.info().min_arch,
        ]
        .into_iter()
        .max()
        .unwrap_or(Arch::SM80)
    }

    fn render_body(&self) -> Result<String, SpecError> {
        render::render_body(self, &self.context())
    }
}

impl fmt::Display for NormSpec {
    /// The kernel name; it parses back with `FromStr`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for NormSpec {
    type Err = SpecError;

    /// Parses a kernel name, e.g. `norm_softmax_online_bf16_bf16_w32x4` or
    /// `norm_rmsnorm_res_f16_f16_b256x2`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let parse_err = |rule: &str| SpecError::Parse {
            what: "norm kernel name",
            input: s.to_string(),
            rule: rule.to_string(),
        };
        let format = "expected norm_<op>[_<algo>][_res]_<input>_<output>_<w|b|s|l><lanes>x<packs>[_o<blocks per SM>][_c<cluster blocks>][_p][_n][_x][_g][_h<packs held>], e.g. norm_softmax_online_bf16_bf16_w32x4";
        let rest = s
            .strip_prefix(Family::Norm.slug())
            .and_then(|r| r.strip_prefix('_'))
            .ok_or_else(|| parse_err(format))?;
        let mut parts: Vec<&str> = rest.split('_').collect();
        let mut held = None;
        if let Some(h) = parts.last().and_then(|p| p.strip_prefix('h')) {
            held = Some(h.parse::<u32>().map_err(|_| parse_err(format))?);
            parts.pop();
        }
        // The flag suffixes, last first: `_g`, `_x`, `_n`, `_p`.
        let mut suffix = |flag: &str| {
            let present = parts.last() == Some(&flag);
            if present {
                parts.pop();
            }
            present
        };
        let general = suffix("g");
        let exact = suffix("x");
        let no_l1 = suffix("n");
        let prefetch = suffix("p");
        let mut cluster = None;
        if let Some(n) = parts.last().and_then(|p| p.strip_prefix('c')) {
            cluster = Some(n.parse::<u32>().map_err(|_| parse_err(format))?);
            parts.pop();
        }
        let mut bound = None;
        if let Some(b) = parts.last().and_then(|p| p.strip_prefix('o')) {
            bound = Some(b.parse::<u32>().map_err(|_| parse_err(format))?);
            parts.pop();
        }
        if parts.len() < 4 {
            return Err(parse_err(format));
        }
        let layout_part = parts.pop().ok_or_else(|| parse_err(format))?;
        let output: DType = parts.pop().ok_or_else(|| parse_err(format))?.parse()?;
        let input: DType = parts.pop().ok_or_else(|| parse_err(format))?.parse()?;
        let op: NormOp = parts.first().ok_or_else(|| parse_err(format))?.parse()?;
        let mut algo = None;
        let mut residual = false;
        for p in &parts[1..] {
            if *p == "res" && !residual {
                residual = true;
            } else if algo.is_none() && !residual {
                algo = Some(p.parse::<SoftmaxAlgo>()?);
            } else {
                return Err(parse_err(format));
            }
        }
        let mut chars = layout_part.chars();
        let layout = chars
            .next()
            .and_then(NormLayout::from_letter)
            .ok_or_else(|| parse_err(format))?;
        let (lanes, packs) = chars
            .as_str()
            .split_once('x')
            .and_then(|(l, p)| Some((l.parse::<u32>().ok()?, p.parse::<u32>().ok()?)))
            .ok_or_else(|| parse_err(format))?;
        let spec = NormSpec {
            op,
            algo,
            residual,
            input,
            output,
            layout,
            lanes,
            packs,
            general,
            bound,
            prefetch,
            no_l1,
            exact,
            cluster,
            held,
        };
        spec.validate()?;
        if spec.name() != s {
            return Err(parse_err(&format!(
                "not the canonical spelling; did you mean {}?",
                spec.name()
            )));
        }
        Ok(spec)
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
        for packs in [2, 4] {
            push(NormLayout::Warp, lanes, packs, false, false);
        }
    }
    // Smaller blocks a row: more rows an SM in flight (16-bit rows).
    for (lanes, packs) in [(128, 4), (128, 8)] {
        push(NormLayout::Block, lanes, packs, false, false);
    }
    for (lanes, packs) in [
        (256, 2),
        (256, 4),
        (256, 8),
        (256, 16),
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
    // at all four ops measured, BENCHMARKS.md fifth session of 2026-11-25),
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
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for ops in row_ops() {
            for input in DType::stores() {
                for output in DType::stores() {
                    let base = NormSpec::with(ops, input, output, 100);
                    for s in variants(&base) {
                        assert_eq!(s.name().parse::<NormSpec>().unwrap(), s, "{}", s.name());
                    }
                }
            }
        }
    }

    /// Held columns (`_h<n>`): the rule's kernels hold every pack but where
    /// `HELD_CAPS` caps them, an explicit count parses back and wins, the
    /// twins take the rule again, and kernels that cannot hold refuse it.
    #[test]
    fn deferred_kernels_hold_their_columns_by_rule_or_name() {
        let layer = (NormOp::LayerNorm, None, false);
        let rms = (NormOp::RmsNorm, None, false);
        let rms_res = (NormOp::RmsNorm, None, true);
        for (ops, d, cols, held) in [
            (layer, DType::F32, 1 << 20, 7),
            (layer, DType::BF16, 1 << 20, 16),
            (layer, DType::F16, 1 << 20, 4),
            ((NormOp::LayerNorm, None, true), DType::F32, 1 << 20, 4),
            (rms, DType::F32, 1 << 20, 8),
            (rms, DType::BF16, 1 << 20, 0),
            (rms_res, DType::F32, 1 << 20, 0),
            // Staged in shared memory, or not split: nothing held; f32
            // layer norm holds what it would stage.
            (layer, DType::BF16, 1_000_000, 0),
            (layer, DType::F32, 4096, 0),
            (layer, DType::F32, 1_000_000, 4),
        ] {
            let s = NormSpec::with(ops, d, d, cols);
            assert_eq!(s.held_cols(), held, "{}", s.name());
            assert!(!s.name().contains("_h"), "{}", s.name());
            assert_eq!(s.general_twin().held_cols(), 0, "{}", s.name());
            assert_eq!(s.staged_twin_for_cols(cols).held_cols(), 0, "{}", s.name());
        }
        // f32 layer norm + residual's exact kernel exchanges f64 sums beside
        // its held columns; its ragged twin Chan's states.
        let res = NormSpec::with(
            (NormOp::LayerNorm, None, true),
            DType::F32,
            DType::F32,
            1 << 20,
        );
        assert!(res.exact && res.f64_sums() && res.held_cols() == 4);
        assert!(!res.ragged_twin().f64_sums());
        let named: NormSpec = "norm_layernorm_bf16_bf16_s512x16_p_x_h5".parse().unwrap();
        assert_eq!(named.held_cols(), 5);
        assert_eq!(named.name(), "norm_layernorm_bf16_bf16_s512x16_p_x_h5");
        assert!(
            named
                .render_body()
                .unwrap()
                .contains("rj_cols_held<T, 2, 5>")
        );
        let none: NormSpec = "norm_rmsnorm_f32_f32_s512x8_p_h0".parse().unwrap();
        assert_eq!(none.held_cols(), 0);
        assert!(!none.render_body().unwrap().contains("Held"));
        assert_eq!(named.ragged_twin().held, None);
        // Held by name in place of staged: no shared memory for the columns.
        let staged: NormSpec = "norm_layernorm_bf16_bf16_s512x8_p".parse().unwrap();
        let held: NormSpec = "norm_layernorm_bf16_bf16_s512x8_p_h8".parse().unwrap();
        assert!(staged.staged_cols() && !held.staged_cols());
        assert_eq!(
            staged.stage_bytes(),
            held.stage_bytes() + 2 * staged.chunk() * 2
        );
        let f32_layer = NormSpec::with(layer, DType::F32, DType::F32, 1_000_000);
        assert!(f32_layer.cols_fit_staged() && !f32_layer.staged_cols());
        for (bad, rule) in [
            ("norm_layernorm_f32_f32_s512x8_p_x_h9", "0 to 8 packs"),
            (
                "norm_softmax_online_f32_f32_s512x8_p_x_h1",
                "layer or RMS norm",
            ),
            ("norm_layernorm_bf16_bf16_s512x8_g_h1", "whole-pack form"),
            (
                "norm_layernorm_bf16_bf16_b512x8_p_h1",
                "deferred split kernel",
            ),
            ("norm_layernorm_bf16_bf16_s512x16_p_x_hx", "expected norm_"),
        ] {
            let e = bad.parse::<NormSpec>().unwrap_err().to_string();
            assert!(e.contains(rule), "{bad}: {e}");
        }
    }

    /// A cluster row (`_c<n>`): its name parses back, it needs sm_90, its
    /// rows are `n` equal chunks of at most the layout's, its grid whole
    /// clusters and its workspace nothing; its general twin keeps the cluster.
    #[test]
    fn cluster_rows_plan_whole_clusters_of_equal_chunks() {
        for name in [
            "norm_layernorm_bf16_bf16_s256x8_c7_p",
            "norm_softmax_online_f32_f32_s512x8_o1_c2",
            "norm_rmsnorm_res_bf16_bf16_s512x4_c5_p_g",
        ] {
            let s: NormSpec = name.parse().unwrap();
            assert_eq!(s.name(), name);
            assert_eq!(s.min_arch(), Arch::SM90, "{name}");
            let n = u64::from(s.cluster.unwrap());
            let cap = s.capacity().unwrap();
            assert_eq!(cap, n * s.chunk() - if s.general { 3 } else { 0 });
            for cols in [1, 5, cap / 2 + 1, cap - 1, cap] {
                let p = s.plan(4096, cols, 132, 2);
                assert_eq!(u64::from(p.splits), n, "{name} {cols}");
                assert_eq!(p.grid % p.splits, 0, "{name} {cols}");
                assert!(p.grid >= p.splits && p.grid <= 264, "{name} {cols}");
                assert_eq!((p.counters, p.partials), (0, 0), "{name}");
                let span = u64::from(p.span);
                assert!(span.is_multiple_of(4) && span <= s.chunk(), "{name} {cols}");
                assert!(
                    span * n >= cols + if s.general { 3 } else { 0 },
                    "{name} {cols}"
                );
            }
            let g = s.general_twin();
            assert_eq!(
                (g.cluster, g.general, g.layout),
                (s.cluster, true, s.layout),
                "{name}"
            );
        }
        // A cluster is as resident as its blocks: fewer rows than clusters
        // take a cluster each.
        let s: NormSpec = "norm_layernorm_bf16_bf16_s256x8_c7_p".parse().unwrap();
        assert_eq!(s.plan(3, 50_000, 132, 3).grid, 21);
        for (bad, rule) in [
            (
                "norm_layernorm_bf16_bf16_b256x8_c2",
                "only the split layout",
            ),
            ("norm_layernorm_bf16_bf16_s256x8_c1", "2 to 8 blocks"),
            ("norm_layernorm_bf16_bf16_s256x8_c9", "2 to 8 blocks"),
            ("norm_layernorm_bf16_bf16_s512x16_c2", "at most 8 packs"),
            ("norm_layernorm_bf16_bf16_s256x8_c4_x", "no exact form"),
        ] {
            let e = bad.parse::<NormSpec>().unwrap_err().to_string();
            assert!(e.contains(rule), "{bad}: {e}");
        }
    }

    /// A loop row (`l<threads>x<packs>`): any length, one block a row, its
    /// general twin keeps the layout (without `_x`), and the forms it cannot
    /// take are errors naming the rule.
    #[test]
    fn loop_rows_take_any_length_in_one_block() {
        let l: NormSpec = "norm_layernorm_bf16_bf16_l512x4".parse().unwrap();
        assert_eq!((l.layout, l.lanes, l.packs), (NormLayout::Loop, 512, 4));
        assert_eq!(l.capacity(), None);
        assert_eq!(l.min_blocks(), 2);
        assert_eq!(l.threads(), 512);
        let plan = l.plan(100, 1 << 20, 132, 2);
        assert_eq!((plan.grid, plan.splits, plan.span), (100, 1, 1 << 20));
        assert_eq!((plan.counters, plan.partials), (0, 0));
        assert_eq!(l.general_twin().name(), "norm_layernorm_bf16_bf16_l512x4_g");
        let x: NormSpec = "norm_layernorm_bf16_bf16_l512x4_x".parse().unwrap();
        assert!(x.fills_exactly(5 * 8192) && !x.fills_exactly(5 * 8192 + 4));
        assert_eq!(x.general_twin(), l.general_twin());
        assert_eq!(x.ragged_twin(), l);
        for (bad, field, rule) in [
            (
                "norm_softmax_safe_f32_f32_l512x4",
                "algo",
                "reduces a row once",
            ),
            ("norm_layernorm_f32_f32_l512x16", "packs", "at most 8 packs"),
            (
                "norm_layernorm_f32_f32_l512x4_p",
                "prefetch",
                "block or split",
            ),
            (
                "norm_layernorm_f32_f32_l1024x4",
                "lanes",
                "64, 128, 256, 512",
            ),
        ] {
            let e = bad.parse::<NormSpec>().unwrap_err();
            assert!(
                matches!(&e, SpecError::Invalid { field: f, .. } if *f == field)
                    && e.to_string().contains(rule),
                "{bad}: {e}"
            );
        }
    }

    /// Calls off the pack grid: a cluster row hands them to its unclustered
    /// kernel, a loop row (but 16-bit layer norm's) to the long rows' split
    /// kernel, and a general kernel runs them itself.
    #[test]
    fn off_grid_calls_go_where_measured_faster() {
        let named = |n: &str| n.parse::<NormSpec>().unwrap();
        let off = |n: &str| named(n).off_grid_kernel().map(|s| s.name());
        for (kernel, to) in [
            (
                "norm_layernorm_f32_f32_l512x8",
                Some("norm_layernorm_f32_f32_s512x4_p"),
            ),
            (
                "norm_layernorm_f32_bf16_l512x8",
                Some("norm_layernorm_f32_bf16_s512x4_p"),
            ),
            (
                "norm_rmsnorm_bf16_bf16_l512x4",
                Some("norm_rmsnorm_bf16_bf16_s512x16_p"),
            ),
            (
                "norm_layernorm_res_bf16_bf16_l512x4",
                Some("norm_layernorm_res_bf16_bf16_s512x8_p"),
            ),
            ("norm_layernorm_bf16_bf16_l512x4", None),
            (
                "norm_layernorm_bf16_bf16_s256x8_c7_p",
                Some("norm_layernorm_bf16_bf16_l512x4"),
            ),
            ("norm_layernorm_bf16_bf16_s256x8_c7_p_g", None),
            ("norm_rmsnorm_bf16_bf16_l512x4_g", None),
            ("norm_layernorm_bf16_bf16_b512x16_x", None),
        ] {
            assert_eq!(off(kernel).as_deref(), to, "{kernel}");
        }
    }

    /// Rows between f32 and a 16-bit type take the layouts measured for their
    /// direction, and the measured cluster rows hold their whole range.
    #[test]
    fn measured_layouts_by_direction_and_clusters() {
        // (op, input, output, cols, the kernel's layout: its name past the types)
        let layout = |op, i, o, cols| {
            let s = NormSpec::with(op, i, o, cols);
            let types = format!("_{}_{}_", s.input, s.output);
            s.name().split_once(&types).map(|(_, l)| l.to_string())
        };
        let layer = (NormOp::LayerNorm, None, false);
        let soft = (NormOp::Softmax, Some(SoftmaxAlgo::Online), false);
        let (b, f) = (DType::BF16, DType::F32);
        for (op, i, o, cols, want) in [
            (layer, b, f, 12_288, "s256x8_c2_p"),
            (layer, f, b, 20_000, "s512x8_c2_p"),
            (layer, f, b, 16_384, "b512x8_x"),
            (layer, f, b, 16_380, "s256x8_c2_p"),
            (layer, b, f, 50_256, "s256x8_p"),
            (layer, b, f, 1 << 20, "s512x8_p"),
            (layer, f, b, 1 << 20, "s512x4_p"),
            (layer, f, b, 50_256, "l512x8"),
            (layer, f, b, 57_344, "s256x8_c7_p"),
            (layer, f, b, 57_340, "l512x8"),
            (layer, f, b, 65_536, "l512x8"),
            (soft, b, f, 50_256, "s256x8_p"),
            (soft, b, f, 1 << 20, "s512x8_p"),
            (soft, f, b, 50_256, "s512x4_p"),
            (soft, f, b, 1 << 20, "s512x8_p"),
            (layer, b, b, 36_864, "l512x4"),
            (layer, b, b, 45_000, "l512x4"),
            (layer, b, b, 49_152, "s512x8_p_x"),
            (layer, b, b, 50_256, "l512x4"),
            (layer, b, b, 57_345, "s512x8_p"),
            ((NormOp::RmsNorm, None, false), b, b, 40_000, "l512x4"),
            ((NormOp::RmsNorm, None, false), b, b, 45_000, "s512x16_p"),
            ((NormOp::LayerNorm, None, true), b, b, 33_000, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 36_864, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 49_152, "s512x8_p_x"),
            ((NormOp::LayerNorm, None, true), b, b, 57_344, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 57_348, "s512x8_p"),
            ((NormOp::LayerNorm, None, true), f, f, 33_000, "l512x8"),
            ((NormOp::LayerNorm, None, true), f, f, 36_864, "s512x4_p"),
            ((NormOp::RmsNorm, None, true), b, b, 33_000, "l512x4"),
            ((NormOp::RmsNorm, None, true), b, b, 36_864, "s512x8_p"),
            ((NormOp::RmsNorm, None, true), f, f, 36_864, "l512x8"),
            ((NormOp::RmsNorm, None, true), f, f, 50_256, "s512x4_p"),
            (soft, b, f, 32_768, "b512x16_x"),
            (layer, f, b, 128, "w16x2"),
            (layer, b, f, 4096, "b256x4_x"),
            (layer, b, f, 4000, "b256x4"),
            (layer, f, f, 36_864, "l512x8"),
            (layer, f, f, 40_000, "s512x4_p"),
            (layer, f, f, 50_256, "l512x8"),
            (layer, f, f, 57_344, "s512x4_p"),
            // Two 16-bit types: the ladder's rule.
            (layer, b, DType::F16, 50_256, "s512x8"),
        ] {
            assert_eq!(
                layout(op, i, o, cols).as_deref(),
                Some(want),
                "{op:?} {i} -> {o} at {cols}"
            );
        }
        let c: NormSpec = "norm_layernorm_bf16_bf16_s256x8_c7_p".parse().unwrap();
        assert_eq!(c.unclustered().name(), "norm_layernorm_bf16_bf16_l512x4");
        let c: NormSpec = "norm_layernorm_f32_bf16_s256x8_c7_p".parse().unwrap();
        assert_eq!(c.unclustered().name(), "norm_layernorm_f32_bf16_s512x4_p");
        let spec = |m: &MeasuredLayout, input, output| NormSpec {
            op: m.op,
            algo: m.algo,
            residual: m.residual,
            input,
            output,
            ..NormSpec::default()
        };
        for m in MEASURED_LAYOUTS.iter().filter(|m| m.form == Form::Cluster) {
            let (i, o) = match m.types {
                LayoutTypes::Widening => (b, f),
                LayoutTypes::Narrowing => (f, b),
                LayoutTypes::Sixteen => (b, b),
                other => panic!("no cluster rows measured for {other:?}"),
            };
            for cols in [*m.cols.start(), *m.cols.end()] {
                let s = spec(m, i, o).for_cols(cols);
                assert!(s.cluster.is_some() && s.validate().is_ok(), "{}", s.name());
                assert!(s.capacity().unwrap() >= cols, "{} {cols}", s.name());
                assert!(s.unclustered().cluster.is_none(), "{}", s.name());
            }
        }
    }

    #[test]
    fn an_exact_kernel_takes_its_own_bound() {
        let exact: NormSpec = "norm_rmsnorm_bf16_bf16_b512x8_x".parse().unwrap();
        assert_eq!(exact.min_blocks(), 2);
        assert_eq!(exact.ragged_twin().min_blocks(), 1);
        // Where it has no entry, the layout's.
        let softmax: NormSpec = "norm_softmax_online_bf16_bf16_b512x8_x".parse().unwrap();
        assert_eq!(softmax.min_blocks(), softmax.ragged_twin().min_blocks());
    }

    /// A split row's chunks: whole packs, at most the layout's chunk, covering
    /// the row (a general twin's shift included), and in a kernel that
    /// balances them as even as packs allow (a chunk at most 3 elements over
    /// an exact share), else the layout's; what the kernel's `span`
    /// parameter gets, through `plan`.
    #[test]
    fn split_spans_cut_rows_in_equal_parts() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut split_kernels, mut balanced) = (0, 0);
        for ops in row_ops() {
            for d in [DType::F32, DType::BF16] {
                for s in variants(&NormSpec::with(ops, d, d, 1 << 20))
                    .into_iter()
                    .flat_map(|s| [s.clone(), s.general_twin()])
                    .filter(|s| s.layout == NormLayout::Split)
                {
                    split_kernels += 1;
                    let chunk = s.chunk();
                    let mut cols_set = vec![
                        1,
                        2,
                        3,
                        4,
                        chunk - 3,
                        chunk,
                        chunk + 1,
                        50257,
                        1_000_003,
                        1 << 20,
                    ];
                    cols_set.extend((0..8).map(|_| 1 + next() % (1 << 20)));
                    for cols in cols_set {
                        let reach = if s.general {
                            cols + if s.paired_packs() { 7 } else { 3 }
                        } else {
                            cols
                        };
                        let (splits, span) = (s.splits_for(cols), s.split_span(cols));
                        let what = format!("{} at {cols}: {splits} x {span}", s.name());
                        assert!(span % 4 == 0 && span <= chunk, "{what}");
                        assert!(splits * span >= reach, "{what}");
                        if s.balances() {
                            balanced += 1;
                            assert!(span < reach.div_ceil(splits) + 4, "{what}");
                        } else {
                            assert_eq!(span, chunk, "{what}");
                        }
                        let plan = s.plan(3, cols, 132, 1);
                        assert_eq!(
                            (u64::from(plan.splits), u64::from(plan.span)),
                            (splits, span),
                            "{what}"
                        );
                    }
                }
            }
        }
        assert!(
            split_kernels > 20 && balanced > 0,
            "{split_kernels} {balanced}"
        );
        // The twins the launcher takes: short ones balance, long and direct
        // ones do not.
        let soft = NormSpec::with(row_ops()[1], DType::BF16, DType::BF16, 1 << 20);
        assert!(soft.prefetch && soft.balances(), "{}", soft.name());
        assert!(soft.staged_twin_for_cols(50257).balances());
        assert!(!soft.staged_twin().balances() && !soft.general_twin().balances());
    }

    #[test]
    fn load_only_types_are_refused_naming_the_value_and_the_rule() {
        let ops = row_ops()[0];
        for bad in [DType::E4M3, DType::E5M2, DType::I8, DType::I64] {
            for (spec, field) in [
                (NormSpec::with(ops, bad, DType::F32, 100), "input"),
                (NormSpec::with(ops, DType::BF16, bad, 100), "output"),
            ] {
                let e = spec.validate().unwrap_err();
                assert!(
                    matches!(e, SpecError::Invalid { field: f, .. } if f == field),
                    "{e:?}"
                );
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("invalid {field} = {bad}"))
                        && msg.contains("must be one of: f32, bf16, f16"),
                    "{msg}"
                );
            }
        }
    }

    #[test]
    fn bad_names_and_specs_are_refused_with_the_rule() {
        for bad in [
            "norm_softmax_bf16_bf16_w32x4",
            "norm_rmsnorm_online_bf16_bf16_w32x4",
            "norm_softmax_online_res_f32_f32_w32x4",
            "norm_softmax_online_f32_f32_w64x4",
            "norm_softmax_online_f32_f32_b32x4",
            "norm_softmax_online_f32_f32_w32x3",
            "norm_softmax_safe_f32_f32_s512x8",
            "norm_softmax_online_f32_f32_q32x4",
            "norm_softmax_online_f32_f32_w32",
            "norm_layernorm_res_res_f32_f32_b256x4",
            "norm_softmax_online_f64_f32_w32x4",
        ] {
            assert!(bad.parse::<NormSpec>().is_err(), "{bad}");
        }
        let e = "norm_softmax_safe_f32_f32_s512x8"
            .parse::<NormSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("online"), "{e}");
    }

    #[test]
    fn the_ladder_holds_every_row_length() {
        let base = NormSpec::default();
        for cols in [
            1u64, 3, 4, 5, 31, 128, 129, 1000, 1024, 1025, 4096, 4097, 16384,
        ]
        .into_iter()
        .chain([16385, 32768, 1_000_003, 1 << 20])
        {
            let s = base.for_cols(cols);
            s.validate().unwrap();
            if let Some(c) = s.capacity() {
                assert!(c >= cols, "{cols}: {}", s.name());
                // Never more than twice the registers the row needs (bar one pack).
                assert!(
                    c < 2 * cols.max(4) + 4 * u64::from(s.lanes),
                    "{cols}: {}",
                    s.name()
                );
            } else {
                assert_eq!(s.layout, NormLayout::Split);
            }
        }
        let safe = NormSpec {
            algo: Some(SoftmaxAlgo::Safe),
            ..base
        };
        assert_eq!(safe.for_cols(1 << 20).algo, Some(SoftmaxAlgo::Online));
        assert_eq!(safe.for_cols(1 << 10).algo, Some(SoftmaxAlgo::Safe));
    }

    #[test]
    fn whole_packs_need_cols_ld_and_every_buffer_aligned() {
        let aligned = [(0x1000, 2), (0x2008, 2), (0x3010, 4)];
        assert!(NormSpec::whole_packs_fit(4096, 4096, aligned));
        assert!(NormSpec::whole_packs_fit(4, 8, aligned));
        // cols or ld off a multiple of 4.
        assert!(!NormSpec::whole_packs_fit(4097, 4100, aligned));
        assert!(!NormSpec::whole_packs_fit(4096, 4098, aligned));
        // One buffer one element off its 4-element boundary (bf16: 8 bytes).
        assert!(!NormSpec::whole_packs_fit(
            4096,
            4096,
            [(0x1000, 2), (0x2002, 2)]
        ));
        // f32's pack is 16 bytes: 8-byte alignment is not enough.
        assert!(!NormSpec::whole_packs_fit(4096, 4096, [(0x1008, 4)]));
        // The general twin differs only in the flag and the name.
        let s = NormSpec::default().for_cols(4096);
        let g = s.general_twin();
        assert_eq!((g.general, g.name()), (true, format!("{}_g", s.name())));
        assert_eq!(g.name().parse::<NormSpec>().unwrap(), g);
    }

    #[test]
    fn plans() {
        // The ladder's rule at 128 columns (16-bit rows; f32 rows of 65..128
        // take a measured warp of one pack a lane): 8 lanes x 4 packs, 32
        // rows a 256-thread block.
        let bf16 = NormSpec {
            input: DType::BF16,
            output: DType::BF16,
            ..NormSpec::default()
        };
        let s = bf16.for_cols(128);
        assert_eq!(s.name(), "norm_softmax_online_bf16_bf16_w8x4");
        let p = s.plan(262_144, 128, 132, 8);
        assert_eq!((p.grid, p.splits, p.counters), (262_144 / 32, 1, 0));
        assert_eq!(
            NormSpec::default().for_cols(128).name(),
            "norm_softmax_online_f32_f32_w32x1"
        );
        // Short rows: fewer packs before fewer lanes; one lane of 1 pack at 4.
        let names: Vec<String> = [4, 5, 16, 17, 64, 100]
            .iter()
            .map(|&c| {
                let s = bf16.for_cols(c);
                format!("{}x{}", s.lanes, s.packs)
            })
            .collect();
        assert_eq!(names, ["1x1", "1x2", "1x4", "2x4", "4x4", "8x4"]);
        // Parsing keeps the bound and the general twin.
        let t: NormSpec = "norm_rmsnorm_bf16_bf16_b256x4_o3_g".parse().unwrap();
        assert_eq!((t.bound, t.general, t.min_blocks()), (Some(3), true, 3));
        assert_eq!(t.name(), "norm_rmsnorm_bf16_bf16_b256x4_o3_g");
        assert!(
            "norm_rmsnorm_bf16_bf16_b512x4_o5"
                .parse::<NormSpec>()
                .is_err()
        );
        let b = NormSpec::default().for_cols(4096);
        assert_eq!(b.plan(32768, 4096, 132, 8).grid, 32768);
        // The measured exceptions, and only for their dtypes and lengths.
        let layout = |op, residual, d, cols| {
            let s = NormSpec::with((op, None, residual), d, d, cols);
            format!("{}{}x{}", s.layout.info().letter, s.lanes, s.packs)
        };
        assert_eq!(layout(NormOp::RmsNorm, false, DType::BF16, 4096), "b128x8");
        assert_eq!(layout(NormOp::RmsNorm, false, DType::F16, 3000), "b128x8");
        assert_eq!(layout(NormOp::RmsNorm, false, DType::F32, 4096), "b256x4");
        assert_eq!(layout(NormOp::RmsNorm, false, DType::BF16, 2048), "b256x2");
        assert_eq!(layout(NormOp::LayerNorm, false, DType::F32, 128), "w16x2");
        assert_eq!(layout(NormOp::LayerNorm, false, DType::BF16, 128), "w8x4");
        // 16-bit layer norm w8x4 at the measured bound 5; f32 at the sweep's 4.
        let bound = |name: &str| name.parse::<NormSpec>().unwrap().min_blocks();
        assert_eq!(bound("norm_layernorm_bf16_bf16_w8x4"), 5);
        assert_eq!(bound("norm_layernorm_f16_f16_w8x4"), 5);
        assert_eq!(bound("norm_layernorm_f32_f32_w8x4"), 4);
        assert_eq!(layout(NormOp::RmsNorm, true, DType::BF16, 128), "w16x4");
        assert_eq!(layout(NormOp::RmsNorm, true, DType::BF16, 64), "w4x4");
        // Deferred split rows (`_p`): softmax and log-softmax of every dtype
        // (safe softmax too: the split layout runs it online), 16-bit layer
        // norm with and without the residual (the latter since its f64 sums),
        // RMS norm with and without it, f32 layer norm with and without it;
        // in their exact form (`_p_x`) where measured faster and the row is a
        // whole number of chunks (fifteenth session), else `_p`.
        for (op, algo) in [
            (NormOp::Softmax, SoftmaxAlgo::Online),
            (NormOp::Softmax, SoftmaxAlgo::Safe),
            (NormOp::LogSoftmax, SoftmaxAlgo::Online),
        ] {
            for d in [DType::BF16, DType::F16, DType::F32] {
                let s = NormSpec::with((op, Some(algo), false), d, d, 1 << 20);
                assert_eq!(
                    s.name(),
                    format!("norm_{op}_online_{d}_{d}_s512x8_p_x"),
                    "{op} {algo} {d}"
                );
                assert_eq!(
                    s.ragged_twin().name(),
                    format!("norm_{op}_online_{d}_{d}_s512x8_p")
                );
                let ragged = NormSpec::with((op, Some(algo), false), d, d, (1 << 20) + 4);
                assert_eq!(ragged, s.ragged_twin());
                assert_eq!(
                    s.general_twin().name(),
                    format!("norm_{op}_online_{d}_{d}_s512x8_g")
                );
            }
        }
        // Softmax rows of 32769..=65536 where measured: 16-bit softmax in
        // 256-thread blocks but where s512x8's chunks divide the row, 16-bit
        // log-softmax in s512x4 but there, f32 both in s512x4.
        let soft =
            |op, d, cols| NormSpec::with((op, Some(SoftmaxAlgo::Online), false), d, d, cols).name();
        for (op, d, cols, want) in [
            (NormOp::Softmax, DType::BF16, 50256, "s256x8_p"),
            (NormOp::Softmax, DType::F16, 57344, "s256x8_p_x"),
            (NormOp::Softmax, DType::BF16, 49152, "s512x8_p_x"),
            (NormOp::Softmax, DType::BF16, 65536, "s512x8_p_x"),
            (NormOp::LogSoftmax, DType::BF16, 40000, "s512x4_p"),
            (NormOp::LogSoftmax, DType::BF16, 49152, "s512x8_p_x"),
            (NormOp::Softmax, DType::F32, 65536, "s512x4_p_x"),
            (NormOp::LogSoftmax, DType::F32, 36864, "s512x4_p"),
            (NormOp::Softmax, DType::F32, 65540, "s512x8_p"),
        ] {
            assert_eq!(
                soft(op, d, cols),
                format!("norm_{op}_online_{d}_{d}_{want}"),
                "{cols}"
            );
        }
        let long_spec = |op, residual, d| NormSpec::with((op, None, residual), d, d, 1 << 20);
        let long = |op, residual, d| long_spec(op, residual, d).name();
        let long_twin = |op, residual, d| long_spec(op, residual, d).general_twin().name();
        // Layer norm's rows of a whole number of larger chunks (twenty-seventh
        // session): 16-bit s512x16_p_x from 65536, f32 s512x8_p_x at 65536
        // and 2^20; other rows as before, the exact kernels' ragged twins too
        // (their own ragged forms spill).
        for d in [DType::BF16, DType::F16] {
            let layer = (NormOp::LayerNorm, None, false);
            for cols in [65536, 98304, 262144, 1 << 20] {
                let s = NormSpec::with(layer, d, d, cols);
                assert_eq!(
                    s.name(),
                    format!("norm_layernorm_{d}_{d}_s512x16_p_x"),
                    "{cols}"
                );
                assert_eq!(
                    s.ragged_twin(),
                    NormSpec::with(layer, d, d, cols + 4),
                    "{cols}"
                );
                assert_eq!(
                    s.ragged_twin().name(),
                    format!("norm_layernorm_{d}_{d}_s512x8_p")
                );
            }
            for (cols, want) in [
                (57345, "s512x8_p"),
                (1_000_000, "s512x8_p"),
                (49152, "s512x8_p_x"),
            ] {
                assert_eq!(
                    NormSpec::with(layer, d, d, cols).name(),
                    format!("norm_layernorm_{d}_{d}_{want}"),
                    "{cols}"
                );
            }
        }
        let f32_layer = |cols| {
            NormSpec::with(
                (NormOp::LayerNorm, None, false),
                DType::F32,
                DType::F32,
                cols,
            )
        };
        for (cols, want, ragged) in [
            (65536, "s512x8_p_x", "s512x4_p"),
            (1 << 20, "s512x8_p_x", "s512x4_p"),
            (262144, "s512x4_p", "s512x4_p"),
            (81920, "s512x4_p", "s512x4_p"),
            (1_000_000, "s512x4_p", "s512x4_p"),
        ] {
            let s = f32_layer(cols);
            assert_eq!(s.name(), format!("norm_layernorm_f32_f32_{want}"), "{cols}");
            assert_eq!(
                s.ragged_twin().name(),
                format!("norm_layernorm_f32_f32_{ragged}"),
                "{cols}"
            );
            assert!(!s.exact || s.fetch_wide(), "{cols}");
        }
        assert_eq!(
            long(NormOp::RmsNorm, false, DType::BF16),
            "norm_rmsnorm_bf16_bf16_s512x16_p_x"
        );
        assert_eq!(
            long(NormOp::RmsNorm, false, DType::F32),
            "norm_rmsnorm_f32_f32_s512x8_p"
        );
        assert_eq!(
            long(NormOp::RmsNorm, true, DType::BF16),
            "norm_rmsnorm_res_bf16_bf16_s512x8_p_x"
        );
        assert_eq!(
            long(NormOp::RmsNorm, true, DType::F32),
            "norm_rmsnorm_res_f32_f32_s512x4_p"
        );
        // A norm's split twin is the kernel of 4 packs at 2 blocks an SM,
        // whatever its deferred kernel's packs.
        assert_eq!(
            long_twin(NormOp::RmsNorm, true, DType::F32),
            "norm_rmsnorm_res_f32_f32_s512x4_o2_g"
        );
        // f32 layer norm takes the deferred kernel of 4 packs (ninth session)
        // but on rows of a whole number of 8 packs' chunks.
        assert_eq!(
            long(NormOp::LayerNorm, false, DType::F32),
            "norm_layernorm_f32_f32_s512x8_p_x"
        );
        assert_eq!(
            long_twin(NormOp::LayerNorm, false, DType::F32),
            "norm_layernorm_f32_f32_s512x4_o2_g"
        );
        assert_eq!(layout(NormOp::LayerNorm, true, DType::F32, 32769), "l512x8");
        assert_eq!(layout(NormOp::LayerNorm, true, DType::F32, 33793), "s512x4");
        // 16-bit layer norm + residual takes the deferred kernel with f64 sums
        // (fourteenth session).
        assert_eq!(
            long(NormOp::LayerNorm, true, DType::BF16),
            "norm_layernorm_res_bf16_bf16_s512x8_p_x"
        );
        assert_eq!(
            long(NormOp::LayerNorm, true, DType::F32),
            "norm_layernorm_res_f32_f32_s512x4_p_x"
        );
        assert_eq!(layout(NormOp::RmsNorm, true, DType::F32, 32768), "b512x16");
        // 16-bit layer norm's twins hold their rows as raw words: 8 packs at
        // 2 blocks an SM (thirty-first session).
        assert_eq!(
            long_twin(NormOp::LayerNorm, false, DType::BF16),
            "norm_layernorm_bf16_bf16_s512x8_o2_g"
        );
        assert_eq!(
            long_twin(NormOp::LayerNorm, true, DType::BF16),
            "norm_layernorm_res_bf16_bf16_s512x8_o2_g"
        );
        // Softmax's general twin keeps the split kernel of 8 packs.
        let sp = NormSpec::default().for_cols(1 << 20);
        assert_eq!(
            sp.general_twin().name(),
            "norm_softmax_online_f32_f32_s512x8_g"
        );
        assert_eq!(sp.chunk(), 16384);
        // Cohorts of a row's 64 blocks: 4 in 264 resident.
        let p = sp.plan(64, 1 << 20, 132, 2);
        assert_eq!((p.grid, p.splits), (256, 64));
        assert_eq!((p.counters, p.partials), (2, 64 * 64));
        // Its general twin takes items from a ticket, one pass, its states
        // carrying the launch's flag: a ticket and an epoch, no counter a row.
        let p = sp.general_twin().plan(64, 1 << 20, 132, 2);
        assert_eq!((p.grid, p.splits, p.counters), (264, 65, 2));
        assert!(sp.general_twin().one_pass_split() && !sp.general_twin().split_asks_early());
        assert!(sp.general_twin().ticket_beside_epoch());
        // f32 rows stay widened; a 16-bit one's holds raw words, in pairs.
        assert!(!sp.general_twin().raw_rows() && !sp.general_twin().paired_packs());
        let sp16 = NormSpec::with(
            (NormOp::LogSoftmax, Some(SoftmaxAlgo::Online), false),
            DType::F16,
            DType::F16,
            1 << 20,
        )
        .general_twin();
        assert_eq!(sp16.name(), "norm_logsoftmax_online_f16_f16_s512x8_g");
        assert!(sp16.raw_rows() && sp16.paired_packs() && sp16.row_grid() == 8);
        // Of 4 packs, it asks for its first slots as it publishes.
        let four: NormSpec = "norm_rmsnorm_res_bf16_bf16_s512x4_o2_g".parse().unwrap();
        assert!(four.one_pass_split() && four.split_asks_early() && !four.ticket_beside_epoch());
        assert_eq!(four.plan(4, 1_000_003, 132, 2).counters, 2);
        assert!(!sp.general_twin().two_pass());
        // An f32 layer norm's twin goes over its items twice, its states
        // carrying the launch's flag: a ticket and an epoch.
        let layer = NormSpec::with(
            (NormOp::LayerNorm, None, true),
            DType::F32,
            DType::F32,
            1 << 20,
        )
        .general_twin();
        assert!(layer.two_pass() && layer.fetch_wide() && !layer.raw_rows());
        assert_eq!(layer.partial_bytes(), 32);
        assert_eq!(layer.plan(64, 1 << 20, 132, 2).counters, 2);
        // A 16-bit one's takes one pass over a row of raw words, in pairs.
        let twin = |ops| NormSpec::with(ops, DType::BF16, DType::BF16, 1 << 20).general_twin();
        let layer16 = twin((NormOp::LayerNorm, None, true));
        assert!(!layer16.two_pass() && layer16.one_pass_split());
        assert!(layer16.raw_rows() && layer16.paired_packs() && layer16.row_grid() == 8);
        assert_eq!(layer16.partial_bytes(), 32);
        // RMS norm's twin takes one pass of 8 packs at 2 blocks an SM: 62
        // items a row of 1000003, one wave of 248 in 264 resident blocks.
        let rms = twin((NormOp::RmsNorm, None, false));
        assert_eq!(rms.name(), "norm_rmsnorm_bf16_bf16_s512x8_o2_g");
        assert!(!rms.two_pass() && rms.one_pass_split() && rms.ticket_beside_epoch());
        assert!(rms.raw_rows() && rms.paired_packs() && rms.row_grid() == 8);
        assert_eq!(rms.splits_for(1_000_003), 62);
        // Of one wave, 16-bit layer norm's twin is launched cooperatively and
        // takes its item from its block index; with more items than resident
        // blocks, and for the other row ops, a ticket hands them out.
        let layer_plain = twin((NormOp::LayerNorm, None, false));
        assert!(layer_plain.one_wave() && !rms.one_wave() && !layer16.one_wave());
        let p = layer_plain.plan(4, 1_000_003, 132, 2);
        assert!(p.cooperative && u64::from(p.grid) == 4 * u64::from(p.splits));
        assert!(!layer_plain.plan(64, 1_048_573, 132, 2).cooperative);
        assert!(!rms.plan(4, 1_000_003, 132, 2).cooperative);
        // 16-bit RMS norm + residual's holds raw words in pairs too; f32's and
        // a 16-bit twin between two types keep widened packs of 4.
        let rms_res = twin((NormOp::RmsNorm, None, true));
        assert_eq!(rms_res.name(), "norm_rmsnorm_res_bf16_bf16_s512x8_o2_g");
        assert!(rms_res.raw_rows() && rms_res.paired_packs() && !rms_res.two_pass());
        let f32_res = NormSpec::with(
            (NormOp::RmsNorm, None, true),
            DType::F32,
            DType::F32,
            1 << 20,
        )
        .general_twin();
        assert_eq!(f32_res.name(), "norm_rmsnorm_res_f32_f32_s512x4_o2_g");
        assert!(!f32_res.raw_rows() && !f32_res.paired_packs());
        let mixed = NormSpec::with(
            (NormOp::LayerNorm, None, false),
            DType::BF16,
            DType::F16,
            1 << 20,
        )
        .general_twin();
        assert_eq!(mixed.packs, 4);
        assert!(!mixed.raw_rows());
        // The twin of a block of 16 packs (rows of 16385..32768) keeps one.
        let block = NormSpec::with(
            (NormOp::LayerNorm, None, false),
            DType::BF16,
            DType::BF16,
            32767,
        );
        assert_eq!(
            block.general_twin().name(),
            "norm_layernorm_bf16_bf16_s512x8_g"
        );
        assert!(!block.general_twin().two_pass());
        // The whole-pack split kernel without staging keeps one pass and
        // counts its rows' arrivals: two counters a row.
        let plain: NormSpec = "norm_layernorm_res_bf16_bf16_s512x8".parse().unwrap();
        assert!(plain.row_counters() && !plain.one_pass_split() && !plain.split_asks_early());
        assert_eq!(plain.plan(64, 1 << 20, 132, 1).counters, 1 + 128);
        // A cluster's row exchanges through distributed shared memory: none.
        let cluster: NormSpec = "norm_rmsnorm_f32_f32_s512x8_c4".parse().unwrap();
        assert!(!cluster.one_pass_split() && cluster.plan(64, 1 << 20, 132, 1).counters == 0);
        let p = sp.plan(4, 1_000_003, 132, 2);
        assert_eq!((p.grid, p.splits), (4 * 62, 62));
        // A general twin's chunks also cover a row starting 3 elements past the
        // pack grid: two whole chunks of elements take a third item.
        assert_eq!(sp.plan(1, 2 * 16384, 132, 2).splits, 2);
        assert_eq!(sp.general_twin().plan(1, 2 * 16384, 132, 2).splits, 3);
        assert_eq!(sp.general_twin().plan(1, 2 * 16384 - 3, 132, 2).splits, 2);
    }

    #[test]
    fn prefetching_and_l1_bypassing_layouts() {
        let spec = |ops, d, cols| NormSpec::with(ops, d, d, cols);
        let online = (NormOp::Softmax, Some(SoftmaxAlgo::Online), false);
        let safe = (NormOp::Softmax, Some(SoftmaxAlgo::Safe), false);
        let log = (NormOp::LogSoftmax, Some(SoftmaxAlgo::Online), false);
        let layer = (NormOp::LayerNorm, None, false);
        let layer_res = (NormOp::LayerNorm, None, true);
        let rms = (NormOp::RmsNorm, None, false);
        let rms_res = (NormOp::RmsNorm, None, true);
        // The measured exceptions, for their algorithm, dtypes and lengths only.
        for (ops, d, cols, name) in [
            (online, DType::BF16, 32768, "b512x16_x"),
            (online, DType::F16, 20000, "b512x16"),
            (safe, DType::BF16, 32768, "b512x16_x"),
            (safe, DType::BF16, 20000, "b512x16"),
            (online, DType::F32, 32768, "b512x16"),
            (online, DType::BF16, 16384, "b512x8_x"),
            (online, DType::BF16, 4096, "b256x4_x"),
            (online, DType::F32, 4096, "b256x4"),
            (log, DType::F32, 4096, "b256x4_x"),
            (log, DType::BF16, 32768, "b512x16_x"),
            (layer, DType::BF16, 32768, "b512x16_x"),
            (layer, DType::BF16, 16384, "b512x8_x"),
            (layer, DType::BF16, 8192, "b512x4"),
            (layer, DType::F32, 32768, "b512x16_x"),
            (layer, DType::F32, 32764, "b512x16_n"),
            (layer, DType::F32, 16384, "b512x8"),
            (layer_res, DType::BF16, 32768, "b512x16_n"),
            (layer_res, DType::F32, 32768, "b512x16_x"),
            (layer_res, DType::F32, 32764, "b512x16_n"),
            (rms, DType::BF16, 32768, "b512x16_x"),
            (rms, DType::BF16, 32764, "b512x16"),
            (rms, DType::BF16, 16384, "b512x8_x"),
            (rms, DType::BF16, 16380, "b256x16"),
            (rms, DType::F32, 32768, "b512x16_x"),
            (rms, DType::F32, 20000, "b512x16"),
            (rms_res, DType::BF16, 32768, "b512x16_x"),
        ] {
            let s = spec(ops, d, cols);
            let want = NormSpec {
                layout: s.layout,
                ..spec(ops, d, 1)
            };
            let want = format!("{}_{name}", want.name().rsplit_once('_').unwrap().0);
            assert_eq!(s.name(), want, "{ops:?} {d} {cols}");
            assert_eq!(s.name().parse::<NormSpec>().unwrap(), s);
            // The general twin loads its rows directly, through L1 or not as
            // the kernel does.
            let g = s.general_twin();
            assert!(
                !g.prefetch && g.general && g.no_l1 == s.no_l1,
                "{}",
                g.name()
            );
            g.validate().unwrap();
        }
        // Dynamic shared memory: the staged streams and the weight and bias.
        let named = |n: &str| n.parse::<NormSpec>().unwrap();
        assert_eq!(
            named("norm_softmax_online_bf16_bf16_b512x16_p").stage_bytes(),
            64 << 10
        );
        assert_eq!(
            named("norm_layernorm_bf16_bf16_b512x16_p").stage_bytes(),
            3 * (64 << 10)
        );
        assert_eq!(
            named("norm_layernorm_bf16_bf16_b512x8_p").stage_bytes(),
            3 * (32 << 10)
        );
        assert_eq!(spec(layer, DType::BF16, 32768).stage_bytes(), 0);
        assert_eq!(spec(layer_res, DType::BF16, 32768).stage_bytes(), 0);
        // A prefetching block takes rows in turn: one resident wave at most.
        let p = named("norm_layernorm_bf16_bf16_b512x8_p");
        assert_eq!(p.plan(8192, 16384, 132, 1).grid, 132);
        assert_eq!(p.plan(100, 16384, 132, 1).grid, 100);
        assert_eq!(
            spec(layer, DType::BF16, 16384)
                .plan(8192, 16384, 132, 2)
                .grid,
            8192
        );
        // Its own launch bound where its layout's spilled.
        assert_eq!(p.min_blocks(), 1);
        assert_eq!(spec(layer, DType::BF16, 16384).min_blocks(), 2);
        // A deferred split block stages three rows of its chunk's streams
        // only (its columns change with the chunk), and sends each float of
        // its state with a flag in 64 bits.
        assert_eq!(
            named("norm_layernorm_res_bf16_bf16_s512x8_p").stage_bytes(),
            3 * 2 * (32 << 10)
        );
        let f32_softmax = named("norm_softmax_online_f32_f32_s512x8_p");
        assert_eq!(f32_softmax.stage_bytes(), 3 * (64 << 10));
        // A cohort's block stages its columns of the weight and bias once, where
        // they fit beside the three rows (not the 16-bit RMS norm + residual's).
        for (name, bytes) in [
            ("norm_layernorm_bf16_bf16_s512x8_p", (3 + 2) * (32 << 10)),
            (
                "norm_rmsnorm_res_f32_f32_s512x4_p",
                (3 * 2 + 1) * (32 << 10),
            ),
            ("norm_rmsnorm_res_bf16_bf16_s512x8_p", 3 * 2 * (32 << 10)),
            ("norm_rmsnorm_f32_f32_s512x8_p", 3 * (64 << 10)),
        ] {
            assert_eq!(named(name).stage_bytes(), bytes, "{name}");
        }
        assert_eq!(
            named("norm_layernorm_bf16_bf16_s512x8_p").functor(),
            "rj_norm_layer_t<T, rj_cols_staged, true>"
        );
        // f64 sums: the deferred 16-bit layer norms only.
        for (name, f64_sums) in [
            ("norm_layernorm_bf16_bf16_s512x8_p", true),
            ("norm_layernorm_f16_f32_s512x8_p", true),
            ("norm_layernorm_res_bf16_bf16_s512x8_p", true),
            ("norm_layernorm_f32_f32_s512x4_p", false),
            ("norm_layernorm_res_f32_f32_s512x4_p", false),
            ("norm_layernorm_bf16_bf16_s512x8", false),
            ("norm_layernorm_bf16_bf16_s512x4_o2_g", false),
            ("norm_layernorm_bf16_bf16_b512x16_p", false),
            ("norm_rmsnorm_bf16_bf16_s512x8_p", false),
        ] {
            assert_eq!(named(name).f64_sums(), f64_sums, "{name}");
        }
        for (name, bytes) in [
            ("norm_softmax_online_f32_f32_s512x8_p", 16),
            ("norm_layernorm_bf16_bf16_s512x8_p", 32),
            ("norm_rmsnorm_bf16_bf16_s512x8_p", 16),
            // One pass: flagged in a general twin (Chan's three words in
            // 64-bit slots), counted in a whole-pack kernel.
            ("norm_rmsnorm_res_bf16_bf16_s512x4_o2_g", 16),
            ("norm_layernorm_f32_f32_s512x8_g", 32),
            ("norm_rmsnorm_f32_f32_s512x8", PARTIAL_BYTES),
            ("norm_rmsnorm_f32_f32_s512x8_c4", PARTIAL_BYTES),
        ] {
            assert_eq!(named(name).partial_bytes(), bytes, "{name}");
        }
        // As many blocks an SM as its shared memory holds; a lane reads 4
        // slots at once where a block has the SM's registers.
        let bf16_softmax = named("norm_softmax_online_bf16_bf16_s512x8_p");
        assert_eq!(
            (bf16_softmax.min_blocks(), bf16_softmax.fetch_ahead()),
            (2, 1)
        );
        assert_eq!(
            (f32_softmax.min_blocks(), f32_softmax.fetch_ahead()),
            (1, 4)
        );
        // The wide second pass where it measured faster, warp 0's elsewhere.
        for (name, wide) in [
            ("norm_rmsnorm_f32_f32_s512x8_p", true),
            ("norm_rmsnorm_res_f32_f32_s512x4_p", true),
            ("norm_layernorm_bf16_bf16_s512x8_p", true),
            ("norm_layernorm_f32_f32_s512x4_p", false),
            ("norm_layernorm_res_bf16_bf16_s512x8_p", false),
            ("norm_rmsnorm_bf16_bf16_s512x16_p", false),
            ("norm_softmax_online_f32_f32_s512x8_p", false),
            // One pass reads its row's states over the warps by its own
            // reducer (rj_red_split), no second pass's.
            ("norm_rmsnorm_f32_f32_s512x8", false),
            ("norm_rmsnorm_f32_f32_s512x8_c4", false),
        ] {
            assert_eq!(named(name).fetch_wide(), wide, "{name}");
        }
        for bad in [
            "norm_softmax_online_f32_f32_s512x16_p",
            "norm_layernorm_res_f32_f32_s512x16_p",
            "norm_rmsnorm_res_f32_f32_s512x8_p",
        ] {
            assert!(bad.parse::<NormSpec>().is_err(), "{bad}");
        }
        let sp = named("norm_rmsnorm_f32_f32_s512x8_p");
        // Its weight does not fit beside three staged rows: it holds it in
        // registers.
        assert_eq!(sp.functor(), "rj_norm_rms_t<T, Held>");
        assert_eq!(sp.held_cols(), 8);
        // Cohorts of a row's blocks: 4 of 64 blocks in 264 resident; no more
        // cohorts than rows.
        assert_eq!(sp.plan(64, 1 << 20, 132, 2).grid, 256);
        assert_eq!(sp.plan(2, 1 << 20, 132, 2).grid, 128);
        assert_eq!(sp.plan(1000, 3 * 16384, 132, 2).grid, 264);
        assert_eq!(sp.general_twin().name(), "norm_rmsnorm_f32_f32_s512x8_o2_g");
        // A deferred kernel's staging twin, at most 8 packs a thread, from no
        // fixed columns; it reaches 3 elements past the row and takes one
        // pass. A call takes it where its cohorts take 8 rows or more each.
        let tw = sp.staged_twin();
        assert_eq!(tw.name(), "norm_rmsnorm_f32_f32_s512x8_p_g");
        assert_eq!(tw.plan(4, 16384 * 2, 132, 2).splits, 3);
        assert_eq!(tw.plan(4, 16384 * 2 - 3, 132, 2).splits, 2);
        // 65 blocks a row of 2^20 + 3: 2 cohorts in 132, 4 in 264; rows of
        // 15 chunks take the direct twin however many.
        let cols = (1 << 20) + 3;
        assert_eq!(sp.general_twin_for(16, cols, 132), tw);
        assert_eq!(sp.general_twin_for(15, cols, 132), sp.general_twin());
        assert_eq!(sp.general_twin_for(31, cols, 264), sp.general_twin());
        assert_eq!(sp.general_twin_for(4, 1000003, 132), sp.general_twin());
        assert_eq!(sp.general_twin_for(1 << 20, 16 * 16384 - 3, 132), tw);
        assert_eq!(
            sp.general_twin_for(1 << 20, 15 * 16384 - 3, 132),
            sp.general_twin()
        );
        // Rows of up to 65537 take their op's short staging twin, whatever
        // their chunk count (16-bit softmax's at 3 blocks an SM).
        let soft = named("norm_softmax_online_bf16_bf16_s512x8_p");
        let short = soft.staged_twin_for_cols(50257);
        assert_eq!(short.name(), "norm_softmax_online_bf16_bf16_s256x8_o3_p_g");
        assert_eq!(soft.staged_twin_for_cols(65538), soft.staged_twin());
        assert_eq!(soft.general_twin_for(8 * 37, 50257, 264), short);
        assert_eq!(
            soft.general_twin_for(8 * 37 - 1, 50257, 264),
            soft.general_twin()
        );
        // The ladder lays 16-bit softmax rows of 50257 out in s256x8 already:
        // its short twin differs from its long one in its launch bound.
        let online = (NormOp::Softmax, Some(SoftmaxAlgo::Online), false);
        let vocab = NormSpec::with(online, DType::BF16, DType::BF16, 50257);
        assert_eq!(
            vocab.staged_twin().name(),
            "norm_softmax_online_bf16_bf16_s256x8_p_g"
        );
        assert_eq!(vocab.general_twin_for(8 * 75, 50257, 528), short);
        assert_eq!(
            named("norm_logsoftmax_online_f16_f16_s512x8_p")
                .staged_twin_for_cols(40001)
                .name(),
            "norm_logsoftmax_online_f16_f16_s256x8_o3_p_g"
        );
        assert_eq!(sp.staged_twin_for_cols(65538), tw);
        // The norms' short twins; f32 RMS norm + residual has none.
        for (name, twin) in [
            (
                "norm_rmsnorm_f32_f32_s512x8_p",
                "norm_rmsnorm_f32_f32_s512x4_p_g",
            ),
            (
                "norm_rmsnorm_bf16_bf16_s512x16_p",
                "norm_rmsnorm_bf16_bf16_s512x4_p_g",
            ),
            (
                "norm_rmsnorm_res_bf16_bf16_s512x8_p",
                "norm_rmsnorm_res_bf16_bf16_s512x4_p_g",
            ),
            (
                "norm_layernorm_f32_f32_s512x4_p",
                "norm_layernorm_f32_f32_s256x8_p_g",
            ),
            (
                "norm_layernorm_bf16_bf16_s512x8_p",
                "norm_layernorm_bf16_bf16_s256x8_o2_p_g",
            ),
            (
                "norm_layernorm_res_f32_f32_s512x4_p",
                "norm_layernorm_res_f32_f32_s256x4_p_g",
            ),
            (
                "norm_layernorm_res_bf16_bf16_s512x8_p",
                "norm_layernorm_res_bf16_bf16_s512x4_p_g",
            ),
            (
                "norm_rmsnorm_res_f32_f32_s512x4_p",
                "norm_rmsnorm_res_f32_f32_s512x4_p_g",
            ),
        ] {
            let t = named(name).staged_twin_for_cols(40001);
            assert_eq!(t.name(), twin, "{name}");
            assert_eq!(
                t.balances(),
                !name.starts_with("norm_rmsnorm_res_f32"),
                "{name}"
            );
        }
        // 16-bit layer norm's short twins: f64 sums without the residual,
        // Chan's f32 state with it.
        let ln16 = named("norm_layernorm_bf16_bf16_s512x8_p");
        assert!(ln16.staged_twin_for_cols(40001).f64_sums());
        assert!(
            !named("norm_layernorm_res_bf16_bf16_s512x8_p")
                .staged_twin_for_cols(40001)
                .f64_sums()
        );
        assert!(
            named("norm_layernorm_res_bf16_bf16_s512x8_p")
                .staged_twin()
                .f64_sums()
        );
        let log32 = named("norm_logsoftmax_online_f32_f32_s512x8_p");
        assert_eq!(log32.staged_twin_for_cols(50257), log32.staged_twin());
        let rms16 = named("norm_rmsnorm_bf16_bf16_s512x16_p_x").staged_twin();
        assert_eq!(rms16.name(), "norm_rmsnorm_bf16_bf16_s512x8_p_g");
        let log16 = named("norm_logsoftmax_online_bf16_bf16_s512x8_p").staged_twin();
        assert_eq!(
            log16.name(),
            "norm_logsoftmax_online_bf16_bf16_s512x8_o1_p_g"
        );
        let layer = named("norm_layernorm_bf16_bf16_s512x8_p").staged_twin();
        assert!(!layer.staged_cols() && !layer.two_pass() && layer.f64_sums());
        assert_eq!(layer.stage_bytes(), 3 * 16384 * 2);
        // f32 layer norm and kernels that do not defer have none.
        for name in [
            "norm_layernorm_f32_f32_s512x4_p",
            "norm_layernorm_bf16_bf16_s512x8",
            "norm_softmax_online_bf16_bf16_b512x16_p",
        ] {
            let s = named(name);
            assert_eq!(s.staged_twin(), s.general_twin(), "{name}");
            assert_eq!(s.general_twin_for(1 << 20, 1 << 20, 132), s.general_twin());
        }
        // A general kernel, named, is its own twin (not re-laid out).
        let g = named("norm_rmsnorm_f32_f32_s256x16_o2_g");
        assert_eq!(g.general_twin(), g);
        // Invalid: prefetching in the warp layout, in a general block twin,
        // past the shared memory, or with the L1 bypass.
        for (bad, field) in [
            ("norm_rmsnorm_bf16_bf16_w32x4_p", "prefetch"),
            ("norm_rmsnorm_bf16_bf16_b512x16_p_g", "prefetch"),
            ("norm_layernorm_res_bf16_bf16_b512x16_p", "prefetch"),
            ("norm_layernorm_f32_f32_b512x16_p", "prefetch"),
            ("norm_rmsnorm_bf16_bf16_b512x16_p_n", "no_l1"),
        ] {
            let e = bad.parse::<NormSpec>().unwrap_err();
            assert!(
                matches!(e, SpecError::Invalid { field: f, .. } if f == field),
                "{bad}: {e}"
            );
        }
        let e = "norm_layernorm_f32_f32_b512x16_p"
            .parse::<NormSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("393216 bytes") && e.contains("at most 229376"),
            "{e}"
        );
    }
}
