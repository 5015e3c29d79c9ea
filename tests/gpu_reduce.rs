//! reduce kernels on the GPU against the f64 CPU twin: every op x input x
//! accumulator, full-array sizes from 1 to 2^28 (and one past 2^31 elements),
//! row and column shapes up to 32768 x 4096 including strided views, misaligned
//! inputs, poisoned outputs, NaN and Inf, run-to-run bit identity, bad calls;
//! fp8 (e4m3, e5m2: sm_89+) and i8 (exact i64 sums) inputs.
//! Run on a GPU machine with `--ignored` (REDJIT_REQUIRE_GPU=1 makes a missing GPU
//! a failure); scripts/gpu-run.sh tests runs it.

mod common;

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use redjit::reference::HostBuffer;
use redjit::reference_reduce::{self, Expected};
use redjit::{
    Arch, DType, Error, F8E4M3, F8E5M2, KernelInput, KernelSpec, Matrix, ReduceAxis, ReduceKernel,
    ReduceOp, ReduceOutput, ReduceShape, ReduceSpec, ReduceStrategy, ReduceTwin, ResultType,
    Runtime, SpecError,
};

/// Poisoned elements around every buffer: before an input's view (misaligned
/// starts) and after it, and on both sides of every output.
const SLACK: usize = 3;
/// 4097 and 65_533 fall in the cluster twin's range on sm_90+ (past one
/// block's round, up to CLUSTER_MAX_N); elsewhere they take the grid finish.
const FULL_SIZES: &[usize] = &[1, 31, 32, 33, 1023, 1025, 4097, 65_533, (1 << 20) + 1];
const POISON_I64: i64 = i64::MIN + 0x5eed;

/// A device input: `offset` poison elements, the data, SLACK poison elements.
enum Dev {
    F32(CudaSlice<f32>),
    BF16(CudaSlice<bf16>),
    F16(CudaSlice<f16>),
    E4M3(CudaSlice<F8E4M3>),
    E5M2(CudaSlice<F8E5M2>),
    I8(CudaSlice<i8>),
}

fn padded<T: Copy>(v: &[T], offset: usize, pad: T) -> Vec<T> {
    let mut out = vec![pad; offset];
    out.extend_from_slice(v);
    out.extend(std::iter::repeat_n(pad, SLACK));
    out
}

impl Dev {
    /// Poison is NaN: a kernel that reads past its range turns a sum into NaN
    /// (i8: -128, which moves every sum and the minimum).
    fn upload(s: &Arc<CudaStream>, host: &HostBuffer, offset: usize) -> Dev {
        match host {
            HostBuffer::F32(v) => Dev::F32(s.clone_htod(&padded(v, offset, f32::NAN)).unwrap()),
            HostBuffer::BF16(v) => Dev::BF16(s.clone_htod(&padded(v, offset, bf16::NAN)).unwrap()),
            HostBuffer::F16(v) => Dev::F16(s.clone_htod(&padded(v, offset, f16::NAN)).unwrap()),
            HostBuffer::E4M3(v) => Dev::E4M3(
                s.clone_htod(&padded(v, offset, F8E4M3::from_bits(0x7f)))
                    .unwrap(),
            ),
            HostBuffer::E5M2(v) => Dev::E5M2(
                s.clone_htod(&padded(v, offset, F8E5M2::from_bits(0x7f)))
                    .unwrap(),
            ),
            HostBuffer::I8(v) => Dev::I8(s.clone_htod(&padded(v, offset, i8::MIN)).unwrap()),
        }
    }

    fn view(&self, offset: usize, n: usize) -> Box<dyn KernelInput + '_> {
        match self {
            Dev::F32(b) => Box::new(b.slice(offset..offset + n)),
            Dev::BF16(b) => Box::new(b.slice(offset..offset + n)),
            Dev::F16(b) => Box::new(b.slice(offset..offset + n)),
            Dev::E4M3(b) => Box::new(b.slice(offset..offset + n)),
            Dev::E5M2(b) => Box::new(b.slice(offset..offset + n)),
            Dev::I8(b) => Box::new(b.slice(offset..offset + n)),
        }
    }
}

/// One result as the GPU wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    F32(u32),
    I64(i64),
}

/// A poisoned output of `n + 2 * SLACK` elements; the kernel writes the middle.
enum Out {
    F32(CudaSlice<f32>),
    I64(CudaSlice<i64>),
}

impl Out {
    fn new(s: &Arc<CudaStream>, ty: ResultType, n: usize) -> Out {
        match ty {
            ResultType::F32 => Out::F32(
                s.clone_htod(&vec![f32::from_bits(u32::MAX); n + 2 * SLACK])
                    .unwrap(),
            ),
            ResultType::I64 => Out::I64(s.clone_htod(&vec![POISON_I64; n + 2 * SLACK]).unwrap()),
        }
    }

