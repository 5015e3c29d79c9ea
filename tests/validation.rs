//! Every invalid reduce_copy spec, kernel name and arch is rejected before NVRTC
//! sees anything, with a message that names the offending value and the rule it
//! broke. Pure CPU: no NVRTC, no GPU.

use redjit::codegen::spec::reduce_copy::{MAX_DSTS, MAX_SRCS};
use redjit::{
    Arch, CompileCache, DType, Error, Jit, KernelSpec, ReduceCopySpec, Role, Rounding, SpecError,
};

/// One row: how to break the (valid) default spec, which field the error must
/// name, and the substrings its Display must contain.
struct Row {
    what: &'static str,
    mutate: fn(&mut ReduceCopySpec),
    field: &'static str,
    expect: &'static [&'static str],
}

const UNROLL_RULE: &str = "must be one of 1, 2, 4, 8";

fn invalid_spec_rows() -> Vec<Row> {
    vec![
        Row {
            what: "unroll 0",
            mutate: |s| s.unroll = 0,
            field: "unroll",
            expect: &["invalid unroll = 0", UNROLL_RULE],
        },
        Row {
            what: "unroll 3",
            mutate: |s| s.unroll = 3,
            field: "unroll",
            expect: &["invalid unroll = 3", UNROLL_RULE],
        },
        Row {
            what: "unroll 16",
            mutate: |s| s.unroll = 16,
            field: "unroll",
            expect: &["invalid unroll = 16", UNROLL_RULE],
        },
        Row {
            what: "accum bf16",
            mutate: |s| s.accum = DType::BF16,
            field: "accum",
            expect: &[
                "invalid accum = bf16",
                "the accumulation type must be one of: f32",
            ],
        },
        Row {
            what: "accum f16",
            mutate: |s| s.accum = DType::F16,
            field: "accum",
            expect: &[
                "invalid accum = f16",
                "the accumulation type must be one of: f32",
            ],
        },
        Row {
            what: "transport f32",
            mutate: |s| s.transport = DType::F32,
            field: "transport",
            expect: &[
                "invalid transport = f32",
                "the transport type must be one of: bf16, f16",
            ],
        },
        Row {
            what: "no sources",
            mutate: |s| s.srcs.clear(),
            field: "srcs",
            expect: &[
                "invalid srcs = 0 sources",
                "a reduce_copy has at least 1 and at most 8 source(s)",
            ],
        },
        Row {
            what: "9 sources",
            mutate: |s| s.srcs = vec![Role::Transport.into(); 9],
            field: "srcs",
            expect: &[
                "invalid srcs = 9 sources",
                "a reduce_copy has at least 1 and at most 8 source(s)",
            ],
        },
        Row {
            what: "stochastic rounding with no transport destination",
            mutate: |s| {
                s.rounding = Rounding::Stochastic;
                s.dsts = vec![Role::Accum];
            },
            field: "rounding",
            expect: &[
                "invalid rounding = sr",
                "stochastic rounding needs a transport-typed destination",
            ],
        },
        Row {
            what: "no destinations",
            mutate: |s| s.dsts.clear(),
            field: "dsts",
            expect: &[
                "invalid dsts = 0 destinations",
                "a reduce_copy has at least 1 and at most 2 destination(s)",
            ],
        },
        Row {
            what: "3 destinations",
            mutate: |s| s.dsts = vec![Role::Transport, Role::Accum, Role::Transport],
            field: "dsts",
            expect: &[
                "invalid dsts = 3 destinations",
                "a reduce_copy has at least 1 and at most 2 destination(s)",
            ],
        },
    ]
}

fn assert_contains_all(message: &str, expect: &[&str], context: &str) {
    for e in expect {
        assert!(
            message.contains(e),
            "{context}: message {message:?} lacks {e:?}"
        );
    }
}

#[test]
fn the_limits_the_table_assumes_are_the_crates_limits() {
    // The srcs/dsts rows above are written for these limits; if they change, the
    // rows must change with them.
    assert_eq!(MAX_SRCS, 8);
    assert_eq!(MAX_DSTS, 2);
}

#[test]
fn the_unmutated_spec_and_the_whole_matrix_are_valid() {
    // Otherwise the table below would not show that each mutation alone is rejected.
    ReduceCopySpec::default().validate().unwrap();
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for t in [DType::BF16, DType::F16] {
            for spec in ReduceCopySpec::matrix(unroll, t) {
                spec.validate()
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
            }
        }
    }
}

