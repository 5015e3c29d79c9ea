use super::*;

#[test]
fn raw_rows_are_named_and_only_where_a_block_can_hold_them() {
    for name in [
        "norm_softmax_online_bf16_bf16_b512x16_o2_r",
        "norm_logsoftmax_online_f16_f16_b256x8_x_r",
        "norm_softmax_online_bf16_bf16_b512x16_x_v_r",
        "norm_rmsnorm_bf16_bf16_b128x8_x_r",
        "norm_layernorm_bf16_bf16_b512x16_o2_r",
        "norm_softmax_safe_bf16_bf16_b512x16_r",
        "norm_layernorm_res_bf16_bf16_b512x16_o2_x_r",
        "norm_layernorm_bf16_bf16_b256x16_r",
        "norm_rmsnorm_res_f16_f16_b512x16_r",
    ] {
        let raw: NormSpec = name.parse().unwrap();
        assert!(raw.raw && raw.raw_rows(), "{name}");
        assert_eq!(raw.name(), name);
        // Its twins are widened (a raw row is a row form, as pairs are); the
        // split general twin holds raw words by its own rule only.
        assert!(!raw.ragged_twin().raw);
        assert!(!raw.general_twin().raw);
    }
    // Where asked for only (the split twins' rule aside).
    assert!(
        !"norm_softmax_online_bf16_bf16_b512x16"
            .parse::<NormSpec>()
            .unwrap()
            .raw_rows()
    );
    for name in [
        "norm_rmsnorm_bf16_bf16_b512x16_x_r_h16",
        "norm_rmsnorm_res_bf16_bf16_b256x4_r",
        "norm_layernorm_bf16_e4m3_b512x8_r_qd",
        "norm_softmax_online_f32_f32_b512x16_r",
        "norm_softmax_online_bf16_f32_b512x16_r",
        "norm_softmax_online_bf16_bf16_w32x4_r",
        "norm_softmax_online_bf16_bf16_s512x8_r",
        "norm_softmax_online_bf16_bf16_b512x16_p_r",
    ] {
        let e = name.parse::<NormSpec>().unwrap_err().to_string();
        assert!(
            e.contains("raw = true") && e.contains("holds its row as raw words"),
            "{name}: {e}"
        );
    }
}

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
    // A warp kernel's lane group loads its columns once, before its first row.
    for (name, held) in [
        ("norm_rmsnorm_bf16_bf16_w8x4_h4", "rj_cols_held<T, 1, 4>"),
        (
            "norm_layernorm_res_f32_f32_w32x1_h1",
            "rj_cols_held<T, 2, 1>",
        ),
    ] {
        let warp: NormSpec = name.parse().unwrap();
        assert_eq!(warp.name(), name);
        assert!(warp.holds_cols_from_launch() && warp.held_cols() > 0);
        let body = warp.render_body().unwrap();
        assert!(body.contains(held), "{name}");
        let load = body.find("a.held.load(").expect(name);
        assert!(load < body.find("run_row(a, r, 0, n, n").unwrap(), "{name}");
    }
    assert_eq!(
        "norm_rmsnorm_bf16_bf16_w8x4"
            .parse::<NormSpec>()
            .unwrap()
            .held_cols(),
        0
    );
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
        ("norm_rmsnorm_bf16_bf16_w8x4_g_h4", "warp kernel (no `_g`)"),
        ("norm_softmax_safe_bf16_bf16_w8x4_h4", "layer or RMS norm"),
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
    // Pairs of 16-bit packs: whole pairs, 16-byte accesses.
    let pair_aligned = [(0x1000, 2), (0x2010, 2)];
    assert!(NormSpec::whole_pairs_fit(4096, 4104, pair_aligned));
    assert!(!NormSpec::whole_pairs_fit(4092, 4096, pair_aligned));
    assert!(!NormSpec::whole_pairs_fit(4096, 4100, pair_aligned));
    assert!(!NormSpec::whole_pairs_fit(4096, 4096, aligned));
    for name in [
        "norm_rmsnorm_bf16_bf16_b256x4_v",
        "norm_softmax_safe_f16_f16_w8x4_v",
    ] {
        let pairs: NormSpec = name.parse().unwrap();
        assert!(pairs.paired_packs() && pairs.pairs, "{name}");
        assert_eq!(pairs.name(), name);
        // Its twins, for rows off the grid of pairs and of packs: in packs.
        assert!(!pairs.ragged_twin().paired_packs());
        assert!(!pairs.general_twin().paired_packs());
    }
    // Pairs only where asked for, and only where they can be.
    for name in [
        "norm_rmsnorm_bf16_bf16_b256x4",
        "norm_rmsnorm_bf16_bf16_w8x4",
    ] {
        assert!(!name.parse::<NormSpec>().unwrap().paired_packs(), "{name}");
    }
    for name in [
        "norm_rmsnorm_f32_f32_b256x4_v",
        "norm_rmsnorm_bf16_f32_b256x4_v",
        "norm_rmsnorm_bf16_bf16_b256x8_p_v",
        "norm_rmsnorm_bf16_bf16_s512x8_v",
        "norm_rmsnorm_bf16_bf16_w32x1_v",
        "norm_rmsnorm_bf16_bf16_l512x4_v",
    ] {
        let e = name.parse::<NormSpec>().unwrap_err().to_string();
        assert!(
            e.contains("pairs") && e.contains("even number of packs"),
            "{name}: {e}"
        );
    }
    assert!(
        "norm_rmsnorm_bf16_bf16_b256x4_v_g"
            .parse::<NormSpec>()
            .is_err()
    );
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
    // whole number of chunks (commit 5e57e4c), else `_p`.
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
    // Layer norm's rows of a whole number of larger chunks (commit
    // e164c6f): 16-bit s512x16_p_x from 65536, f32 s512x8_p_x at 65536
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
    // f32 layer norm takes the deferred kernel of 4 packs (commit 5011ae1)
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
    // (commit 4f4f766).
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
    // 2 blocks an SM (commit a3d9b82).
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
    // Where no cooperative launch is to be had, the same kernel takes its
    // items by ticket: a grid of one more block than items, all else as is.
    let t = p.by_ticket();
    assert!(!t.cooperative && t.grid == p.grid + 1);
    assert_eq!(
        (t.splits, t.span, t.counters, t.partials),
        (p.splits, p.span, p.counters, p.partials)
    );
    let q = rms.plan(4, 1_000_003, 132, 2);
    assert_eq!(q.by_ticket(), q);
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