    fn with_view<R>(&mut self, n: usize, f: impl FnOnce(&mut dyn ReduceOutput) -> R) -> R {
        match self {
            Out::F32(b) => f(&mut b.slice_mut(SLACK..SLACK + n)),
            Out::I64(b) => f(&mut b.slice_mut(SLACK..SLACK + n)),
        }
    }

    /// The n results; panics if the poison around them changed.
    fn results(&self, s: &Arc<CudaStream>, n: usize, what: &str) -> Vec<Got> {
        let all: Vec<Got> = match self {
            Out::F32(b) => s
                .clone_dtoh(b)
                .unwrap()
                .iter()
                .map(|x| Got::F32(x.to_bits()))
                .collect(),
            Out::I64(b) => s.clone_dtoh(b).unwrap().into_iter().map(Got::I64).collect(),
        };
        for (i, g) in all.iter().enumerate() {
            if (SLACK..SLACK + n).contains(&i) {
                continue;
            }
            assert!(
                matches!(g, Got::F32(u32::MAX) | Got::I64(POISON_I64)),
                "{what}: wrote outside its results at {i}: {g:?}"
            );
        }
        all[SLACK..SLACK + n].to_vec()
    }
}

/// How inputs are drawn.
#[derive(Clone, Copy)]
enum Values {
    /// Random signs and exponents over 2^-30..2^20 (f16: scaled by 2^-7 to stay
    /// finite), so sums cancel and round.
    Wide,
    /// Uniform in [-1, 1]: for the lossy 16-bit accumulators, whose partial sums
    /// must stay inside f16's range.
    Unit,
}

fn host_input(rng: &mut common::Rng, dtype: DType, n: usize, values: Values) -> HostBuffer {
    // The 1-byte types whatever `values` asks: i8 uniform over -128..=127; fp8
    // random signs and mantissas over 2^-8..2^8 (inside both formats' normal
    // range, so sums cancel and round).
    if dtype.info().integer {
        return HostBuffer::I8((0..n).map(|_| (rng.next_u64() >> 56) as u8 as i8).collect());
    }
    if dtype.info().bytes == 1 {
        let v: Vec<f32> = (0..n)
            .map(|_| {
                let r = rng.next_u64();
                let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
                let exp = ((r >> 8) % 17) as i32 - 8;
                sign * (1.0 + (r >> 40) as f32 / (1u64 << 24) as f32) * 2f32.powi(exp)
            })
            .collect();
        return HostBuffer::from_fn(dtype, n, |i| v[i]);
    }
    let v = match values {
        Values::Wide => rng.values(n),
        Values::Unit => (0..n)
            .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect(),
    };
    let scale = if dtype == DType::F16 && matches!(values, Values::Wide) {
        (-7f32).exp2()
    } else {
        1.0
    };
    HostBuffer::from_fn(dtype, n, |i| v[i] * scale)
}

/// Launches `kernel` over the inputs (each `offset` elements into its device
/// buffer), `runs` times into fresh poisoned outputs, asserts every run gave the
/// same bits, and returns them.
#[allow(clippy::too_many_arguments)]
fn run(
    rt: &Runtime,
    kernel: &ReduceKernel<'_>,
    devs: &[Dev],
    offset: usize,
    len: usize,
    m: Option<Matrix>,
    results: usize,
    runs: usize,
) -> Vec<Got> {
    let s = rt.stream();
    let ty = if kernel.spec().result_i64() {
        ResultType::I64
    } else {
        ResultType::F32
    };
    let views: Vec<_> = devs.iter().map(|d| d.view(offset, len)).collect();
    let srcs: Vec<&dyn KernelInput> = views.iter().map(|v| v.as_ref()).collect();
    let mut first: Option<Vec<Got>> = None;
    for r in 0..runs {
        let mut out = Out::new(s, ty, results);
        out.with_view(results, |o| match m {
            None => kernel.launch(s, &srcs, o),
            Some(m) => kernel.launch_matrix(s, &srcs, m, o),
        })
        .unwrap_or_else(|e| panic!("{}: {e}", kernel.name()));
        let got = out.results(s, results, kernel.name());
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(
                f,
                &got,
                "{}: run {r} differs from run 0 (not deterministic)",
                kernel.name()
            ),
        }
    }
    first.unwrap_or_default()
}