#[test]
fn every_invalid_spec_is_rejected_naming_the_value_and_the_rule() {
    let rows = invalid_spec_rows();
    assert_eq!(rows.len(), 11);
    for row in &rows {
        let mut spec = ReduceCopySpec::default();
        (row.mutate)(&mut spec);
        let err = spec
            .validate()
            .expect_err(&format!("{}: validate() accepted {spec:?}", row.what));
        match &err {
            SpecError::Invalid { field, .. } => {
                assert_eq!(*field, row.field, "{}: {err}", row.what)
            }
            other => panic!("{}: expected SpecError::Invalid, got {other:?}", row.what),
        }
        let message = err.to_string();
        assert_contains_all(&message, row.expect, row.what);

        // Every entry point that takes a spec reports the same error: render,
        // check_arch (even for an arch new enough), and the JIT, which must reject
        // the spec before it needs NVRTC.
        assert_eq!(spec.render().unwrap_err(), err, "{}: render", row.what);
        assert_eq!(
            spec.check_arch(Arch::SM90).unwrap_err(),
            err,
            "{}: check_arch",
            row.what
        );
        let jit = Jit::new(Arch::SM90, CompileCache::in_memory());
        match jit.compile(&spec) {
            Err(Error::Spec(e)) => assert_eq!(e, err, "{}: Jit::compile", row.what),
            Err(e) => panic!("{}: Jit::compile gave a non-spec error: {e}", row.what),
            Ok(c) => panic!("{}: Jit::compile accepted it as {}", row.what, c.name),
        }
        // Through redjit::Error the message is unchanged (transparent).
        assert_eq!(
            Error::Spec(err.clone()).to_string(),
            message,
            "{}",
            row.what
        );
    }
}

/// A bad kernel name, and the substrings the parse error must contain.
struct NameRow {
    input: &'static str,
    expect: &'static [&'static str],
}

const FORMAT_RULE: &str =
    "expected reduce_copy_u<unroll>_<accum>_<transport>_<src roles>_<dst roles>_<op>_<rounding>";

fn bad_name_rows() -> Vec<NameRow> {
    vec![
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TX_T_sum_rn",
            expect: &[
                "\"reduce_copy_u4_f32_bf16_TX_T_sum_rn\"",
                "roles are letters A (accum) and T (transport)",
            ],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TA_Q_sum_rn",
            expect: &[
                "\"reduce_copy_u4_f32_bf16_TA_Q_sum_rn\"",
                "roles are letters A (accum) and T (transport)",
            ],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TA_T_mean_rn",
            expect: &[
                "cannot parse op \"mean\"",
                "expected one of: sum, prod, min, max, premulsum, avg",
            ],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TA_T_sum_rz",
            expect: &["cannot parse rounding \"rz\"", "expected one of: rn, sr"],
        },
        NameRow {
            input: "reduce_copy_u4_f64_bf16_TA_T_sum_rn",
            expect: &[
                "cannot parse dtype \"f64\"",
                "expected one of: f32, bf16, f16",
            ],
        },
        NameRow {
            input: "reduce_copy_u3_f32_bf16_TA_T_sum_rn",
            expect: &["invalid unroll = 3", UNROLL_RULE],
        },
        NameRow {
            input: "reduce_copy_x4_f32_bf16_TA_T_sum_rn",
            expect: &[
                "\"reduce_copy_x4_f32_bf16_TA_T_sum_rn\"",
                "the unroll part is u<number>, e.g. u4",
            ],
        },
        NameRow {
            input: "reduce_copy_u_f32_bf16_TA_T_sum_rn",
            expect: &[
                "\"reduce_copy_u_f32_bf16_TA_T_sum_rn\"",
                "the unroll part is u<number>",
            ],
        },
        NameRow {
            // A valid name's parts, but a rule of the spec broken: the spec's rule.
            input: "reduce_copy_u4_bf16_bf16_TA_T_sum_rn",
            expect: &[
                "invalid accum = bf16",
                "the accumulation type must be one of: f32",
            ],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16__T_sum_rn",
            expect: &[
                "invalid srcs = 0 sources",
                "at least 1 and at most 8 source(s)",
            ],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TATATATAT_T_sum_rn",
            expect: &[
                "invalid srcs = 9 sources",
                "at least 1 and at most 8 source(s)",
            ],
        },
        NameRow {
            input: "foo",
            expect: &["cannot parse reduce_copy kernel name \"foo\"", FORMAT_RULE],
        },
        NameRow {
            input: "",
            expect: &["cannot parse reduce_copy kernel name \"\"", FORMAT_RULE],
        },
        NameRow {
            input: "reduce_copy",
            expect: &["\"reduce_copy\"", FORMAT_RULE],
        },
        NameRow {
            // The rounding is missing.
            input: "reduce_copy_u4_f32_bf16_TA_T_sum",
            expect: &["\"reduce_copy_u4_f32_bf16_TA_T_sum\"", FORMAT_RULE],
        },
        NameRow {
            // Only the unroll.
            input: "reduce_copy_u4",
            expect: &["\"reduce_copy_u4\"", FORMAT_RULE],
        },
        NameRow {
            // One part too many.
            input: "reduce_copy_u4_f32_bf16_TA_T_sum_rn_x",
            expect: &["\"reduce_copy_u4_f32_bf16_TA_T_sum_rn_x\"", FORMAT_RULE],
        },
        NameRow {
            // An upper-case dtype parses to a valid spec, but not its one spelling.
            input: "reduce_copy_u4_F32_bf16_TA_T_sum_rn",
            expect: &[
                "\"reduce_copy_u4_F32_bf16_TA_T_sum_rn\"",
                "did you mean reduce_copy_u4_f32_bf16_TA_T_sum_rn?",
            ],
        },
        NameRow {
            input: "reduce_copy_u04_f32_bf16_TA_T_sum_rn",
            expect: &["did you mean reduce_copy_u4_f32_bf16_TA_T_sum_rn?"],
        },
        NameRow {
            // Lower case marks a read-only source; destinations have no load kind.
            input: "reduce_copy_u4_f32_bf16_Ta_t_sum_rn",
            expect: &["destination roles are letters A (accum) and T (transport)"],
        },
        NameRow {
            input: "reduce_copy_u4_f32_bf16_TA_A_sum_sr",
            expect: &["stochastic rounding needs a transport-typed destination"],
        },
        NameRow {
            // Another family's prefix.
            input: "reduce_u4_f32_bf16_TA_T_sum_rn",
            expect: &["\"reduce_u4_f32_bf16_TA_T_sum_rn\"", FORMAT_RULE],
        },
    ]
}