#[test]
fn fp8_outputs_name_their_scaling_and_keep_the_row_in_one_block() {
    for name in [
        "norm_rmsnorm_res_bf16_e4m3_b256x4_x_qd",
        "norm_layernorm_f32_e4m3_w32x2_qs",
        "norm_rmsnorm_f16_e4m3_b512x8_qd",
    ] {
        let s: NormSpec = name.parse().unwrap();
        assert_eq!(s.name(), name);
        assert!(s.fp8.is_some() && s.output == DType::E4M3);
    }
    for (name, want) in [
        (
            "norm_rmsnorm_bf16_e4m3_b256x4",
            "or e4m3 with its scaling in the name",
        ),
        ("norm_rmsnorm_bf16_bf16_b256x4_qd", "needs an e4m3 output"),
        (
            "norm_softmax_online_bf16_e4m3_b256x4_qd",
            "softmax has no FP8 output",
        ),
        (
            "norm_rmsnorm_bf16_e4m3_s512x8_qd",
            "the warp or block layout",
        ),
        ("norm_rmsnorm_bf16_e4m3_b256x4_g_qd", "takes whole packs"),
        ("norm_rmsnorm_bf16_e4m3_b256x16_qd", "packs = 16"),
    ] {
        let e = name.parse::<NormSpec>().unwrap_err().to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
    // An FP8 row takes the layout its input type's rows give the 16-bit
    // kernel where its own kernel holds it (one block or group, at most
    // FP8_MAX_PACKS), up to 16384, then is refused by the block's capacity.
    let base = NormSpec {
        op: NormOp::RmsNorm,
        algo: None,
        input: DType::BF16,
        output: DType::E4M3,
        fp8: Some(Fp8Scale::PerRow),
        ..NormSpec::default()
    };
    let sixteen = NormSpec {
        output: DType::BF16,
        fp8: None,
        ..base.clone()
    };
    for cols in [100, 4000, 4096] {
        let (f, b) = (base.for_cols(cols), sixteen.for_cols(cols));
        assert_eq!(
            (f.layout, f.lanes, f.packs),
            (b.layout, b.lanes, b.packs),
            "{cols}"
        );
        // A block the row fills takes its exact form.
        let fills = f.layout == NormLayout::Block && f.fills_exactly(cols);
        assert_eq!(f.exact, fills, "{cols}");
    }
    for (cols, want) in [
        // Rows that fill the block take its exact form, others the plain one.
        (16384, "norm_rmsnorm_bf16_e4m3_b512x8_x_qd"),
        (1 << 20, "norm_rmsnorm_bf16_e4m3_b512x8_qd"),
    ] {
        assert_eq!(base.for_cols(cols).name(), want, "{cols}");
    }
    assert_eq!(base.for_cols(1 << 20).capacity(), Some(16384));
    // The scale's pointer closes the signature, as params() lists it.
    for cols in [100, 4096, 16384] {
        let s = base.for_cols(cols);
        crate::spec::check_params(&s).unwrap();
        assert_eq!(s.params().last().map(|p| p.name), Some("scale_ptr"));
    }
}

#[test]
fn a_params_list_that_drifts_from_its_template_is_caught() {
    // The template's own list passes; one with two parameters swapped, or one
    // short, does not.
    struct Drifted(NormSpec, fn(&mut Vec<crate::params::Param>));
    impl KernelSpec for Drifted {
        fn family(&self) -> Family {
            self.0.family()
        }
        fn validate(&self) -> Result<(), SpecError> {
            self.0.validate()
        }
        fn name(&self) -> String {
            self.0.name()
        }
        fn min_arch(&self) -> Arch {
            self.0.min_arch()
        }
        fn params(&self) -> Vec<crate::params::Param> {
            let mut p = self.0.params();
            (self.1)(&mut p);
            p
        }
        fn preludes(&self) -> Vec<&'static str> {
            self.0.preludes()
        }
        fn render_body(&self) -> Result<String, SpecError> {
            self.0.render_body()
        }
    }
    let spec: NormSpec = "norm_rmsnorm_res_bf16_bf16_b256x4".parse().unwrap();
    assert!(crate::spec::check_params(&Drifted(spec.clone(), |_| {})).is_ok());
    let swapped =
        crate::spec::check_params(&Drifted(spec.clone(), |p| p.swap(12, 13))).unwrap_err();
    assert!(swapped.contains("parameter 12"), "{swapped}");
    let short = crate::spec::check_params(&Drifted(spec, |p| {
        p.pop();
    }))
    .unwrap_err();
    assert!(
        short.contains("parameter 15") && short.contains("None"),
        "{short}"
    );
}

