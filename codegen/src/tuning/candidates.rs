//! The layouts worth timing for one operation at one row length: what
//! `redjit tune` measures and the runtime's autotune picks among.

use super::Tuning;
use crate::registry::NormLayout;
use crate::spec::KernelSpec;
use crate::spec::norm::{NormSpec, variants};

/// Raw rows are timed only for rows longer than this, whose widened rows take
/// a block's thread 32 registers or more: the H200's raw picks are all at
/// 16384 and 32768 columns (`benchmarks/h200/tune-norm.jsonl`). Shorter rows
/// are left out, so that the default tune fits one device call.
const RAW_TIMED_PAST_COLS: u64 = 8192;

/// The candidates at rows of `cols`: `current` (the table's pick) first, the
/// ladder's, every layout variant of `base` that holds the row without idling,
/// the exact form of each that the row fills, a block or warp kernel's forms
/// that hold its weight and bias through the launch, every pack and as many
/// as `current` holds (not an FP8 output's),
/// a 16-bit one's form that takes its packs in pairs, and, for rows longer
/// than `RAW_TIMED_PAST_COLS`, a 16-bit block's forms that hold their rows raw
/// (`NormSpec::can_hold_raw`).
pub fn candidates(base: &NormSpec, current: &NormSpec, cols: u64) -> Vec<NormSpec> {
    let mut out = vec![current.clone()];
    let mut push = |s: NormSpec| {
        if s.validate().is_ok() && !out.contains(&s) {
            out.push(s);
        }
    };
    push(base.for_shape(None, cols, &Tuning::ladder()));
    // Unpaired and holding nothing: a paired pick's layouts would keep only
    // those whose ragged form takes pairs (bf16 layer norm + residual's
    // b512x16_x_v had no b512x16 variant, so none of its raw forms), and a
    // pick holding 8 packs only those of 8 packs or more (bf16 RMS norm's
    // b128x8_x_h8 at 1x4096 had no b256x4 forms). Both come back below.
    let unpaired = NormSpec {
        pairs: false,
        held: None,
        ..current.clone()
    };
    for v in variants(&unpaired) {
        let idle = v.capacity().is_some_and(|c| c > 8 * cols || c < cols)
            || (v.layout == NormLayout::Split && current.layout != NormLayout::Split);
        if idle {
            continue;
        }
        let exact = (matches!(
            v.layout,
            NormLayout::Warp | NormLayout::Block | NormLayout::Split
        ) && v.fills_exactly(cols))
        .then(|| NormSpec {
            exact: true,
            ..v.clone()
        });
        let forms: Vec<NormSpec> = exact.into_iter().chain(std::iter::once(v)).collect();
        let paired = forms
            .iter()
            .filter(|s| s.can_pair_packs())
            .map(|s| NormSpec {
                pairs: true,
                ..s.clone()
            });
        let forms: Vec<NormSpec> = forms.iter().cloned().chain(paired).collect();
        for s in &forms {
            // A block's ragged form in pairs holding its columns led in none
            // of the 98 bf16 cells timed (benchmarks/h200/tune-norm.jsonl):
            // left out, so that the default tune fits one device call.
            let never_led = s.pairs && s.layout == NormLayout::Block && !s.exact;
            // An FP8 output holds no columns (tuning::parse says why).
            if !s.holds_cols_from_launch() || never_led || s.fp8.is_some() {
                continue;
            }
            // Every pack, and as many as the pick holds.
            for h in std::iter::once(s.packs).chain(current.held) {
                let held = NormSpec {
                    held: Some(h),
                    ..s.clone()
                };
                if held.validate().is_ok() {
                    push(held);
                }
            }
        }
        // A raw row's forms: bf16 online softmax b512x16 ran ahead so at
        // 8192x32768 only at one more block an SM than its own
        // (`benchmarks/h200/tune-norm.jsonl`).
        let raw: Vec<NormSpec> = if cols > RAW_TIMED_PAST_COLS {
            forms.iter().flat_map(NormSpec::raw_forms).collect()
        } else {
            Vec::new()
        };
        for s in forms.into_iter().chain(raw) {
            push(s);
        }
    }
    out
}