#[test]
fn every_bad_kernel_name_is_rejected_naming_the_input_and_the_rule() {
    for row in bad_name_rows() {
        let err = row
            .input
            .parse::<ReduceCopySpec>()
            .expect_err(&format!("{:?} parsed", row.input));
        assert_contains_all(&err.to_string(), row.expect, row.input);
    }
}

#[test]
fn a_good_name_still_parses_so_the_bad_rows_are_not_rejected_by_accident() {
    let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse().unwrap();
    assert_eq!(spec, ReduceCopySpec::default());
    // Read-only sources, every op, stochastic rounding, 8 sources, 2 destinations.
    let spec: ReduceCopySpec = "reduce_copy_u2_f32_f16_TaTaTaTa_TA_premulsum_sr"
        .parse()
        .unwrap();
    assert_eq!(spec.srcs.len(), 8);
    assert_eq!(spec.srcs[1], redjit::Src::read_only(Role::Accum));
    assert_eq!(spec.dsts, vec![Role::Transport, Role::Accum]);
    assert_eq!(spec.op, redjit::Op::PreMulSum);
    let spec: ReduceCopySpec = "reduce_copy_u8_f32_f16_A_T_sum_rn".parse().unwrap();
    assert_eq!(spec.unroll, 8);
    assert_eq!(spec.transport, DType::F16);
    assert_eq!(spec.srcs, vec![Role::Accum.into()]);
    assert_eq!(spec.dsts, vec![Role::Transport]);
}

#[test]
fn a_bf16_spec_on_sm_75_is_unsupported_naming_both_archs() {
    let spec = ReduceCopySpec::default();
    let err = spec.check_arch(Arch(75)).unwrap_err();
    assert_eq!(
        err,
        SpecError::Unsupported {
            what: spec.name(),
            arch: Arch(75),
            needs: Arch::SM80,
        }
    );
    let message = err.to_string();
    assert_contains_all(
        &message,
        &[
            "reduce_copy_u4_f32_bf16_TA_T_sum_rn",
            "not supported on sm_75",
            "needs sm_80 or newer",
        ],
        "check_arch(sm_75)",
    );

    // The bound is exact: sm_80 and later are accepted.
    spec.check_arch(Arch::SM80).unwrap();
    spec.check_arch(Arch::SM90).unwrap();
    // An f16 spec has the same bound.
    let f16 = ReduceCopySpec {
        transport: DType::F16,
        ..ReduceCopySpec::default()
    };
    assert!(
        f16.check_arch(Arch(75))
            .unwrap_err()
            .to_string()
            .contains("needs sm_80")
    );
    // A spec whose buffers are all f32 uses no bf16/f16 conversion and runs on sm_75.
    let all_f32 = ReduceCopySpec {
        srcs: vec![Role::Accum.into()],
        dsts: vec![Role::Accum],
        ..ReduceCopySpec::default()
    };
    all_f32.check_arch(Arch(75)).unwrap();

    // The JIT refuses it before it needs NVRTC, with the same error.
    let jit = Jit::new(Arch(75), CompileCache::in_memory());
    match jit.compile(&spec) {
        Err(Error::Spec(e)) => assert_eq!(e.to_string(), message),
        Err(e) => panic!("expected a spec error, got {e}"),
        Ok(c) => panic!("compiled {} for sm_75", c.name),
    }
}
