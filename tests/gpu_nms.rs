//! nms on the GPU against the CPU twin (`reference_nms`), exact equality of the
//! kept index lists: random boxes at n in {0, 1, 2, 63, 64, 65, 1000, 20 000,
//! 100 003} and several thresholds, many score ties, inputs as misaligned views
//! between NaN poison, the chunked mask path forced at small n, the hand cases
//! (identical boxes, zero-area boxes, ties, IoU equal to the threshold), and bad
//! inputs as typed errors. Run on a GPU machine with `--ignored`
//! (REDJIT_REQUIRE_GPU=1 makes a missing GPU a failure).

mod common;

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use redjit::reference_nms;
use redjit::{Error, KernelInput, NmsKernel, NmsSpec};

const SIZES: &[usize] = &[0, 1, 2, 63, 64, 65, 1000, 20_000, 100_003];
const THRESHOLDS: &[f32] = &[0.0, 0.3, 0.5, 0.7, 1.0];

/// Random boxes of the benchmark's distribution (`reference_nms::random_boxes`),
/// with scores moved to a grid of 1/64 so many are equal.
fn random_case(rng: &mut common::Rng, n: usize) -> (Vec<f32>, Vec<f32>) {
    let (boxes, mut scores) = redjit::reference_nms::random_boxes(n, rng.next_u64());
    for s in &mut scores {
        *s = (*s * 64.0).floor() / 64.0;
    }
    (boxes, scores)
}

/// `v` between `offset` NaNs and 3 NaNs on the device: a kernel that reads
/// outside its view reads NaN.
fn upload(s: &Arc<CudaStream>, v: &[f32], offset: usize) -> CudaSlice<f32> {
    let mut host = vec![f32::NAN; offset];
    host.extend_from_slice(v);
    host.extend([f32::NAN; 3]);
    s.clone_htod(&host).unwrap()
}

fn run_gpu(
    k: &NmsKernel<'_>,
    s: &Arc<CudaStream>,
    boxes: &[f32],
    scores: &[f32],
    thr: f32,
    offset: usize,
) -> redjit::Result<Vec<i64>> {
    let b = upload(s, boxes, offset);
    let sc = upload(s, scores, offset + 1);
    let bv = b.slice(offset..offset + boxes.len());
    let sv = sc.slice(offset + 1..offset + 1 + scores.len());
    k.run(s, &bv as &dyn KernelInput, &sv as &dyn KernelInput, thr)
}

