//! The norm family's tables chosen by measurement: launch bounds from ptxas
//! sweeps, the weight and bias a deferred kernel holds, and the layouts the
//! default ladder's rule does not give.

use super::*;

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
pub(super) const OCCUPANCY: &[(&str, &str, u32, u32, u32)] = &[
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
pub(super) const OCCUPANCY_GENERAL: &[(&str, &str, u32, u32, u32)] = &[
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
pub(super) const HELD_CAPS: &[(NormOp, bool, DType, u32, u32)] = &[
    (NormOp::LayerNorm, false, DType::F32, 8, 7),
    (NormOp::LayerNorm, false, DType::F16, 16, 4),
];

/// The element types of a row, as the launch-bound tables and the measured
/// layouts group them (the discriminant is the tables' column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowTypes {
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
pub(super) enum LayoutTypes {
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
pub(super) struct MeasuredLayout {
    pub(super) op: NormOp,
    /// Softmax ops: the algorithm it was measured for (`None`: any).
    pub(super) algo: Option<SoftmaxAlgo>,
    pub(super) residual: bool,
    pub(super) types: LayoutTypes,
    pub(super) cols: std::ops::RangeInclusive<u64>,
    pub(super) layout: NormLayout,
    pub(super) lanes: u32,
    pub(super) packs: u32,
    pub(super) form: Form,
}

impl MeasuredLayout {
    /// Whether the entry was measured for `spec`'s op, algorithm, residual and
    /// row types (its columns, layout and form aside).
    pub(super) fn serves(&self, spec: &NormSpec) -> bool {
        self.op == spec.op
            && self.algo.is_none_or(|a| Some(a) == spec.algo)
            && self.residual == spec.residual
            && self.types == spec.layout_types()
    }

    /// Whether it takes rows of `cols`: in its range, and for an exact-only
    /// form a whole number of its chunks.
    pub(super) fn takes(&self, cols: u64) -> bool {
        let chunk = u64::from(self.lanes * self.packs) * 4;
        self.cols.contains(&cols)
            && (self.form != Form::PrefetchExactOnly || cols.is_multiple_of(chunk))
    }
}

/// Which form of a layout's kernel a measured entry takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
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
    pub(super) fn prefetches(self) -> bool {
        matches!(
            self,
            Form::Prefetch | Form::PrefetchExact | Form::PrefetchExactOnly | Form::Cluster
        )
    }

    /// The exact-length kernel (`_x`) where the row fills the layout.
    pub(super) fn exact(self) -> bool {
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
pub(super) const MEASURED_LAYOUTS: &[MeasuredLayout] = {
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