/// `spec` at each of `bounds` (blocks an SM) other than its own launch
/// bound, where the SM holds that many of its blocks: below, more registers a
/// thread and fewer blocks in flight; above, more blocks in flight on fewer
/// registers, where ptxas still fits the row (the compile grid holds a table's
/// kernels to no spill). 16-bit RMS norm b512x16 at 2 blocks an SM, above its
/// own 1, ran 7 % faster at 8192x32768 on the H200
/// (`benchmarks/h200/tune-norm.jsonl`). None for a kernel already given a bound.
pub fn bound_candidates(spec: &NormSpec, bounds: &[u32]) -> Vec<NormSpec> {
    if spec.bound.is_some() {
        return Vec::new();
    }
    let own = spec.min_blocks();
    let mut out: Vec<NormSpec> = Vec::new();
    for &b in bounds {
        let s = NormSpec {
            bound: Some(b),
            ..spec.clone()
        };
        if b != own && s.validate().is_ok() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// At most `n` of [`candidates`]: `current` first, then those whose rows
/// hold the fewest spare columns (a layout sized for the row wastes no lanes).
pub fn closest_candidates(
    base: &NormSpec,
    current: &NormSpec,
    cols: u64,
    n: usize,
) -> Vec<NormSpec> {
    let mut all = candidates(base, current, cols);
    let rest = all.split_off(1);
    let mut rest: Vec<(u64, NormSpec)> = rest
        .into_iter()
        .map(|s| (s.capacity().map_or(u64::MAX, |c| c.saturating_sub(cols)), s))
        .collect();
    rest.sort_by_key(|(spare, _)| *spare);
    all.extend(rest.into_iter().map(|(_, s)| s));
    all.truncate(n.max(1));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{DType, NormOp, SoftmaxAlgo};

    #[test]
    fn bound_candidates_lie_either_side_of_the_kernels_own_bound() {
        let names = |spec: &NormSpec, bounds: &[u32]| -> Vec<String> {
            let c = bound_candidates(spec, bounds);
            for s in &c {
                assert!(s.validate().is_ok(), "{}", s.name());
            }
            c.iter().map(|s| s.name()).collect()
        };
        // Below: a warp kernel at its SM's 8 blocks of 256 (9 do not fit).
        let spec: NormSpec = "norm_softmax_online_f32_f32_w16x2".parse().unwrap();
        assert_eq!(spec.min_blocks(), 8);
        assert_eq!(
            names(&spec, &[1, 2, 2, 8, 9]),
            [
                "norm_softmax_online_f32_f32_w16x2_o1",
                "norm_softmax_online_f32_f32_w16x2_o2"
            ]
        );
        // Above: 16-bit RMS norm b512x16 at its own 1, up to the SM's 4 blocks
        // of 512 (the H200 table's 8192x32768 row was found so).
        let rms: NormSpec = "norm_rmsnorm_bf16_bf16_b512x16_x".parse().unwrap();
        assert_eq!(rms.min_blocks(), 1);
        assert_eq!(
            names(&rms, &[1, 2, 3, 4, 5]),
            [
                "norm_rmsnorm_bf16_bf16_b512x16_o2_x",
                "norm_rmsnorm_bf16_bf16_b512x16_o3_x",
                "norm_rmsnorm_bf16_bf16_b512x16_o4_x"
            ]
        );
        // A kernel given a bound has no others.
        let bounded = &bound_candidates(&rms, &[2])[0];
        assert!(bound_candidates(bounded, &[1, 3]).is_empty());
    }

    /// The candidates' names at `cols`, each of `want` among them.
    fn names_with(base: &NormSpec, current: &NormSpec, cols: u64, want: &[&str]) -> Vec<String> {
        let names: Vec<String> = candidates(base, current, cols)
            .iter()
            .map(|s| s.name())
            .collect();
        for n in want {
            assert!(names.iter().any(|m| m == n), "{n} not in {names:?}");
        }
        names
    }

    #[test]
    fn blocks_of_16_bit_rows_are_also_timed_raw() {
        // From a pick in pairs holding its columns, too.
        let ln = NormSpec::with(
            (NormOp::LayerNorm, None, false),
            DType::BF16,
            DType::BF16,
            1,
        );
        let paired: NormSpec = "norm_layernorm_bf16_bf16_b512x8_x_v_h8".parse().unwrap();
        names_with(
            &ln,
            &paired,
            16384,
            &[
                "norm_layernorm_bf16_bf16_b512x8_x_r",
                "norm_layernorm_bf16_bf16_b512x8_o3_x_r",
            ],
        );
        // The block of 512 x 16 raw, at its own bound and one block an SM more.
        let ops = (NormOp::Softmax, Some(SoftmaxAlgo::Online), false);
        let base = NormSpec::with(ops, DType::BF16, DType::BF16, 1);
        let current = base.for_shape(Some(8192), 32768, Tuning::builtin());
        let names = names_with(
            &base,
            &current,
            32768,
            &[
                "norm_softmax_online_bf16_bf16_b512x16_r",
                "norm_softmax_online_bf16_bf16_b512x16_o2_r",
                "norm_softmax_online_bf16_bf16_b512x16_x_r",
                "norm_softmax_online_bf16_bf16_b512x16_o2_x_r",
            ],
        );
        // Never paired raw, nor raw for f32 rows; with the residual too.
        assert!(!names.iter().any(|n| n.contains("_v_r")), "{names:?}");
        let f32_rows = NormSpec::with(ops, DType::F32, DType::F32, 1);
        let current = f32_rows.for_shape(Some(8192), 32768, Tuning::builtin());
        assert!(
            candidates(&f32_rows, &current, 32768)
                .iter()
                .all(|s| !s.raw)
        );
        let res = NormSpec::with((NormOp::LayerNorm, None, true), DType::BF16, DType::BF16, 1);
        let current = res.for_shape(Some(8192), 32768, Tuning::builtin());
        assert!(candidates(&res, &current, 32768).iter().any(|s| s.raw));
        // A paired pick's layout is timed raw too, though its ragged form
        // takes no pairs.
        let paired: NormSpec = "norm_layernorm_res_bf16_bf16_b512x16_x_v".parse().unwrap();
        let names: Vec<String> = candidates(&res, &paired, 32768)
            .iter()
            .map(NormSpec::name)
            .collect();
        for raw in [
            "norm_layernorm_res_bf16_bf16_b512x16_x_r",
            "norm_layernorm_res_bf16_bf16_b512x16_o2_x_r",
        ] {
            assert!(names.iter().any(|n| n == raw), "{raw}: {names:?}");
        }
    }

    #[test]
    fn a_held_picks_layouts_of_fewer_packs_are_timed() {
        // bf16 RMS norm's pick at 1x4096 holds 8 packs: the layouts of 4 and 2
        // packs are timed too, holding every pack, and the pick's 8 held where
        // a layout has that many.
        let base = NormSpec::with((NormOp::RmsNorm, None, false), DType::BF16, DType::BF16, 1);
        let held: NormSpec = "norm_rmsnorm_bf16_bf16_b128x8_x_h8".parse().unwrap();
        names_with(
            &base,
            &held,
            4096,
            &[
                "norm_rmsnorm_bf16_bf16_b256x4_x",
                "norm_rmsnorm_bf16_bf16_b256x4_x_h4",
                "norm_rmsnorm_bf16_bf16_b512x2_x_h2",
                "norm_rmsnorm_bf16_bf16_b128x8_x_v_h8",
            ],
        );
        // A partial hold is kept where it fits.
        let partial: NormSpec = "norm_rmsnorm_bf16_bf16_b256x8_n_x_h4".parse().unwrap();
        names_with(
            &base,
            &partial,
            8192,
            &[
                "norm_rmsnorm_bf16_bf16_b512x4_x_h4",
                "norm_rmsnorm_bf16_bf16_b256x8_x_h8",
            ],
        );
    }

    #[test]
    fn closest_candidates_start_with_the_pick_and_hold_the_row() {
        let base = NormSpec::with((NormOp::RmsNorm, None, false), DType::BF16, DType::BF16, 1);
        for cols in [1u64, 100, 4096, 8192, 100_003] {
            let current = base.for_shape(Some(16), cols, Tuning::builtin());
            let c = closest_candidates(&base, &current, cols, 8);
            assert_eq!(c[0], current);
            assert!(c.len() <= 8 && c.len() > 1, "{cols}: {}", c.len());
            for s in &c {
                assert!(s.validate().is_ok());
                assert!(
                    s.capacity().is_none_or(|k| k >= cols),
                    "{} {cols}",
                    s.name()
                );
            }
        }
    }
}
