//! Every invalid reduce spec, kernel name, arch and call is rejected before NVRTC
//! or a GPU sees anything, with a message that names the offending value and the
//! rule it broke. Pure CPU.

use redjit::{
    Arch, DType, Error, KernelSpec, Matrix, ReduceAxis, ReduceOp, ReduceShape, ReduceSpec,
    ResultType, SpecError, check_reduce_call,
};

struct Row {
    what: &'static str,
    mutate: fn(&mut ReduceSpec),
    field: &'static str,
    expect: &'static [&'static str],
}

fn invalid_spec_rows() -> Vec<Row> {
    vec![
        Row {
            what: "bf16 accumulation of f32",
            mutate: |s| s.accum = DType::BF16,
            field: "accum",
            expect: &["invalid accum = bf16", "in the input's own type (f32)"],
        },
        Row {
            what: "f16 accumulation of bf16",
            mutate: |s| {
                s.input = DType::BF16;
                s.accum = DType::F16;
            },
            field: "accum",
            expect: &["invalid accum = f16", "in the input's own type (bf16)"],
        },
        Row {
            what: "lossy max",
            mutate: |s| {
                s.op = ReduceOp::Max;
                s.input = DType::F16;
                s.accum = DType::F16;
            },
            field: "accum",
            expect: &[
                "invalid accum = f16",
                "max accumulates in f32 only",
                "for sum, mean, dot, sumsq",
            ],
        },
        Row {
            what: "lossy variance",
            mutate: |s| {
                s.op = ReduceOp::VarSamp;
                s.input = DType::BF16;
                s.accum = DType::BF16;
            },
            field: "accum",
            expect: &["varsamp accumulates in f32 only"],
        },
        Row {
            what: "an i8 sum in floats",
            mutate: |s| s.input = DType::I8,
            field: "accum",
            expect: &[
                "invalid accum = f32",
                "sum of i8 inputs accumulates exactly in integers",
                "one of: i64",
            ],
        },
        Row {
            what: "an i8 dot in its own type",
            mutate: |s| {
                s.op = ReduceOp::Dot;
                s.input = DType::I8;
                s.accum = DType::I8;
            },
            field: "accum",
            expect: &[
                "invalid accum = i8",
                "accumulator must be one of: f32, bf16, f16, i64",
            ],
        },
        Row {
            what: "an i8 argmax in i64",
            mutate: |s| {
                s.op = ReduceOp::ArgMax;
                s.input = DType::I8;
                s.accum = DType::I64;
            },
            field: "accum",
            expect: &["invalid accum = i64", "argmax of i8 accumulates in f32"],
        },
        Row {
            what: "an fp8 sum in i64",
            mutate: |s| {
                s.input = DType::E5M2;
                s.accum = DType::I64;
            },
            field: "accum",
            expect: &["invalid accum = i64", "integer inputs (i8)"],
        },
        Row {
            what: "an fp8 sum in fp8",
            mutate: |s| {
                s.input = DType::E4M3;
                s.accum = DType::E4M3;
            },
            field: "accum",
            expect: &["invalid accum = e4m3"],
        },
        Row {
            what: "an i64 input",
            mutate: |s| s.input = DType::I64,
            field: "input",
            expect: &["invalid input = i64", "f32, bf16, f16, e4m3, e5m2, i8"],
        },
        Row {
            what: "warp per row on a full reduction",
            mutate: |s| s.warp_per_row = true,
            field: "warp_per_row",
            expect: &["only row reductions have a warp-per-row kernel, not axis all"],
        },
        Row {
            what: "warp per row on columns",
            mutate: |s| {
                s.axis = ReduceAxis::Cols;
                s.warp_per_row = true;
            },
            field: "warp_per_row",
            expect: &["not axis cols"],
        },
    ]
}