fn check(
    k: &NmsKernel<'_>,
    s: &Arc<CudaStream>,
    boxes: &[f32],
    scores: &[f32],
    thr: f32,
    what: &str,
) {
    let want = reference_nms::nms(boxes, scores, thr);
    for offset in [0, 1] {
        let got =
            run_gpu(k, s, boxes, scores, thr, offset).unwrap_or_else(|e| panic!("{what}: {e}"));
        if got != want {
            let first = got.iter().zip(&want).position(|(a, b)| a != b);
            panic!(
                "{what}, thr {thr}, offset {offset}: kept {} boxes, the twin {}; first difference at {first:?}",
                got.len(),
                want.len()
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_boxes_match_the_twin() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("random_boxes_match_the_twin");
    let s = rt.stream();
    // One kernel for every size: the workspace grows and is reused.
    let k = rt.nms(&NmsSpec::default()).unwrap();
    for &n in SIZES {
        let (boxes, scores) = random_case(&mut rng, n);
        let thresholds: &[f32] = if n > 20_000 { &[0.5] } else { THRESHOLDS };
        for &thr in thresholds {
            check(&k, s, &boxes, &scores, thr, &format!("n = {n}"));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_walk_block_size_and_forced_chunks_match() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("every_walk_block_size_and_forced_chunks_match");
    let s = rt.stream();
    let (boxes, scores) = random_case(&mut rng, 5000);
    for walk in redjit::codegen::spec::nms::all()
        .into_iter()
        .filter(|w| w.stage == redjit::NmsStage::Walk)
    {
        for chunk in [None, Some(64), Some(192), Some(1024)] {
            let k = rt.nms(&walk).unwrap().with_chunk_rows(chunk);
            check(
                &k,
                s,
                &boxes,
                &scores,
                0.5,
                &format!("{walk} chunk {chunk:?}"),
            );
        }
    }
    // n = 20 000 in chunks of 4096 rows.
    let (boxes, scores) = random_case(&mut rng, 20_000);
    let k = rt
        .nms(&NmsSpec::default())
        .unwrap()
        .with_chunk_rows(Some(4096));
    check(&k, s, &boxes, &scores, 0.5, "20000 in chunks of 4096");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn hand_cases_match_the_twin() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let k = rt.nms(&NmsSpec::default()).unwrap();
    let mut cases: Vec<(&str, Vec<f32>, Vec<f32>)> = vec![
        (
            "identical boxes",
            [1.0, 1.0, 5.0, 5.0].repeat(4),
            vec![0.1, 0.7, 0.3, 0.2],
        ),
        ("ties", [0.0, 0.0, 2.0, 2.0].repeat(3), vec![0.5, 0.5, 0.5]),
        (
            "signed zeros",
            [0.0, 0.0, 2.0, 2.0].repeat(3),
            vec![-0.0, 0.0, -0.0],
        ),
        (
            "zero-area boxes",
            vec![
                3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 0.0, 3.0, 6.0, 3.0, 0.0, 0.0, 6.0, 6.0,
            ],
            vec![0.9, 0.8, 0.7, 0.6],
        ),
        (
            "chain",
            vec![
                0.0, 0.0, 10.0, 10.0, 3.0, 0.0, 13.0, 10.0, 6.0, 0.0, 16.0, 10.0,
            ],
            vec![0.9, 0.8, 0.7],
        ),
        (
            "inverted boxes",
            vec![10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 10.0, 10.0],
            vec![0.9, 0.8],
        ),
        (
            "infinite scores",
            [0.0, 0.0, 4.0, 4.0].repeat(3),
            vec![f32::NEG_INFINITY, f32::INFINITY, 1.0],
        ),
    ];
    // 5000 copies of one box with equal scores: only index 0 stays; and 130
    // identical boxes, each 64-block boundary crossed.
    cases.push((
        "5000 identical, equal scores",
        [2.0, 2.0, 8.0, 8.0].repeat(5000),
        vec![0.25; 5000],
    ));
    cases.push((
        "130 identical",
        [2.0, 2.0, 8.0, 8.0].repeat(130),
        (0..130).map(|i| (i % 7) as f32).collect(),
    ));
    for (what, boxes, scores) in &cases {
        for &thr in THRESHOLDS {
            check(&k, s, boxes, scores, thr, what);
        }
    }
    let got = run_gpu(
        &k,
        s,
        &[1.0, 1.0, 5.0, 5.0].repeat(4),
        &[0.1, 0.7, 0.3, 0.2],
        0.5,
        0,
    )
    .unwrap();
    assert_eq!(got, [1]);
    // IoU exactly at the threshold is kept (strictly greater suppresses).
    let a = [0.0f32, 0.0, 10.0, 10.0];
    let b = [5.0f32, 0.0, 15.0, 10.0];
    let t = reference_nms::iou(&a, &b);
    let boxes = [a, b].concat();
    assert_eq!(run_gpu(&k, s, &boxes, &[0.9, 0.8], t, 0).unwrap(), [0, 1]);
    let below = f32::from_bits(t.to_bits() - 1);
    assert_eq!(run_gpu(&k, s, &boxes, &[0.9, 0.8], below, 0).unwrap(), [0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_inputs_are_typed_errors() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let k = rt.nms(&NmsSpec::default()).unwrap();
    let mut rng = common::Rng::fresh("bad_inputs_are_typed_errors");
    let (boxes, scores) = random_case(&mut rng, 300);
    let expect = |r: redjit::Result<Vec<i64>>, want: &str| {
        let e = r.expect_err(want);
        assert!(matches!(e, Error::Launch { .. }), "{want}: {e:?}");
        assert!(e.to_string().contains(want), "{want}: {e}");
    };
    let mut sc = scores.clone();
    sc[200] = f32::NAN;
    sc[250] = f32::NAN;
    expect(run_gpu(&k, s, &boxes, &sc, 0.5, 0), "scores[200] = NaN");
    let mut bx = boxes.clone();
    bx[4 * 7 + 2] = f32::INFINITY;
    expect(run_gpu(&k, s, &bx, &scores, 0.5, 0), "box 7 = [");
    bx[4 * 3] = f32::NAN;
    expect(run_gpu(&k, s, &bx, &scores, 0.5, 1), "box 3 = [NaN");
    expect(
        run_gpu(&k, s, &boxes, &scores, f32::NAN, 0),
        "iou_threshold = NaN",
    );
    expect(
        run_gpu(&k, s, &boxes, &scores, -0.1, 0),
        "iou_threshold = -0.1",
    );
    expect(
        run_gpu(&k, s, &boxes[..1196], &scores, 0.5, 0),
        "boxes = 1196 elements",
    );
    // A good call after the bad ones: the status is reset per call.
    check(&k, s, &boxes, &scores, 0.5, "after errors");
}