fn check(what: &str, expected: &[Expected], got: &[Got]) {
    assert_eq!(expected.len(), got.len(), "{what}");
    let bad: Vec<String> = expected
        .iter()
        .zip(got)
        .enumerate()
        .filter_map(|(i, (e, g))| {
            let r = match *g {
                Got::F32(bits) => e.check_f32(f32::from_bits(bits)),
                Got::I64(x) => e.check_i64(x),
            };
            r.err().map(|m| format!("[{i}] {m}"))
        })
        .take(8)
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// One spec over one full-array input set: GPU vs twin.
fn check_full(rt: &Runtime, spec: &ReduceSpec, hosts: &[HostBuffer], offset: usize, runs: usize) {
    let s = rt.stream();
    let kernel = rt.reduce(spec).unwrap();
    let n = hosts[0].len();
    let devs: Vec<Dev> = hosts.iter().map(|h| Dev::upload(s, h, offset)).collect();
    let got = run(rt, &kernel, &devs, offset, n, None, 1, runs);
    let chain = kernel.plan(ReduceShape::All { n: n as u64 }).unwrap().chain;
    let refs: Vec<&HostBuffer> = hosts.iter().collect();
    let want = reference_reduce::all(spec, chain, &refs);
    check(
        &format!("{} n={n} offset={offset}", spec.name()),
        &[want],
        &got,
    );
}

fn inputs_for(rng: &mut common::Rng, spec: &ReduceSpec, n: usize) -> Vec<HostBuffer> {
    let values = if spec.accum == DType::F32 {
        Values::Wide
    } else {
        Values::Unit
    };
    (0..spec.op.info().inputs)
        .map(|_| host_input(rng, spec.input, n, values))
        .collect()
}

/// `ReduceSpec::matrix(axis)`'s kernels this device runs (fp8 needs sm_89+:
/// fp8_is_refused_before_sm89 checks the refusal), compiled up front in
/// parallel rather than one at a time on their first launches.
fn matrix_on(rt: &Runtime, axis: ReduceAxis) -> Vec<ReduceSpec> {
    let specs: Vec<ReduceSpec> = ReduceSpec::matrix(axis)
        .into_iter()
        .filter(|s| s.min_arch() <= rt.device().arch)
        .collect();
    rt.prepare(&specs).expect("compiling the matrix");
    specs
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn full_every_op_dtype_and_accumulator_at_odd_sizes() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("full_every_op_dtype_and_accumulator_at_odd_sizes");
    for spec in matrix_on(&rt, ReduceAxis::All) {
        for &n in FULL_SIZES {
            // f16 partial sums overflow past 65504 (lossy by design): the sum of
            // squares of 2^20 unit values would.
            if spec.accum == DType::F16 && n > 4096 {
                continue;
            }
            let hosts = inputs_for(&mut rng, &spec, n);
            check_full(&rt, &spec, &hosts, 0, 2);
            // A start off the pack boundary (and, for dot, both inputs alike).
            if n == 1025 || n == 33 || n == 4097 {
                check_full(&rt, &spec, &hosts, 1 + n % 3, 1);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn full_dot_with_inputs_off_each_others_pack_phase() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("full_dot_with_inputs_off_each_others_pack_phase");
    let s = rt.stream();
    for input in [DType::F32, DType::BF16] {
        let spec = ReduceSpec {
            op: ReduceOp::Dot,
            input,
            ..ReduceSpec::default()
        };
        let kernel = rt.reduce(&spec).unwrap();
        let n = 100_003;
        let hosts = inputs_for(&mut rng, &spec, n);
        // src0 at element 0, src1 at element 1 of its buffer.
        let d0 = Dev::upload(s, &hosts[0], 0);
        let d1 = Dev::upload(s, &hosts[1], 1);
        let (v0, v1) = (d0.view(0, n), d1.view(1, n));
        let mut out = Out::new(s, ResultType::F32, 1);
        out.with_view(1, |o| kernel.launch(s, &[v0.as_ref(), v1.as_ref()], o))
            .unwrap();
        let got = out.results(s, 1, kernel.name());
        let chain = kernel.plan(ReduceShape::All { n: n as u64 }).unwrap().chain;
        let want = reference_reduce::all(&spec, chain, &[&hosts[0], &hosts[1]]);
        check(kernel.name(), &[want], &got);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn full_2_pow_28_sum_max_argmax_var_mean_f32_and_bf16() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("full_2_pow_28");
    let n = 1 << 28;
    for input in [DType::F32, DType::BF16] {
        let host = host_input(&mut rng, input, n, Values::Wide);
        for op in [
            ReduceOp::Sum,
            ReduceOp::Max,
            ReduceOp::ArgMax,
            ReduceOp::VarPop,
            ReduceOp::Mean,
        ] {
            let spec = ReduceSpec {
                op,
                input,
                ..ReduceSpec::default()
            };
            check_full(&rt, &spec, std::slice::from_ref(&host), 0, 3);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn full_past_2_pow_31_elements_indexes_in_64_bits() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    // bf16 small integers (exact sums in f32 partials of this size are not
    // guaranteed, so the twin's tolerance applies), the maximum planted past 2^31.
    let n = (1usize << 31) + 77;
    let at = (1usize << 31) + 5;
    let host = HostBuffer::from_fn(DType::BF16, n, |i| {
        if i == at {
            1000.0
        } else {
            ((i.wrapping_mul(2_654_435_761) >> 7) % 64) as f32 - 31.0
        }
    });
    for op in [ReduceOp::ArgMax, ReduceOp::Sum, ReduceOp::Max] {
        let spec = ReduceSpec {
            op,
            input: DType::BF16,
            ..ReduceSpec::default()
        };
        check_full(&rt, &spec, std::slice::from_ref(&host), 0, 1);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nan_and_inf_follow_pytorch() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let n = 5000;
    let cases: Vec<(&str, Vec<(usize, f32)>)> = vec![
        ("one NaN", vec![(3001, f32::NAN)]),
        ("two NaNs", vec![(4000, f32::NAN), (17, f32::NAN)]),
        ("+inf", vec![(2500, f32::INFINITY)]),
        (
            "+inf and -inf",
            vec![(10, f32::INFINITY), (4999, f32::NEG_INFINITY)],
        ),
        ("-inf", vec![(0, f32::NEG_INFINITY)]),
        (
            "a tie of maxima",
            vec![(100, 7.0e9), (4100, 7.0e9), (50, -7.0e9), (60, -7.0e9)],
        ),
    ];
    for (what, planted) in &cases {
        for input in [DType::F32, DType::BF16, DType::F16] {
            let base = HostBuffer::from_fn(input, n, |i| ((i * 37) % 101) as f32 - 50.0);
            let host = HostBuffer::from_fn(input, n, |i| {
                planted
                    .iter()
                    .find(|(at, _)| *at == i)
                    .map_or(base.get_f32(i), |(_, v)| *v)
            });
            for &op in ReduceOp::ALL.iter().filter(|o| o.info().inputs == 1) {
                let spec = ReduceSpec {
                    op,
                    input,
                    ..ReduceSpec::default()
                };
                eprintln!("{what}: {}", spec.name());
                check_full(&rt, &spec, std::slice::from_ref(&host), 0, 1);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ties_signed_zeros_and_ramps_through_group_updates() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    // Group updates (a thread's packs in flight taken at once; a column's rows in
    // flight) search a group only when its best beats the held value: ties
    // inside and across groups, -0 beside +0, ramps that make every group win
    // (or none), and plateaus where bf16/f16 rounding makes neighbours equal.
    let scale = (-10f32).exp2();
    type Kind = (&'static str, fn(usize) -> f32);
    let kinds: [Kind; 5] = [
        ("all equal", |_| 3.0),
        ("signed zeros", |i| if i % 2 == 0 { -0.0 } else { 0.0 }),
        ("increasing", |i| i as f32),
        ("decreasing", |i| -(i as f32)),
        ("sawtooth", |i| (i % 1000) as f32),
    ];
    let ops = [
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::VarSamp,
        ReduceOp::LogSumExp,
        ReduceOp::Sum,
    ];
    let n = (1 << 20) + 3;
    let m = Matrix {
        rows: 1025,
        cols: 1023,
        ld: 1024,
    };
    for (what, f) in kinds {
        for input in [DType::F32, DType::BF16, DType::F16] {
            let full = HostBuffer::from_fn(input, n, |i| f(i) * scale);
            let mat = HostBuffer::from_fn(input, (m.rows - 1) * m.ld + m.cols, |i| f(i) * scale);
            for op in ops {
                for axis in [ReduceAxis::All, ReduceAxis::Rows, ReduceAxis::Cols] {
                    let spec = ReduceSpec {
                        axis,
                        op,
                        input,
                        ..ReduceSpec::default()
                    };
                    eprintln!("{what}: {}", spec.name());
                    if axis == ReduceAxis::All {
                        check_full(&rt, &spec, std::slice::from_ref(&full), 0, 1);
                    } else {
                        check_matrix(&rt, &spec, std::slice::from_ref(&mat), m, 0);
                    }
                }
            }
        }
    }
}

/// Row and column reductions of one matrix for one spec.
fn check_matrix(rt: &Runtime, spec: &ReduceSpec, hosts: &[HostBuffer], m: Matrix, offset: usize) {
    let s = rt.stream();
    let kernel = rt.reduce(spec).unwrap();
    let len = hosts[0].len();
    let devs: Vec<Dev> = hosts.iter().map(|h| Dev::upload(s, h, offset)).collect();
    let results = if spec.axis == ReduceAxis::Rows {
        m.rows
    } else {
        m.cols
    };
    let got = run(rt, &kernel, &devs, offset, len, Some(m), results, 2);
    let shape = ReduceShape::Matrix {
        rows: m.rows as u64,
        cols: m.cols as u64,
        ld: m.ld as u64,
    };
    let chain = kernel.plan(shape).unwrap().chain;
    let refs: Vec<&HostBuffer> = hosts.iter().collect();
    let dims = (m.rows, m.cols, m.ld);
    let want = if spec.axis == ReduceAxis::Rows {
        reference_reduce::rows(spec, chain, &refs, dims)
    } else {
        reference_reduce::cols(spec, chain, &refs, dims)
    };
    check(
        &format!("{} {m:?} offset={offset}", spec.name()),
        &want,
        &got,
    );
}

fn matrix_inputs(rng: &mut common::Rng, spec: &ReduceSpec, m: Matrix) -> Vec<HostBuffer> {
    inputs_for(rng, spec, (m.rows - 1) * m.ld + m.cols)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_cols_every_op_on_small_and_strided_shapes() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("rows_and_cols_every_op_on_small_and_strided_shapes");
    // (shape, offset of the view in elements): an offset of 1 puts every row
    // off the 16-byte vectors of the column kernel, so it reads element by
    // element; offset 0 with ld a multiple of 8 takes the vector path.
    let shapes = [
        (
            Matrix {
                rows: 1,
                cols: 1,
                ld: 1,
            },
            0,
        ),
        (
            Matrix {
                rows: 7,
                cols: 1000,
                ld: 1000,
            },
            1,
        ),
        // Strided (ld > cols), rows past the warp-per-row limit.
        (
            Matrix {
                rows: 33,
                cols: 1025,
                ld: 1031,
            },
            0,
        ),
        (
            Matrix {
                rows: 5,
                cols: 3,
                ld: 7,
            },
            1,
        ),
        // Tall and narrow: many column splits, the last-split finish.
        (
            Matrix {
                rows: 20_000,
                cols: 45,
                ld: 47,
            },
            0,
        ),
        // Column vectors: cols not a multiple of the vector (4 f32, 8 of a
        // 16-bit type), so the last thread of the last tile reads element by
        // element beside vector threads; rows split unevenly; strided.
        (
            Matrix {
                rows: 4099,
                cols: 1003,
                ld: 1016,
            },
            0,
        ),
        // A second tile of 4 columns (16-bit: 256 a tile), a few rows.
        (
            Matrix {
                rows: 300,
                cols: 260,
                ld: 264,
            },
            0,
        ),
        // Vectors over fewer rows than a block's phases x rows in flight.
        (
            Matrix {
                rows: 3,
                cols: 16,
                ld: 16,
            },
            0,
        ),
        // Whole tiles, 16-byte rows of partials behind a 16-byte multiple of
        // counters (4 or 8 tiles): the splits' states cross as 16-byte words,
        // four splits a thread at a time and a remainder; strided.
        (
            Matrix {
                rows: 5000,
                cols: 1024,
                ld: 1032,
            },
            0,
        ),
        // Vector-aligned ld but a view off by one: element loads throughout.
        (
            Matrix {
                rows: 2000,
                cols: 64,
                ld: 64,
            },
            1,
        ),
    ];
    for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
        for spec in matrix_on(&rt, axis) {
            for &(m, offset) in &shapes {
                let hosts = matrix_inputs(&mut rng, &spec, m);
                check_matrix(&rt, &spec, &hosts, m, offset);
            }
        }
    }
}

/// Fewer rows than the SMs hold blocks: each row split over blocks, the row's
/// last block merging the splits (argmax's indices across split edges,
/// strided rows, views off the pack phase, and a second run on the reset
/// counters, which `run` holds bit for bit to the first).
#[test]
#[ignore = "needs a CUDA GPU"]
fn few_long_rows_split_across_blocks() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("few_long_rows_split_across_blocks");
    let m = |rows, cols, ld| Matrix { rows, cols, ld };
    // (shape, offset of the view in elements).
    let shapes = [
        (m(3, 100_003, 100_003), 1),
        (m(5, 77_777, 77_780), 0),
        (m(1, (1 << 20) + 5, (1 << 20) + 5), 3),
    ];
    // An f16 accumulator holds at most 65504: a million squares of normal
    // values pass it whatever the layout, so its rows are shorter.
    let f16_shapes = [(m(2, 40_000, 40_003), 1)];
    for spec in matrix_on(&rt, ReduceAxis::Rows) {
        let kernel = rt.reduce(&spec).unwrap();
        let shapes: &[_] = if spec.accum == DType::F16 {
            &f16_shapes
        } else {
            &shapes
        };
        for &(m, offset) in shapes {
            let shape = ReduceShape::Matrix {
                rows: m.rows as u64,
                cols: m.cols as u64,
                ld: m.ld as u64,
            };
            let plan = kernel.plan(shape).unwrap();
            assert!(
                plan.grid.1 > 1,
                "{} {m:?} is not split: {plan:?}",
                spec.name()
            );
            let hosts = matrix_inputs(&mut rng, &spec, m);
            check_matrix(&rt, &spec, &hosts, m, offset);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rows_and_cols_at_the_issue_shapes() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("rows_and_cols_at_the_issue_shapes");
    let shapes = [
        Matrix {
            rows: 32_768,
            cols: 4096,
            ld: 4096,
        },
        Matrix {
            rows: 4096,
            cols: 32_768,
            ld: 32_768,
        },
        Matrix {
            rows: 262_144,
            cols: 128,
            ld: 128,
        },
        // A strided view of the same size class.
        Matrix {
            rows: 262_144,
            cols: 120,
            ld: 128,
        },
    ];
    for &m in &shapes {
        for input in [DType::F32, DType::BF16] {
            let probe = ReduceSpec {
                input,
                ..ReduceSpec::default()
            };
            let hosts = matrix_inputs(&mut rng, &probe, m);
            for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
                for op in [ReduceOp::Sum, ReduceOp::ArgMax, ReduceOp::VarSamp] {
                    let spec = ReduceSpec {
                        axis,
                        op,
                        input,
                        ..ReduceSpec::default()
                    };
                    check_matrix(&rt, &spec, &hosts, m, 0);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_calls_fail_and_leave_the_kernel_usable() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let spec: ReduceSpec = "reduce_all_argmax_f32_f32".parse().unwrap();
    assert!(matches!(
        rt.reduce(&spec.for_warp_per_row()),
        Err(Error::Spec(_))
    ));
    let kernel = rt.reduce(&spec).unwrap();
    let x = s
        .clone_htod(&(0..100_000).map(|i| (i % 977) as f32).collect::<Vec<_>>())
        .unwrap();
    let mut wrong = s.alloc_zeros::<f32>(1).unwrap();
    let err = kernel.launch(s, &[&x], &mut wrong).unwrap_err();
    assert!(err.to_string().contains("argmax writes i64"), "{err}");
    let mut at = s.alloc_zeros::<i64>(1).unwrap();
    kernel.launch(s, &[&x], &mut at).unwrap();
    // 976 first appears at index 976.
    assert_eq!(s.clone_dtoh(&at).unwrap(), vec![976]);
    // The plan is the device's: one wave of resident blocks at most.
    let plan = kernel.plan(ReduceShape::All { n: 1 << 28 }).unwrap();
    assert!(plan.grid.0 >= rt.device().sm_count, "{plan:?}");
    // Small sizes on sm_90+ take the cluster twin, and it finds the same index.
    let small = kernel.plan(ReduceShape::All { n: 1 << 16 }).unwrap();
    assert_eq!(
        small.twin == Some(ReduceTwin::Cluster),
        rt.device().arch >= Arch::SM90,
        "{small:?}"
    );
    kernel.launch(s, &[&x.slice(0..1 << 16)], &mut at).unwrap();
    assert_eq!(s.clone_dtoh(&at).unwrap(), vec![976]);
    assert!(matches!(
        rt.reduce(&spec.for_cluster()),
        Err(Error::Spec(_))
    ));
}

/// Empty calls (the runtime crate's rule): no results is `Ok` with the output
/// untouched and nothing launched; results over nothing are refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_calls_launch_nothing() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let x = s.clone_htod(&[1.0f32; 64]).unwrap();
    let rows = rt
        .reduce(&"reduce_rows_sum_f32_f32".parse().unwrap())
        .unwrap();
    let mut none = s.alloc_zeros::<f32>(0).unwrap();
    let m = |rows, cols, ld| Matrix { rows, cols, ld };
    rows.launch_matrix(s, &[&x], m(0, 8, 8), &mut none).unwrap();
    let cols = rt
        .reduce(&"reduce_cols_sum_f32_f32".parse().unwrap())
        .unwrap();
    cols.launch_matrix(s, &[&x], m(8, 0, 8), &mut none).unwrap();
    let mut three = s.clone_htod(&[7.0f32; 3]).unwrap();
    let e = rows
        .launch_matrix(s, &[&x], m(3, 0, 8), &mut three)
        .unwrap_err();
    assert!(e.to_string().contains("would reduce no elements"), "{e}");
    assert_eq!(s.clone_dtoh(&three).unwrap(), vec![7.0; 3]);
    // The kernel still runs after them.
    rows.launch_matrix(s, &[&x], m(3, 8, 8), &mut three)
        .unwrap();
    assert_eq!(s.clone_dtoh(&three).unwrap(), vec![8.0; 3]);
}

/// The fp8 and i8 inputs: every op (the i64 accumulator for i8's integer ops).
fn byte_specs(axis: ReduceAxis) -> Vec<ReduceSpec> {
    let mut out = Vec::new();
    for input in [DType::E4M3, DType::E5M2, DType::I8] {
        for &op in ReduceOp::ALL {
            out.push(ReduceSpec {
                axis,
                op,
                input,
                accum: ReduceSpec::default_accum(op, input),
                ..ReduceSpec::default()
            });
        }
    }
    out
}

/// Skips (with a note) what this GPU cannot run: fp8 before sm_89.
fn runs_here(rt: &Runtime, spec: &ReduceSpec) -> bool {
    let ok = spec.min_arch() <= rt.device().arch;
    if !ok {
        eprintln!("skipping {} on {}", spec.name(), rt.device().arch);
    }
    ok
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_and_i8_full_every_op_at_odd_sizes() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("fp8_and_i8_full_every_op_at_odd_sizes");
    for spec in byte_specs(ReduceAxis::All) {
        if !runs_here(&rt, &spec) {
            continue;
        }
        for n in [1, 33, 1025, (1 << 20) + 1] {
            let hosts = inputs_for(&mut rng, &spec, n);
            check_full(&rt, &spec, &hosts, 0, 2);
            // Starts off the 4-byte pack boundary (dot: both alike).
            for offset in [1, 3] {
                if n > 1 {
                    check_full(&rt, &spec, &hosts, offset, 1);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_and_i8_rows_and_cols_incl_strided_views() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("fp8_and_i8_rows_and_cols_incl_strided_views");
    let m = |rows, cols, ld| Matrix { rows, cols, ld };
    // (shape, view offset): one element; warp-per-row and block-per-row rows;
    // strided views (ld > cols, ld not a multiple of the 16-byte vector of 16
    // one-byte columns); a view one byte in (element loads); tall for column
    // splits; cols not a multiple of 16 beside vector threads.
    let shapes = [
        (m(1, 1, 1), 0),
        (m(7, 1000, 1000), 1),
        (m(33, 1025, 1031), 0),
        (m(5, 3, 7), 3),
        (m(20_000, 45, 47), 0),
        (m(4099, 1003, 1024), 0),
        (m(300, 520, 528), 0),
        (m(3, 32, 32), 0),
        (m(2000, 64, 64), 1),
    ];
    for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
        for spec in byte_specs(axis) {
            if !runs_here(&rt, &spec) {
                continue;
            }
            for &(mat, offset) in &shapes {
                let hosts = matrix_inputs(&mut rng, &spec, mat);
                check_matrix(&rt, &spec, &hosts, mat, offset);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_nan_and_inf_follow_pytorch() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    if rt.device().arch < Arch::SM89 {
        eprintln!("skipping: fp8 needs sm_89+");
        return;
    }
    let n = 5000;
    // e4m3 has no infinity: its only special value is NaN (S.1111.111), and
    // the largest finite, 448, stands in for it. e5m2 has +-inf and NaNs.
    // (input, what, planted codes at indices)
    type Case = (DType, &'static str, Vec<(usize, u8)>);
    let cases: Vec<Case> = vec![
        (DType::E4M3, "one NaN", vec![(3001, 0x7f)]),
        (
            DType::E4M3,
            "two NaNs (one negative)",
            vec![(4000, 0x7f), (17, 0xff)],
        ),
        (DType::E4M3, "+-448", vec![(10, 0x7e), (4999, 0xfe)]),
        (DType::E5M2, "one NaN", vec![(3001, 0x7f)]),
        (DType::E5M2, "two NaNs", vec![(4000, 0x7d), (17, 0xfe)]),
        (DType::E5M2, "+inf", vec![(2500, 0x7c)]),
        (DType::E5M2, "+inf and -inf", vec![(10, 0x7c), (4999, 0xfc)]),
        (DType::E5M2, "-inf", vec![(0, 0xfc)]),
        (DType::E5M2, "NaN and inf", vec![(100, 0x7c), (200, 0x7f)]),
    ];
    let m = Matrix {
        rows: 50,
        cols: 100,
        ld: 100,
    };
    for (input, what, planted) in &cases {
        let base = HostBuffer::from_fn(*input, n, |i| (((i * 37) % 101) as f32 - 50.0) / 8.0);
        let code = |i: usize| {
            planted
                .iter()
                .find(|(at, _)| *at == i)
                .map(|(_, c)| *c)
                .unwrap_or(base.bits(i) as u8)
        };
        let host = match input {
            DType::E4M3 => HostBuffer::E4M3((0..n).map(|i| F8E4M3::from_bits(code(i))).collect()),
            _ => HostBuffer::E5M2((0..n).map(|i| F8E5M2::from_bits(code(i))).collect()),
        };
        for &op in ReduceOp::ALL.iter().filter(|o| o.info().inputs == 1) {
            for axis in [ReduceAxis::All, ReduceAxis::Rows, ReduceAxis::Cols] {
                let spec = ReduceSpec {
                    axis,
                    op,
                    input: *input,
                    ..ReduceSpec::default()
                };
                eprintln!("{what}: {}", spec.name());
                if axis == ReduceAxis::All {
                    check_full(&rt, &spec, std::slice::from_ref(&host), 0, 1);
                } else {
                    check_matrix(&rt, &spec, std::slice::from_ref(&host), m, 0);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn i8_sums_past_the_i32_range_are_exact() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    // 2^28 elements of 127 (and of -128): sums of +-2^35, sums of squares past
    // 2^41, exact to the last unit; a planted minimum past the middle.
    let n = 1usize << 28;
    for fill in [127i8, -128] {
        let mut v = vec![fill; n];
        v[n / 2 + 7] = if fill > 0 { -3 } else { 5 };
        let host = HostBuffer::I8(v);
        for op in [
            ReduceOp::Sum,
            ReduceOp::SumSq,
            ReduceOp::Mean,
            ReduceOp::VarPop,
            ReduceOp::VarSamp,
            ReduceOp::Min,
            ReduceOp::ArgMin,
            ReduceOp::ArgMax,
        ] {
            let spec = ReduceSpec {
                op,
                input: DType::I8,
                accum: ReduceSpec::default_accum(op, DType::I8),
                ..ReduceSpec::default()
            };
            check_full(&rt, &spec, std::slice::from_ref(&host), 0, 2);
        }
        let dot = ReduceSpec {
            op: ReduceOp::Dot,
            input: DType::I8,
            accum: DType::I64,
            ..ReduceSpec::default()
        };
        check_full(&rt, &dot, &[host.clone(), host], 0, 1);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_is_refused_before_sm89_and_i8_results_are_i64() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let e4m3: ReduceSpec = "reduce_all_sum_e4m3_f32".parse().unwrap();
    match rt.reduce(&e4m3) {
        Ok(_) => assert!(rt.device().arch >= Arch::SM89),
        Err(Error::Spec(SpecError::Unsupported { needs, .. })) => {
            assert!(rt.device().arch < Arch::SM89);
            assert_eq!(needs, Arch::SM89);
        }
        Err(e) => panic!("{e}"),
    }
    // An i8 sum writes i64: an f32 output is refused, naming the rule.
    let sum: ReduceSpec = "reduce_all_sum_i8_i64".parse().unwrap();
    let kernel = rt.reduce(&sum).unwrap();
    let x = s.clone_htod(&vec![-7i8; 1001]).unwrap();
    let mut wrong = s.alloc_zeros::<f32>(1).unwrap();
    let err = kernel.launch(s, &[&x], &mut wrong).unwrap_err();
    assert!(err.to_string().contains("sum writes i64"), "{err}");
    let mut out = s.alloc_zeros::<i64>(1).unwrap();
    kernel.launch(s, &[&x], &mut out).unwrap();
    assert_eq!(s.clone_dtoh(&out).unwrap(), vec![-7007]);
    // An i8 buffer given to an f32 kernel is refused.
    let f32_sum = rt.reduce(&ReduceSpec::default()).unwrap();
    let mut o = s.alloc_zeros::<f32>(1).unwrap();
    let err = f32_sum.launch(s, &[&x], &mut o).unwrap_err();
    assert!(err.to_string().contains("src0: i8"), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_tuned_layout_matches_the_twin_at_odd_sizes_and_views() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("every_tuned_layout_matches_the_twin_at_odd_sizes_and_views");
    // Layouts a tuning table may name: the blocks and loads `redjit tune`
    // tries, and the extremes the table parser allows.
    let layouts = |axis: ReduceAxis| -> Vec<ReduceStrategy> {
        let unrolls: &[u32] = if axis == ReduceAxis::Cols {
            &[1, 2, 4, 8]
        } else {
            &[1, 2, 4, 8, 16, 32]
        };
        [64u32, 128, 256, 512, 1024]
            .iter()
            .flat_map(|&threads| {
                unrolls
                    .iter()
                    .map(move |&unroll| ReduceStrategy { threads, unroll })
            })
            .collect()
    };
    let mut all = Vec::new();
    for input in [DType::F32, DType::BF16] {
        for op in [
            ReduceOp::Sum,
            ReduceOp::ArgMax,
            ReduceOp::VarSamp,
            ReduceOp::LogSumExp,
        ] {
            let base = ReduceSpec {
                op,
                input,
                ..ReduceSpec::default()
            };
            all.extend(
                layouts(ReduceAxis::All)
                    .into_iter()
                    .map(|st| base.with_strategy(Some(st))),
            );
        }
        for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
            let base = ReduceSpec {
                axis,
                input,
                ..ReduceSpec::default()
            };
            all.extend(
                layouts(axis)
                    .into_iter()
                    .map(|st| base.with_strategy(Some(st))),
            );
        }
    }
    // Compiled up front in parallel rather than one at a time on first launch.
    rt.prepare(&all).expect("compiling the layouts");
    for spec in &all {
        if spec.axis == ReduceAxis::All {
            // Past the cluster twin's sizes, odd, and one element in.
            for n in [65_537usize, 1_000_003] {
                let hosts = inputs_for(&mut rng, spec, n);
                check_full(&rt, spec, &hosts, 1, 1);
            }
            continue;
        }
        // Rows past the warp twin's length; a strided view off the vector
        // grid; enough rows for the column kernel's splits.
        for (m, offset) in [
            (
                Matrix {
                    rows: 257,
                    cols: 4099,
                    ld: 4099,
                },
                0,
            ),
            (
                Matrix {
                    rows: 3001,
                    cols: 1100,
                    ld: 1104,
                },
                1,
            ),
        ] {
            let hosts = matrix_inputs(&mut rng, spec, m);
            check_matrix(&rt, spec, &hosts, m, offset);
        }
    }
}
