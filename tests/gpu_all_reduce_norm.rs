//! The fused all-reduce + residual + RMS norm (issue 60), one-shot,
//! two-stage, push and LL, on one GPU with R
//! in {2, 4, 8} virtual ranks (the test placement: the kernels and barriers
//! are the multi-GPU ones, only the pointers differ): f32, bf16 and f16 rows
//! from 1 token to 129 of 128 to 8192 columns, bf16 and f16 with an e4m3
//! output (per-row or given scale), fresh random inputs, outputs poisoned
//! with guards past them. Every rank's new residual must be the CPU twin's
//! bits (the all-reduce's sum rounded, plus the residual, rounded), y within
//! the norm family's bound of the twin's f64 RMS norm, and every rank's y
//! and scales the same bits. A graph of one call replayed 1000 times; bad
//! calls are typed errors before any launch. Run with `--ignored` on a GPU
//! machine; scripts/gpu-run.sh tests runs it.

mod common;

use std::time::Duration;

use common::ar::{Elem, rank_stream};
use common::ar_norm::{Case, Got, RankInputs, bits_of, check, random_inputs, run};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use redjit::all_reduce::{AddRmsNorm, ArFp8Scales, CommOptions, Communicator, Placement};
use redjit::codegen::spec::all_reduce::norm::ArNorm;
use redjit::codegen::spec::norm::Fp8Scale;
use redjit::peer::LegacyAlloc;
use redjit::{AllReduceAlgo, AllReduceSpec, DType, Error, F8E4M3, KernelInput, KernelOutput};

fn comm(world: u32) -> Option<Communicator> {
    common::gpu_or_skip()?;
    Some(
        Communicator::new(
            Placement::SameGpu { ordinal: 0, world },
            CommOptions::default()
                .timeout(Duration::from_secs(10))
                .max_bytes(16 << 20)
                .ll_bytes(Some(LL_BYTES)),
        )
        .unwrap(),
    )
}

/// Shapes (rows, cols): LLM widths at 1, 16 and 128 tokens, and odd ones.
const SHAPES: [(usize, usize); 7] = [
    (1, 4096),
    (16, 4096),
    (128, 8192),
    (5, 6144),
    (37, 1000),
    (129, 128),
    (3, 16),
];

/// The largest message the LL kernel takes in these tests.
const LL_BYTES: usize = 4 << 20;