#[test]
fn block_and_loop_grids_never_pass_the_rows() {
    // Their kernels start a block's first row untested (templates/norm.cu):
    // a grid above the rows would read past the buffer.
    for name in [
        "norm_rmsnorm_bf16_bf16_b256x4_x_h4",
        "norm_rmsnorm_res_bf16_bf16_b256x8_p_x",
        "norm_rmsnorm_f32_f32_l512x4",
    ] {
        let s: NormSpec = name.parse().unwrap();
        assert!(matches!(s.layout, NormLayout::Block | NormLayout::Loop));
        for rows in [1u64, 2, 3, 131, 132, 133, 1000, 1 << 20, 1 << 33] {
            for (sms, per_sm) in [(1, 1), (132, 1), (132, 8), (4, 2)] {
                let grid = u64::from(s.plan(rows, 4096, sms, per_sm).grid);
                assert!(
                    (1..=rows).contains(&grid),
                    "{name}: {rows} rows, {sms}x{per_sm}: grid {grid}"
                );
            }
        }
    }
}

#[test]
fn what_a_row_loads_needs_sits_in_the_first_line_of_the_parameter_bank() {
    // A warp waits for each line of the bank it reads before its first load
    // (NormSpec::params).
    for name in [
        "norm_rmsnorm_bf16_bf16_b256x4_x_h4",
        "norm_rmsnorm_res_bf16_e4m3_b256x4_qd",
        "norm_layernorm_f32_f32_s512x4_o2_g",
    ] {
        let s: NormSpec = name.parse().unwrap();
        let ends = crate::params::param_ends(&s.params(), 1);
        for first in ["x_ptr", "w_ptr", "out_ptr", "rows", "cols", "ld"] {
            let end = ends.iter().find(|(n, _)| *n == first).unwrap().1;
            assert!(end <= 48, "{name}: {first} ends at byte {end}");
        }
    }
}