#[test]
fn invalid_specs_are_rejected_with_the_field_and_the_rule() {
    for row in invalid_spec_rows() {
        let mut spec = ReduceSpec::default();
        (row.mutate)(&mut spec);
        let err = spec.validate().unwrap_err();
        match &err {
            SpecError::Invalid { field, .. } => assert_eq!(*field, row.field, "{}", row.what),
            other => panic!("{}: {other:?}", row.what),
        }
        let msg = err.to_string();
        for e in row.expect {
            assert!(msg.contains(e), "{}: {msg:?} lacks {e:?}", row.what);
        }
        // Rendering validates too: an invalid spec never becomes source.
        assert!(spec.render().is_err(), "{}", row.what);
    }
}

#[test]
fn every_valid_spec_renders() {
    for &axis in ReduceAxis::ALL {
        for spec in ReduceSpec::matrix(axis) {
            assert!(spec.validate().is_ok());
            let code = spec.render().unwrap().code;
            assert!(
                code.contains(&format!("{}(", spec.name())),
                "{}",
                spec.name()
            );
        }
    }
}

#[test]
fn bad_names_say_what_was_expected() {
    let cases: &[(&str, &[&str])] = &[
        (
            "reduce_all_sum_f32",
            &["expected reduce_<axis>_<op>_<input>_<accum>[_w|_c|_t<threads>u<unroll>]"],
        ),
        (
            "reduce_diag_sum_f32_f32",
            &["reduction axis", "\"diag\"", "all, rows, cols"],
        ),
        (
            "reduce_all_median_f32_f32",
            &["reduction", "\"median\"", "argmax"],
        ),
        ("reduce_all_sum_f64_f32", &["dtype", "\"f64\""]),
        ("reduce_all_sum_f32_f32_w", &["not axis all"]),
        (
            "reduce_cols_sum_f32_f32_s",
            &["split-row twin", "not axis cols"],
        ),
        (
            "reduce_rows_sum_f32_f32_w_s",
            &["split-row twin", "warp per row"],
        ),
        ("reduce_rows_sum_f32_f32_s_t128u8", &["default layout"]),
        (
            "reduce_cols_sum_f32_f32_c",
            &["cluster kernel", "not axis cols"],
        ),
        ("reduce_all_max_bf16_bf16", &["max accumulates in f32 only"]),
        ("REDUCE_all_sum_f32_f32", &["expected reduce_"]),
        (
            "reduce_all_SUM_f32_f32",
            &["not the canonical spelling", "reduce_all_sum_f32_f32"],
        ),
    ];
    for (name, expect) in cases {
        let msg = name.parse::<ReduceSpec>().unwrap_err().to_string();
        for e in *expect {
            assert!(msg.contains(e), "{name}: {msg:?} lacks {e:?}");
        }
    }
    let ok: ReduceSpec = "reduce_rows_dot_f16_f16_w".parse().unwrap();
    assert!(ok.warp_per_row && ok.op == ReduceOp::Dot && ok.accum == DType::F16);
    let ok: ReduceSpec = "reduce_all_argmax_bf16_f32_c".parse().unwrap();
    assert!(ok.cluster && !ok.warp_per_row && ok.op == ReduceOp::ArgMax);
    let ok: ReduceSpec = "reduce_rows_argmax_bf16_f32_s".parse().unwrap();
    assert!(ok.split_rows && !ok.warp_per_row && ok.axis == ReduceAxis::Rows);
}

#[test]
fn arch_gates_fail_before_nvrtc() {
    // max.NaN and 16-bit conversions need sm_80; acq_rel atomics sm_70.
    let max: ReduceSpec = "reduce_all_max_f32_f32".parse().unwrap();
    let err = max.check_arch(Arch(75)).unwrap_err();
    assert!(
        matches!(err, SpecError::Unsupported { needs, .. } if needs == Arch::SM80),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("reduce_all_max_f32_f32 is not supported on sm_75")
    );
    let sum: ReduceSpec = "reduce_all_sum_f32_f32".parse().unwrap();
    assert!(sum.check_arch(Arch(75)).is_ok());
    assert!(sum.check_arch(Arch(61)).is_err());
    let bf16: ReduceSpec = "reduce_cols_sum_bf16_f32".parse().unwrap();
    assert!(bf16.check_arch(Arch(75)).is_err() && bf16.check_arch(Arch::SM80).is_ok());
    // The cluster twin: thread-block clusters are sm_90.
    let cluster = sum.for_cluster();
    assert!(cluster.check_arch(Arch::SM80).is_err() && cluster.check_arch(Arch::SM90).is_ok());
}

