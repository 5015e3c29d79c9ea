//! The norm family's compiler facts for sm_90 (ptxas 13.0): launch bounds at
//! which each kernel compiles without a spill, and the weight and bias a
//! deferred kernel can hold. The layouts a device takes are data, in its
//! tuning table (`crate::tuning`).

use super::*;

/// Blocks per SM for the launch bound of the whole-pack kernels, by (op, layout,
/// f32 in and out, a 16-bit type in and out, different dtypes): for each, the
/// most of 1, 2, 3, 4, 6, 8 at which ptxas 13.0 compiled every dtype pair of the
/// group for sm_90 without
/// a stack frame or a spill (a ptxas sweep, `scripts/norm-occupancy.py` in git
/// history: `git show d95af43:scripts/norm-occupancy.py`; warp layouts are
/// named with 32 lanes and stand for every group size without its own entry).
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
/// warp 0: at 3 they spilled 4 and 8 bytes. The split cohorts'
/// staged kernels (`s512x8_p`) spilled 4-16 bytes at their layout's bound but
/// for the online softmax; in the deferred form 16-bit RMS norm s512x8_p
/// spilled 80 bytes at 2, and 16-bit log-softmax keeps its layout's 2, well
/// ahead of 1 (H100; commit 5a581bb). A bound is also
/// capped by the SM's shared memory over the staged rows (`min_blocks`).
/// f32 layer norm's s512x4_p spilled 4 bytes at 2.
/// 16-bit layer norm w8x4 takes 5, a bound the sweep did not try: it compiles
/// clean at 48 registers (63 at 4) and ran ahead of 4 in every alternating
/// round, at a higher achieved occupancy (H100; commit 26831ec). Bound 5 lost for
/// 16-bit layer norm with the residual and for
/// the f32 residual norms, and tied for 16-bit RMS norm.
/// Layer norm w16x2 between two types takes 5 (its kernels spilled 4 bytes
/// at 6), the online softmax and log-softmax s512x8_p between them 1 (4
/// bytes at 2; `MEASURED_LAYOUTS` has what that cost), softmax s256x8_p 3 and
/// log-softmax s512x4_p 2 (measured so; at their layouts' 4 and 3 the
/// softmax spilled 4 bytes and the log-softmax's staging twin 60).
/// These bounds compile clean, not the fastest: a tuning table row may name
/// another (`bound`, found by `redjit tune --bounds`).
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

/// The same for the general twins (`_g`, the sweep's `--general`), whose
/// element path takes more registers. Layer norm at b256x4 stays at 1: at 2 the
/// f32 kernel fell far behind at 32768x4096 (H100; commit 5ea69af). Layer
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

/// Blocks per SM for the launch bound of the kernels whose packs go in pairs
/// (`NormSpec::pairs`, 16-bit rows) where their layout's bound spilled, by
/// (op, layout with its `_n`, `_x` and `_h<n>` flags): the most of 1, 2, 3, 4, 5, 6, 8
/// at which ptxas 13.0 compiled the bf16 kernel with the bound in the source
/// (`_o<n>`) and no spill; 0 where none did (no such kernel: layer norm +
/// residual's b512x16 but for its exact form). tests/norm_compile_grid
/// compiles every paired layout variant.
pub(super) const OCCUPANCY_PAIRED: &[(&str, &str, u32)] = &[
    ("layernorm", "b256x2", 6),
    ("layernorm", "b256x4", 5),
    ("layernorm", "b256x8", 2),
    ("layernorm", "b256x8_n", 2),
    ("layernorm", "b512x4", 2),
    ("layernorm", "b512x8", 1),
    ("layernorm", "b512x8_n", 1),
    ("layernorm", "w16x2", 5),
    ("layernorm", "w16x8", 2),
    ("layernorm", "w32x2", 5),
    ("layernorm", "w32x8", 2),
    ("layernorm", "w4x2", 5),
    ("layernorm", "w4x8", 2),
    ("layernorm", "w8x2", 5),
    ("layernorm", "w8x4", 4),
    ("layernorm", "w8x8", 2),
    ("layernorm_res", "b256x8", 3),
    ("layernorm_res", "b256x8_n", 3),
    ("layernorm_res", "b512x16", 0),
    ("layernorm_res", "b512x16_n", 0),
    ("layernorm_res", "b512x8", 1),
    ("layernorm_res", "b512x8_n", 1),
    ("layernorm_res", "w16x2", 5),
    ("layernorm_res", "w16x8", 2),
    ("layernorm_res", "w32x2", 5),
    ("layernorm_res", "w4x2", 5),
    ("layernorm_res", "w4x8", 2),
    ("layernorm_res", "w8x2", 5),
    ("layernorm_res", "w8x8", 2),
    ("logsoftmax_online", "w16x2", 6),
    ("logsoftmax_online", "w4x2", 6),
    ("logsoftmax_online", "w8x2", 6),
    ("rmsnorm", "w16x8", 3),
    ("rmsnorm", "w32x2", 6),
    ("rmsnorm", "w32x8", 3),
    ("rmsnorm", "w4x8", 3),
    ("rmsnorm", "w8x8", 3),
    ("rmsnorm_res", "b256x2", 6),
    ("rmsnorm_res", "w16x4", 5),
    ("rmsnorm_res", "w16x8", 3),
    ("rmsnorm_res", "w32x2", 6),
    ("rmsnorm_res", "w32x4", 5),
    ("rmsnorm_res", "w32x8", 3),
    ("rmsnorm_res", "w4x8", 3),
    ("rmsnorm_res", "w8x4", 5),
    ("rmsnorm_res", "w8x8", 3),
    ("softmax_online", "w16x2", 6),
    ("softmax_online", "w8x2", 6),
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

/// The element types of a row, as the launch-bound tables group them (the discriminant is the tables' column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowTypes {
    /// f32 in and out.
    F32 = 0,
    /// One 16-bit type in and out.
    Sixteen = 1,
    /// Different types in and out.
    Mixed = 2,
}
