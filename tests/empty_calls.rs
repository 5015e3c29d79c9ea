//! The empty-call rule (the runtime crate's docs, "Empty calls") in every
//! family whose call check runs without a GPU: no output elements is `Ok` and
//! nothing to launch; a value computed from no elements is an error naming the
//! rule. reduce_copy's and softmax_all's launchers are checked on the GPU
//! (`gpu_reduce_copy`, `gpu_softmax_all`), the norms' and reductions' too
//! (`gpu_norm`, `gpu_reduce`).

use redjit::{
    DType, Error, Matrix, NmsSpec, NmsStage, NormCall, NormSpec, ReduceSpec, ResultType,
    SoftmaxAllCall, SoftmaxAllSpec, check_nms_call, check_norm_call, check_reduce_call,
    check_softmax_all_call,
};

fn m(rows: usize, cols: usize, ld: usize) -> Option<Matrix> {
    Some(Matrix { rows, cols, ld })
}

fn refusal(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Err(e @ Error::Launch { .. }) => e.to_string(),
        other => panic!("not a launch refusal: {other:?}"),
    }
}

#[test]
fn reductions_with_no_results_launch_nothing_and_results_of_nothing_are_errors() {
    let rows: ReduceSpec = "reduce_rows_sum_f32_f32".parse().unwrap();
    let cols: ReduceSpec = "reduce_cols_sum_f32_f32".parse().unwrap();
    let all: ReduceSpec = "reduce_all_sum_f32_f32".parse().unwrap();
    let f = ResultType::F32;
    // No rows: no row results; no columns: no column results.
    assert!(check_reduce_call(&rows, &[(DType::F32, 0)], m(0, 5, 5), (f, 0)).is_ok());
    assert!(check_reduce_call(&cols, &[(DType::F32, 0)], m(3, 0, 0), (f, 0)).is_ok());
    // Still checked: the output's length and the input's dtype.
    let e = refusal(check_reduce_call(
        &rows,
        &[(DType::F32, 0)],
        m(0, 5, 5),
        (f, 1),
    ));
    assert!(e.contains("output length = 1"), "{e}");
    let e = refusal(check_reduce_call(
        &rows,
        &[(DType::BF16, 0)],
        m(0, 5, 5),
        (f, 0),
    ));
    assert!(e.contains("bf16"), "{e}");
    // Results that would reduce nothing.
    let e = refusal(check_reduce_call(
        &rows,
        &[(DType::F32, 0)],
        m(3, 0, 0),
        (f, 3),
    ));
    assert!(e.contains("would reduce no elements"), "{e}");
    let e = refusal(check_reduce_call(
        &cols,
        &[(DType::F32, 0)],
        m(0, 5, 5),
        (f, 5),
    ));
    assert!(e.contains("would reduce no elements"), "{e}");
    let e = refusal(check_reduce_call(&all, &[(DType::F32, 0)], None, (f, 1)));
    assert!(
        e.contains("n = 0") && e.contains("at least one element"),
        "{e}"
    );
}

fn norm_call(spec: &NormSpec, rows: usize, cols: usize, stats: bool) -> NormCall {
    let d = spec.input;
    let info = spec.op.info();
    NormCall {
        x: (d, rows * cols),
        residual: spec.residual.then_some((d, rows * cols)),
        weight: (!info.softmax).then_some((d, cols)),
        bias: info.bias.then_some((d, cols)),
        out: (spec.output, rows * cols),
        residual_out: spec.residual.then_some((d, rows * cols)),
        mean: None,
        rstd: (stats && !info.softmax).then_some((DType::F32, rows)),
        shape: Matrix {
            rows,
            cols,
            ld: cols,
        },
        param: 1e-5,
        in_place: false,
        scale: None,
    }
}

#[test]
fn norms_of_no_rows_launch_nothing_and_statistics_of_empty_rows_are_errors() {
    for name in [
        "norm_rmsnorm_bf16_bf16_b256x4_x",
        "norm_layernorm_res_f32_f32_w32x1",
        "norm_softmax_online_bf16_f32_s512x8_p",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        for (rows, cols) in [(0, 4096), (0, 0), (5, 0)] {
            let plan = check_norm_call(&spec, &norm_call(&spec, rows, cols, false), 264)
                .unwrap_or_else(|e| panic!("{name} {rows}x{cols}: {e}"));
            assert_eq!(plan, None, "{name} {rows}x{cols}");
        }
        if !spec.op.info().softmax {
            let e = refusal(check_norm_call(&spec, &norm_call(&spec, 5, 0, true), 264));
            assert!(e.contains("rows of no elements"), "{e}");
            // No rows: no statistics to write either.
            assert_eq!(
                check_norm_call(&spec, &norm_call(&spec, 0, 4096, true), 264).unwrap(),
                None
            );
        }
        // The buffers are still checked.
        let mut bad = norm_call(&spec, 0, 4096, false);
        bad.x.0 = DType::F16;
        assert!(check_norm_call(&spec, &bad, 264).is_err(), "{name}");
    }
}

#[test]
fn softmax_all_and_nms_of_nothing_launch_nothing() {
    let spec: SoftmaxAllSpec = "softmax_all_softmax_bf16_f32".parse().unwrap();
    let call = SoftmaxAllCall {
        x: (DType::BF16, 0, 0),
        y: (DType::F32, 0, 0),
        scale: 1.0,
    };
    assert_eq!(check_softmax_all_call(&spec, &call).unwrap(), 0);
    let nms = NmsSpec::new(NmsStage::Walk);
    let call = redjit::NmsCall {
        boxes: (DType::F32, 0),
        scores: (DType::F32, 0),
        iou_threshold: 0.5,
        chunk_rows: None,
    };
    assert_eq!(check_nms_call(&nms, &call).unwrap().n, 0);
}