#[test]
fn fp8_on_sm80_is_refused_before_nvrtc_naming_the_arch_and_the_rule() {
    // cvt.rn.f16x2.e4m3x2 / e5m2x2 are sm_89+; the JIT refuses before NVRTC
    // (none needs to be installed for this test).
    let jit = redjit::Jit::new(Arch::SM80, redjit::CompileCache::in_memory());
    for axis in [ReduceAxis::All, ReduceAxis::Rows, ReduceAxis::Cols] {
        for input in [DType::E4M3, DType::E5M2] {
            let spec = ReduceSpec {
                axis,
                input,
                ..ReduceSpec::default()
            };
            let err = jit.compile(&spec).unwrap_err();
            let Error::Spec(SpecError::Unsupported { what, arch, needs }) = &err else {
                panic!("{}: {err}", spec.name());
            };
            assert_eq!((*arch, *needs), (Arch::SM80, Arch::SM89), "{err}");
            assert!(what.contains(&spec.name()), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("its {input} input's PTX conversions"))
                    && msg.contains("is not supported on sm_80: it needs sm_89 or newer"),
                "{msg}"
            );
        }
    }
    // i8 has no such rule.
    let i8_sum: ReduceSpec = "reduce_all_sum_i8_i64".parse().unwrap();
    assert!(i8_sum.check_arch(Arch::SM80).is_ok());
}

#[test]
fn integer_results_are_i64_and_the_launcher_checks_them() {
    let m = Some(Matrix {
        rows: 3,
        cols: 10,
        ld: 10,
    });
    let sum: ReduceSpec = "reduce_rows_sum_i8_i64".parse().unwrap();
    assert!(check_reduce_call(&sum, &[(DType::I8, 30)], m, (ResultType::I64, 3)).is_ok());
    let e = check_reduce_call(&sum, &[(DType::I8, 30)], m, (ResultType::F32, 3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("sum writes i64"), "{e}");
    let e = check_reduce_call(&sum, &[(DType::E4M3, 30)], m, (ResultType::I64, 3))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("src0: e4m3") && e.contains("this kernel reads i8"),
        "{e}"
    );
    let mean: ReduceSpec = "reduce_rows_mean_i8_i64".parse().unwrap();
    assert!(check_reduce_call(&mean, &[(DType::I8, 30)], m, (ResultType::F32, 3)).is_ok());
    let dot: ReduceSpec = "reduce_all_dot_i8_i64".parse().unwrap();
    assert!(
        check_reduce_call(
            &dot,
            &[(DType::I8, 9), (DType::I8, 9)],
            None,
            (ResultType::I64, 1)
        )
        .is_ok()
    );
}