fn matches_the_twin<T: Elem>(test: &str, fp8s: &[Option<Fp8Scale>]) {
    let mut rng = common::Rng::fresh(test);
    for world in [2u32, 4, 8] {
        let Some(c) = comm(world) else { return };
        for &fp8 in fp8s {
            for (rows, cols) in SHAPES {
                let layouts = ArNorm::candidates(world, T::DT, cols, fp8);
                // The shapes here no layout holds: f32 rows past 4096 take
                // more registers than a thread has from 4 ranks up.
                assert!(
                    !layouts.is_empty() || (T::DT == DType::F32 && cols > 4096 && world >= 4),
                    "no fused layout for {world} ranks of {rows}x{cols} {}",
                    T::DT
                );
                // Every layout the call may take (the default is the first),
                // one-shot, two-stage, push and, where it takes the call, LL.
                // A row in a cluster of blocks is the LL kernel's only.
                let bytes = rows * cols * T::DT.info().bytes as usize;
                let kernels = layouts.iter().flat_map(|&norm| {
                    norm.algos(world, T::DT)
                        .into_iter()
                        .filter(move |&a| a != AllReduceAlgo::PushLl || bytes <= LL_BYTES)
                        .map(move |algo| (norm, algo))
                });
                for (norm, algo) in kernels {
                    let spec = AllReduceSpec {
                        world,
                        dtype: T::DT,
                        algo,
                        norm: Some(norm),
                        ..AllReduceSpec::default()
                    };
                    let inputs = random_inputs::<T>(&mut rng, world as usize, rows * cols);
                    let weight: Vec<T> = rng
                        .values(cols)
                        .iter()
                        .map(|&v| T::from_f64(f64::from(v)))
                        .collect();
                    let given = 0.01 + rng.value().abs();
                    let case = Case::new(&spec, &inputs, &weight, (rows, cols), given);
                    check(&case, &run(&c, &case));
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_f32_matches_the_twin_on_every_rank() {
    matches_the_twin::<f32>("fused_f32_matches_the_twin_on_every_rank", &[None]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_bf16_matches_the_twin_on_every_rank() {
    matches_the_twin::<bf16>(
        "fused_bf16_matches_the_twin_on_every_rank",
        &[None, Some(Fp8Scale::PerRow), Some(Fp8Scale::Given)],
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_f16_matches_the_twin_on_every_rank() {
    matches_the_twin::<f16>(
        "fused_f16_matches_the_twin_on_every_rank",
        &[None, Some(Fp8Scale::PerRow), Some(Fp8Scale::Given)],
    );
}

/// One call captured in a CUDA graph (inputs read in place), replayed 1000
/// times with new inputs each time; after every replay each rank's residual
/// and y are checked against the twin over the residual the replay before
/// left (the residual is updated in place by each).
fn replayed_1000_times(test: &str, algo: AllReduceAlgo) {
    use cudarc::driver::sys;
    let Some(c) = comm(2) else { return };
    let mut rng = common::Rng::fresh(test);
    let (rows, cols, w) = (4usize, 4096usize, 2usize);
    let n = rows * cols;
    let spec = AllReduceSpec {
        world: 2,
        dtype: DType::BF16,
        algo,
        norm: ArNorm::for_row(2, DType::BF16, cols, Some(Fp8Scale::PerRow)),
        ..AllReduceSpec::default()
    };
    let legacy: Vec<LegacyAlloc> = (0..w)
        .map(|r| LegacyAlloc::zeroed(c.runtime(r).context(), n * 2).unwrap())
        .collect();
    // SAFETY: each allocation holds n bf16 and outlives its slice, which is
    // leaked at the end so that only the LegacyAlloc frees the memory.
    let mut xs: Vec<CudaSlice<bf16>> = legacy
        .iter()
        .enumerate()
        .map(|(r, a)| unsafe { rank_stream(&c, r).upgrade_device_ptr(a.ptr(), n) })
        .collect();
    let mut residual: Vec<bf16> = rng.values(n).iter().map(|&v| bf16::from_f32(v)).collect();
    let weight: Vec<bf16> = rng
        .values(cols)
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    let mut res: Vec<CudaSlice<bf16>> = (0..w)
        .map(|r| rank_stream(&c, r).clone_htod(&residual).unwrap())
        .collect();
    let ws: Vec<CudaSlice<bf16>> = (0..w)
        .map(|r| rank_stream(&c, r).clone_htod(&weight).unwrap())
        .collect();
    let mut ys: Vec<CudaSlice<F8E4M3>> = (0..w)
        .map(|r| rank_stream(&c, r).alloc_zeros::<F8E4M3>(n).unwrap())
        .collect();
    let mut scales: Vec<CudaSlice<f32>> = (0..w)
        .map(|r| rank_stream(&c, r).alloc_zeros::<f32>(rows).unwrap())
        .collect();
    let issue = |xs: &[CudaSlice<bf16>],
                 res: &mut [CudaSlice<bf16>],
                 ys: &mut [CudaSlice<F8E4M3>],
                 scales: &mut [CudaSlice<f32>]| {
        let x: Vec<&dyn KernelInput> = xs.iter().map(|b| b as &dyn KernelInput).collect();
        let mut r: Vec<&mut dyn KernelOutput> =
            res.iter_mut().map(|b| b as &mut dyn KernelOutput).collect();
        let wi: Vec<&dyn KernelInput> = ws.iter().map(|b| b as &dyn KernelInput).collect();
        let mut o: Vec<&mut dyn KernelOutput> =
            ys.iter_mut().map(|b| b as &mut dyn KernelOutput).collect();
        let mut sc: Vec<&mut dyn KernelOutput> = scales
            .iter_mut()
            .map(|b| b as &mut dyn KernelOutput)
            .collect();
        c.all_reduce_add_rms_norm(AddRmsNorm {
            x: &x,
            residual: &mut r,
            weight: &wi,
            out: &mut o,
            scale: Some(ArFp8Scales::PerRow(&mut sc)),
            cols,
            eps: 1e-5,
            layout: None,
            algo: Some(algo),
            skip_rank: None,
        })
    };
    // Compiled and loaded before capture (an eager call), then the residual
    // reset.
    issue(&xs, &mut res, &mut ys, &mut scales).unwrap();
    c.synchronize().unwrap();
    for (r, b) in res.iter_mut().enumerate() {
        rank_stream(&c, r).memcpy_htod(&residual, b).unwrap();
    }
    c.synchronize().unwrap();
    let main = c.stream().clone();
    c.begin_capture().unwrap();
    main.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    issue(&xs, &mut res, &mut ys, &mut scales).unwrap();
    let graph = main
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    // The one-shot and two-stage kernels read x through a table slot; the
    // LL and push kernels in place.
    let slots = u32::from(matches!(
        algo,
        AllReduceAlgo::OneShot | AllReduceAlgo::TwoStage
    ));
    assert_eq!(c.end_capture().unwrap(), slots);
    for it in 0..1000 {
        // Small inputs keep the residual's growth over 1000 replays modest.
        let host_x: Vec<Vec<bf16>> = (0..w)
            .map(|_| {
                rng.values(n)
                    .iter()
                    .map(|&v| bf16::from_f32(v / 64.0))
                    .collect()
            })
            .collect();
        for (r, h) in host_x.iter().enumerate() {
            rank_stream(&c, r).memcpy_htod(h, &mut xs[r]).unwrap();
        }
        for r in 0..w {
            rank_stream(&c, r).synchronize().unwrap();
        }
        graph.launch().unwrap();
        c.synchronize().unwrap();
        let inputs: Vec<RankInputs<bf16>> = host_x
            .into_iter()
            .map(|x| RankInputs {
                x,
                residual: residual.clone(),
            })
            .collect();
        let got = Got {
            residual: bits_of(&c, &res, |v| v.bits()),
            y: bits_of(&c, &ys, |v| u32::from(v.to_bits())),
            scales: (0..w)
                .map(|r| rank_stream(&c, r).clone_dtoh(&scales[r]).unwrap())
                .collect(),
        };
        let case = Case::new(&spec, &inputs, &weight, (rows, cols), 1.0);
        check(&case, &got);
        residual = got.residual[0]
            .iter()
            .map(|&b| bf16::from_bits(b as u16))
            .collect();
        let _ = it;
    }
    drop(graph);
    for x in xs {
        x.leak();
    }
    drop(legacy);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_one_shot_call_replayed_1000_times() {
    replayed_1000_times(
        "a_captured_one_shot_call_replayed_1000_times",
        AllReduceAlgo::OneShot,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_two_stage_call_replayed_1000_times() {
    replayed_1000_times(
        "a_captured_two_stage_call_replayed_1000_times",
        AllReduceAlgo::TwoStage,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_ll_call_replayed_1000_times() {
    replayed_1000_times(
        "a_captured_ll_call_replayed_1000_times",
        AllReduceAlgo::PushLl,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_push_call_replayed_1000_times() {
    replayed_1000_times(
        "a_captured_push_call_replayed_1000_times",
        AllReduceAlgo::Push,
    );
}

/// A device buffer of a dtype the bad calls pick.
enum Dev {
    F32(CudaSlice<f32>),
    Bf16(CudaSlice<bf16>),
    E4m3(CudaSlice<F8E4M3>),
}

impl Dev {
    fn new(c: &Communicator, r: usize, (dtype, len): (DType, usize)) -> Dev {
        let s = rank_stream(c, r);
        match dtype {
            DType::F32 => Dev::F32(s.clone_htod(&vec![0.5f32; len]).unwrap()),
            DType::BF16 => Dev::Bf16(s.clone_htod(&vec![bf16::from_f32(0.5); len]).unwrap()),
            DType::E4M3 => Dev::E4m3(s.alloc_zeros::<F8E4M3>(len).unwrap()),
            other => panic!("no {other} buffers here"),
        }
    }
    fn input(&self) -> &dyn KernelInput {
        match self {
            Dev::F32(b) => b,
            Dev::Bf16(b) => b,
            Dev::E4m3(b) => b,
        }
    }
    fn output(&mut self) -> &mut dyn KernelOutput {
        match self {
            Dev::F32(b) => b,
            Dev::Bf16(b) => b,
            Dev::E4m3(b) => b,
        }
    }
}

/// One call's buffer shapes, (dtype, len) each, for every rank.
#[derive(Clone, Copy)]
struct Shape {
    x: (DType, usize),
    residual: (DType, usize),
    weight: (DType, usize),
    out: (DType, usize),
    scale: Option<(Fp8Scale, usize)>,
    cols: usize,
    weights: usize,
    layout: Option<ArNorm>,
    algo: Option<AllReduceAlgo>,
    /// This rank's kernel is not launched.
    skip: Option<u32>,
}

fn call_with(c: &Communicator, sh: Shape) -> Result<(), Error> {
    let w = c.world() as usize;
    let xs: Vec<Dev> = (0..w).map(|r| Dev::new(c, r, sh.x)).collect();
    let mut res: Vec<Dev> = (0..w).map(|r| Dev::new(c, r, sh.residual)).collect();
    let ws: Vec<Dev> = (0..sh.weights)
        .map(|r| Dev::new(c, r % w, sh.weight))
        .collect();
    let mut outs: Vec<Dev> = (0..w).map(|r| Dev::new(c, r, sh.out)).collect();
    let scale_len = sh.scale.map_or(1, |s| s.1);
    let givens: Vec<Dev> = (0..w)
        .map(|r| Dev::new(c, r, (DType::F32, scale_len)))
        .collect();
    let mut per_row: Vec<Dev> = (0..w)
        .map(|r| Dev::new(c, r, (DType::F32, scale_len)))
        .collect();
    let x: Vec<&dyn KernelInput> = xs.iter().map(Dev::input).collect();
    let mut residual: Vec<&mut dyn KernelOutput> = res.iter_mut().map(Dev::output).collect();
    let weight: Vec<&dyn KernelInput> = ws.iter().map(Dev::input).collect();
    let mut out: Vec<&mut dyn KernelOutput> = outs.iter_mut().map(Dev::output).collect();
    let given: Vec<&dyn KernelInput> = givens.iter().map(Dev::input).collect();
    let mut rows_out: Vec<&mut dyn KernelOutput> = per_row.iter_mut().map(Dev::output).collect();
    let scale = match sh.scale.map(|s| s.0) {
        None => None,
        Some(Fp8Scale::Given) => Some(ArFp8Scales::Given(&given)),
        Some(Fp8Scale::PerRow) => Some(ArFp8Scales::PerRow(&mut rows_out)),
    };
    let r = c.all_reduce_add_rms_norm(AddRmsNorm {
        x: &x,
        residual: &mut residual,
        weight: &weight,
        out: &mut out,
        scale,
        cols: sh.cols,
        eps: 1e-5,
        layout: sh.layout,
        algo: sh.algo,
        skip_rank: sh.skip,
    });
    c.synchronize()?;
    r
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_calls_are_errors_before_any_launch() {
    let Some(c) = comm(2) else { return };
    let (rows, cols) = (4usize, 4096usize);
    let n = rows * cols;
    let good = Shape {
        x: (DType::BF16, n),
        residual: (DType::BF16, n),
        weight: (DType::BF16, cols),
        out: (DType::BF16, n),
        scale: None,
        cols,
        weights: 2,
        layout: None,
        algo: None,
        skip: None,
    };
    let fp8 = Shape {
        out: (DType::E4M3, n),
        scale: Some((Fp8Scale::PerRow, rows)),
        ..good
    };
    let cases: Vec<(&str, Shape, &str)> = vec![
        ("rows not whole", Shape { cols: 4095, ..good }, "cols: 4095"),
        (
            "cols off the pack grid",
            Shape {
                x: (DType::BF16, 12 * 4),
                residual: (DType::BF16, 48),
                weight: (DType::BF16, 12),
                out: (DType::BF16, 48),
                cols: 12,
                ..good
            },
            "whole 16-byte packs",
        ),
        (
            "a row too long",
            Shape {
                x: (DType::BF16, 32776),
                residual: (DType::BF16, 32776),
                weight: (DType::BF16, 32776),
                out: (DType::BF16, 32776),
                cols: 32776,
                ..good
            },
            "within its registers",
        ),
        (
            "short weight",
            Shape {
                weight: (DType::BF16, cols - 8),
                ..good
            },
            "weight",
        ),
        (
            "f32 weight",
            Shape {
                weight: (DType::F32, cols),
                ..good
            },
            "weight",
        ),
        (
            "residual of another type",
            Shape {
                residual: (DType::F32, n),
                ..good
            },
            "sizes",
        ),
        (
            "short output",
            Shape {
                out: (DType::BF16, n - 1),
                ..good
            },
            "output",
        ),
        (
            "e4m3 output with no scale",
            Shape {
                out: (DType::E4M3, n),
                ..good
            },
            "output",
        ),
        (
            "a scale but a bf16 output",
            Shape {
                out: (DType::BF16, n),
                ..fp8
            },
            "output",
        ),
        (
            "short per-row scales",
            Shape {
                scale: Some((Fp8Scale::PerRow, rows - 1)),
                ..fp8
            },
            "scale",
        ),
        (
            "f32 rows with an e4m3 output",
            Shape {
                x: (DType::F32, n),
                residual: (DType::F32, n),
                weight: (DType::F32, cols),
                ..fp8
            },
            "bf16 or f16",
        ),
        (
            "three weights for two ranks",
            Shape { weights: 3, ..good },
            "rank count",
        ),
        (
            "a layout too short for the row",
            Shape {
                layout: Some(ArNorm {
                    threads: 256,
                    packs: 1,
                    cluster: 1,
                    fp8: None,
                }),
                ..good
            },
            "do not hold rows of 4096",
        ),
        (
            "a two-stage fused call with a row in a cluster",
            Shape {
                algo: Some(AllReduceAlgo::TwoStage),
                layout: Some(ArNorm {
                    threads: 256,
                    packs: 1,
                    cluster: 2,
                    fp8: None,
                }),
                ..good
            },
            "LL kernel's only",
        ),
        (
            "an LL call past ll_bytes",
            Shape {
                x: (DType::BF16, (LL_BYTES / 2) + 4096),
                residual: (DType::BF16, (LL_BYTES / 2) + 4096),
                out: (DType::BF16, (LL_BYTES / 2) + 4096),
                algo: Some(AllReduceAlgo::PushLl),
                ..good
            },
            "ll_bytes",
        ),
        (
            "a block of 384 threads",
            Shape {
                layout: Some(ArNorm {
                    threads: 384,
                    packs: 2,
                    cluster: 1,
                    fp8: None,
                }),
                ..good
            },
            "a power of two",
        ),
        (
            "a row in a cluster of blocks on the one-shot kernel",
            Shape {
                layout: Some(ArNorm {
                    threads: 512,
                    packs: 1,
                    cluster: 2,
                    fp8: None,
                }),
                algo: Some(AllReduceAlgo::OneShot),
                ..good
            },
            "the LL kernel's only",
        ),
        (
            "a cluster of 3 blocks",
            Shape {
                layout: Some(ArNorm {
                    threads: 512,
                    packs: 1,
                    cluster: 3,
                    fp8: None,
                }),
                algo: Some(AllReduceAlgo::PushLl),
                ..good
            },
            "cluster",
        ),
    ];
    for (what, sh, says) in cases {
        let e = call_with(&c, sh).expect_err(what);
        assert!(
            matches!(e, Error::Comm { .. } | Error::Spec(_)),
            "{what}: {e:?}"
        );
        assert!(e.to_string().contains(says), "{what}: {e}");
        assert!(c.broken().is_none(), "{what} broke the communicator");
    }
    // Nothing was launched: good calls (and one of no rows) still run.
    call_with(&c, good).unwrap();
    call_with(&c, fp8).unwrap();
    call_with(
        &c,
        Shape {
            x: (DType::BF16, 0),
            residual: (DType::BF16, 0),
            out: (DType::BF16, 0),
            ..good
        },
    )
    .unwrap();
}

/// A rank that never launches: every other rank's fused kernel (one-shot,
/// two-stage, push, LL) ends within its timeout with the communicator broken, and a
/// rebuilt communicator runs the call again.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_never_launched_ends_every_fused_kernel_within_the_timeout() {
    use std::time::Instant;
    if common::gpu_or_skip().is_none() {
        return;
    }
    let timeout = Duration::from_millis(200);
    let mut c = Communicator::new(
        Placement::SameGpu {
            ordinal: 0,
            world: 2,
        },
        CommOptions::default()
            .timeout(timeout)
            .max_bytes(16 << 20)
            .ll_bytes(Some(LL_BYTES)),
    )
    .unwrap();
    let (rows, cols) = (16usize, 4096usize);
    let n = rows * cols;
    for algo in [
        AllReduceAlgo::OneShot,
        AllReduceAlgo::TwoStage,
        AllReduceAlgo::Push,
        AllReduceAlgo::PushLl,
    ] {
        let sh = Shape {
            x: (DType::BF16, n),
            residual: (DType::BF16, n),
            weight: (DType::BF16, cols),
            out: (DType::E4M3, n),
            scale: Some((Fp8Scale::PerRow, rows)),
            cols,
            weights: 2,
            layout: None,
            algo: Some(algo),
            skip: Some(1),
        };
        let t0 = Instant::now();
        let e = call_with(&c, sh).expect_err("a rank never launched");
        let took = t0.elapsed();
        assert!(
            took < timeout * 10 + Duration::from_secs(2),
            "{algo}: {took:?}"
        );
        assert!(matches!(e, Error::Broken { .. }), "{algo}: {e}");
        assert!(c.broken().is_some(), "{algo}");
        c.rebuild().unwrap();
        call_with(&c, Shape { skip: None, ..sh }).unwrap_or_else(|e| panic!("{algo}: {e}"));
    }
}