fn call_err(
    name: &str,
    inputs: &[(DType, usize)],
    m: Option<Matrix>,
    out: (ResultType, usize),
) -> String {
    let spec: ReduceSpec = name.parse().unwrap();
    match check_reduce_call(&spec, inputs, m, out) {
        Err(e @ Error::Launch { .. }) => e.to_string(),
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn bad_calls_are_refused_with_the_value_and_the_rule() {
    let m = |rows, cols, ld| Some(Matrix { rows, cols, ld });
    let f = ResultType::F32;
    let cases: Vec<(String, &[&str])> = vec![
        (
            call_err("reduce_all_sum_f32_f32", &[(DType::BF16, 10)], None, (f, 1)),
            &["dtype = src0: bf16", "this kernel reads f32"],
        ),
        (
            call_err("reduce_all_sum_f32_f32", &[(DType::F32, 0)], None, (f, 1)),
            &["n = 0", "at least one element"],
        ),
        (
            call_err("reduce_all_sum_f32_f32", &[(DType::F32, 10)], None, (f, 2)),
            &["output length = 2", "1 result(s)"],
        ),
        (
            call_err(
                "reduce_all_argmax_f32_f32",
                &[(DType::F32, 10)],
                None,
                (f, 1),
            ),
            &["output type = F32", "argmax writes i64"],
        ),
        (
            call_err(
                "reduce_all_max_f32_f32",
                &[(DType::F32, 10)],
                None,
                (ResultType::I64, 1),
            ),
            &["max writes f32"],
        ),
        (
            call_err("reduce_all_dot_f32_f32", &[(DType::F32, 10)], None, (f, 1)),
            &["number of inputs = 1", "dot reads exactly 2"],
        ),
        (
            call_err(
                "reduce_all_dot_f32_f32",
                &[(DType::F32, 10), (DType::F32, 9)],
                None,
                (f, 1),
            ),
            &["length = src1: 9", "length of src0 (10)"],
        ),
        (
            call_err(
                "reduce_all_sum_f32_f32",
                &[(DType::F32, 10)],
                m(2, 5, 5),
                (f, 1),
            ),
            &["takes no matrix shape"],
        ),
        (
            call_err("reduce_rows_sum_f32_f32", &[(DType::F32, 10)], None, (f, 2)),
            &["a rows reduction needs a matrix shape"],
        ),
        (
            call_err(
                "reduce_rows_sum_f32_f32",
                &[(DType::F32, 10)],
                m(2, 5, 4),
                (f, 2),
            ),
            &["ld = 4", "at least cols (5)"],
        ),
        (
            // Rows of no elements have no sums (tests/empty_calls.rs: no rows
            // at all is an empty call).
            call_err(
                "reduce_rows_sum_f32_f32",
                &[(DType::F32, 10)],
                m(2, 0, 5),
                (f, 2),
            ),
            &["each of the 2 result(s)", "would reduce no elements"],
        ),
        (
            // 2 rows of ld 6: the second row ends at element 11.
            call_err(
                "reduce_cols_sum_f32_f32",
                &[(DType::F32, 10)],
                m(2, 5, 6),
                (f, 5),
            ),
            &["must fit the input's 10"],
        ),
        (
            call_err(
                "reduce_rows_sum_f32_f32",
                &[(DType::F32, 10)],
                m(usize::MAX / 2, 5, 5),
                (f, 1),
            ),
            &["must fit the input's 10"],
        ),
        (
            call_err(
                "reduce_cols_sum_f32_f32",
                &[(DType::F32, 10)],
                m(2, 5, 5),
                (f, 2),
            ),
            &["output length = 2", "5 result(s)"],
        ),
    ];
    for (msg, expect) in &cases {
        for e in *expect {
            assert!(msg.contains(e), "{msg:?} lacks {e:?}");
        }
    }
    // And the good calls pass, with the shape the launcher plans from.
    let ok = |name: &str, inputs: &[(DType, usize)], m, out| {
        let spec: ReduceSpec = name.parse().unwrap();
        check_reduce_call(&spec, inputs, m, out).unwrap()
    };
    assert_eq!(
        ok("reduce_all_sum_f32_f32", &[(DType::F32, 10)], None, (f, 1)),
        ReduceShape::All { n: 10 }
    );
    // A strided view: the last row needs only cols elements past its start.
    assert_eq!(
        ok(
            "reduce_cols_sum_f32_f32",
            &[(DType::F32, 11)],
            m(2, 5, 6),
            (f, 5)
        ),
        ReduceShape::Matrix {
            rows: 2,
            cols: 5,
            ld: 6
        }
    );
    assert_eq!(
        ok(
            "reduce_rows_argmin_bf16_f32",
            &[(DType::BF16, 11)],
            m(2, 5, 6),
            (ResultType::I64, 2)
        ),
        ReduceShape::Matrix {
            rows: 2,
            cols: 5,
            ld: 6
        }
    );
}
