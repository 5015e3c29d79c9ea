//! norm kernels on the GPU against the f64 CPU twin (`reference_norm`): every
//! row op (softmax and log-softmax, safe and online; layer norm and RMS norm,
//! with and without the fused residual add) x every input x output dtype, at
//! rows of 1, 3, 7, 1000, 4097 and 2^20 (the default layout for each length),
//! every layout variant at one shape, strided rows, poisoned outputs (and the
//! gaps between strided rows), -Inf / +Inf / NaN / all -Inf rows and 1e4
//! magnitudes for softmax, mean and rstd outputs, the exact residual_out bits,
//! run-to-run bit identity of the split layout, the issue's large shapes, bad
//! calls. Run on a GPU machine with `--ignored` (REDJIT_REQUIRE_GPU=1 makes a
//! missing GPU a failure); scripts/gpu-run.sh tests runs it.

mod common;

use std::sync::Arc;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use redjit::codegen::spec::norm::{Fp8Scale, row_ops, variants};
use redjit::partition::{SmPartition, stream_sm_count};
use redjit::reference::{HostBuffer, par_map};
use redjit::reference_norm::{NormInputs, RowWant, expect_rows};
use redjit::{
    DType, F8E4M3, Fp8Scales, KernelInput, KernelOutput, KernelSpec, Matrix, NormArgs, NormInPlace,
    NormLayout, NormOp, NormSpec, Runtime, RuntimeOptions, SoftmaxAlgo,
};

/// Poisoned elements on each side of every output: a pack of any type, so an
/// output at offset 0 keeps its rows on the pack grid (the whole-pack kernel
/// runs where cols and ld allow), and one at 1..3 moves them off it.
const SLACK: usize = 4;

/// What poisoned elements hold: all bits set, a NaN no kernel writes.
const POISON_F32: f32 = f32::from_bits(u32::MAX);
const POISON_BF16: bf16 = bf16::from_bits(u16::MAX);
const POISON_F16: f16 = f16::from_bits(u16::MAX);

/// Where a call's buffers start past the pack grid, in elements: the outputs
/// (`out`, inside their poisoned buffers), the weight and the bias; x and the
/// residual start on it.
#[derive(Clone, Copy, Debug, Default)]
struct Place {
    out: usize,
    weight: usize,
    bias: usize,
}

impl Place {
    fn out(out: usize) -> Place {
        Place {
            out,
            ..Place::default()
        }
    }
}

enum Dev {
    F32(CudaSlice<f32>),
    BF16(CudaSlice<bf16>),
    F16(CudaSlice<f16>),
}

impl Dev {
    fn upload(s: &Arc<CudaStream>, h: &HostBuffer) -> Dev {
        Dev::upload_at(s, h, 0)
    }

    /// n + 2 SLACK elements of all-ones bits (a NaN in every type).
    fn poisoned(s: &Arc<CudaStream>, dtype: DType, n: usize) -> Dev {
        let n = n + 2 * SLACK;
        match dtype {
            DType::F32 => Dev::F32(s.clone_htod(&vec![POISON_F32; n]).unwrap()),
            DType::BF16 => Dev::BF16(s.clone_htod(&vec![POISON_BF16; n]).unwrap()),
            DType::F16 => Dev::F16(s.clone_htod(&vec![POISON_F16; n]).unwrap()),
            other => panic!("a norm kernel writes no {other}"),
        }
    }

    /// `h` after `at` elements of poison: the buffer from `input_at(at)` on
    /// starts `at` elements past the pack grid.
    fn upload_at(s: &Arc<CudaStream>, h: &HostBuffer, at: usize) -> Dev {
        fn after<T: Copy>(at: usize, poison: T, v: &[T]) -> Vec<T> {
            let mut all = vec![poison; at];
            all.extend_from_slice(v);
            all
        }
        match h {
            HostBuffer::F32(v) => Dev::F32(s.clone_htod(&after(at, POISON_F32, v)).unwrap()),
            HostBuffer::BF16(v) => Dev::BF16(s.clone_htod(&after(at, POISON_BF16, v)).unwrap()),
            HostBuffer::F16(v) => Dev::F16(s.clone_htod(&after(at, POISON_F16, v)).unwrap()),
            other => panic!("a norm kernel reads no {}", other.dtype()),
        }
    }

    /// Writes `h` over the buffer's first elements, in place (a captured
    /// graph keeps the buffer's address).
    fn write(&mut self, s: &Arc<CudaStream>, h: &HostBuffer) {
        match (self, h) {
            (Dev::F32(b), HostBuffer::F32(v)) => s.memcpy_htod(v, b).unwrap(),
            (Dev::BF16(b), HostBuffer::BF16(v)) => s.memcpy_htod(v, b).unwrap(),
            (Dev::F16(b), HostBuffer::F16(v)) => s.memcpy_htod(v, b).unwrap(),
            (_, h) => panic!("a buffer of another type than {}", h.dtype()),
        }
    }

    /// Every element poisoned again, in place.
    fn poison(&mut self, s: &Arc<CudaStream>) {
        match self {
            Dev::F32(b) => s.memcpy_htod(&vec![POISON_F32; b.len()], b),
            Dev::BF16(b) => s.memcpy_htod(&vec![POISON_BF16; b.len()], b),
            Dev::F16(b) => s.memcpy_htod(&vec![POISON_F16; b.len()], b),
        }
        .unwrap();
    }

    fn input(&self) -> Box<dyn KernelInput + '_> {
        self.input_at(0)
    }

    /// The buffer from element `at` on.
    fn input_at(&self, at: usize) -> Box<dyn KernelInput + '_> {
        match self {
            Dev::F32(b) => Box::new(b.slice(at..)),
            Dev::BF16(b) => Box::new(b.slice(at..)),
            Dev::F16(b) => Box::new(b.slice(at..)),
        }
    }

    /// The middle of a poisoned buffer, `shift` (< SLACK) elements past SLACK.
    fn output(&mut self, n: usize, shift: usize) -> Box<dyn KernelOutput + '_> {
        let at = SLACK + shift;
        match self {
            Dev::F32(b) => Box::new(b.slice_mut(at..at + n)),
            Dev::BF16(b) => Box::new(b.slice_mut(at..at + n)),
            Dev::F16(b) => Box::new(b.slice_mut(at..at + n)),
        }
    }

    /// Every element's bits, poison included.
    fn bits(&self, s: &Arc<CudaStream>) -> Vec<u32> {
        match self {
            Dev::F32(b) => s
                .clone_dtoh(b)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect(),
            Dev::BF16(b) => s
                .clone_dtoh(b)
                .unwrap()
                .iter()
                .map(|x| u32::from(x.to_bits()))
                .collect(),
            Dev::F16(b) => s
                .clone_dtoh(b)
                .unwrap()
                .iter()
                .map(|x| u32::from(x.to_bits()))
                .collect(),
        }
    }
}

fn poison(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => POISON_F32.to_bits(),
        DType::F16 => u32::from(POISON_F16.to_bits()),
        _ => u32::from(POISON_BF16.to_bits()),
    }
}

/// How rows are drawn.
#[derive(Clone, Copy, Debug)]
enum Values {
    /// About normal (sum of four uniforms), sd 2.
    Normal,
    /// Uniform in [-1e4, 1e4]: most of a softmax underflows, the max decides.
    Large,
    /// Normal rows, and rows 0..4 special: some -Inf, all -Inf, a +Inf, a NaN.
    Special,
    /// Normal rows moved off zero by row: every third row by 100 (E[x^2] - mean^2
    /// would cancel: a layer norm sums the squares again about the mean), the
    /// next by 0.7 (about the bound of the one-reduction form, |mean| = sd /
    /// sqrt(8)), the next not at all; in a warp kernel a warp's rows mix them.
    Offset,
}

fn host_values(rng: &mut common::Rng, rows: usize, cols: usize, ld: usize, v: Values) -> Vec<f32> {
    // Each row (with the gap after it) from its own stream, rows over the cores.
    let base = rng.next_u64();
    let mut out: Vec<f32> = par_map(rows, |r| {
        let mut rng = common::Rng::seeded(base ^ (r as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let len = if r + 1 == rows { cols } else { ld };
        let offset = match (v, r % 3) {
            (Values::Offset, 0) => 100.0,
            (Values::Offset, 1) => 0.7,
            _ => 0.0,
        };
        (0..len)
            .map(|_| match v {
                Values::Normal | Values::Special | Values::Offset => {
                    (unit() + unit() + unit() + unit() - 2.0) * 3.46 + offset
                }
                Values::Large => (unit() * 2.0 - 1.0) * 1e4,
            })
            .collect::<Vec<f32>>()
    })
    .concat();
    if let Values::Special = v {
        for c in 0..cols {
            let at = |r: usize| r * ld + c;
            if rows > 0 && c % 3 == 1 {
                out[at(0)] = f32::NEG_INFINITY;
            }
            if rows > 1 {
                out[at(1)] = f32::NEG_INFINITY;
            }
            if rows > 2 && c == cols / 2 {
                out[at(2)] = f32::INFINITY;
            }
            if rows > 3 && c == cols - 1 {
                out[at(3)] = f32::NAN;
            }
        }
    }
    out
}

/// One call: inputs drawn, outputs poisoned, launched `runs` times (each run's
/// bits must equal the first's), every output checked against the twin. The
/// buffers start where `place` puts them.
#[allow(clippy::too_many_arguments)]
fn check(
    rt: &Runtime,
    rng: &mut common::Rng,
    spec: &NormSpec,
    m: Matrix,
    values: Values,
    param: f32,
    stats: bool,
    runs: usize,
    place: Place,
) {
    check_on(
        rt,
        rt.stream(),
        rng,
        spec,
        m,
        values,
        param,
        stats,
        runs,
        place,
    );
}

/// `check` with the kernel launched on `launch` (the buffers made, and read
/// back, on the runtime's stream; cudarc's events order the two).
#[allow(clippy::too_many_arguments)]
fn check_on(
    rt: &Runtime,
    launch: &Arc<CudaStream>,
    rng: &mut common::Rng,
    spec: &NormSpec,
    m: Matrix,
    values: Values,
    param: f32,
    stats: bool,
    runs: usize,
    place: Place,
) {
    let s = rt.stream();
    let out_shift = place.out;
    let what = format!(
        "{} {}x{} ld {} {place:?} {values:?}",
        spec.name(),
        m.rows,
        m.cols,
        m.ld
    );
    let n = (m.rows - 1) * m.ld + m.cols;
    let HostCall {
        x: xh,
        res: res_h,
        w: w_h,
        b: b_h,
    } = host_call(rng, spec, m, values);
    let info = spec.op.info();
    let x = Dev::upload(s, &xh);
    let res = res_h.as_ref().map(|h| Dev::upload(s, h));
    let w = w_h.as_ref().map(|h| Dev::upload_at(s, h, place.weight));
    let b = b_h.as_ref().map(|h| Dev::upload_at(s, h, place.bias));
    let kernel = rt.norm(spec).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut first: Option<Vec<Vec<u32>>> = None;
    let mut outs = Vec::new();
    for run in 0..runs {
        let mut out = Dev::poisoned(s, spec.output, n);
        let mut res_out = spec.residual.then(|| Dev::poisoned(s, spec.input, n));
        let mut mean = (stats && info.mean).then(|| Dev::poisoned(s, DType::F32, m.rows));
        let mut rstd = (stats && !info.softmax).then(|| Dev::poisoned(s, DType::F32, m.rows));
        {
            let xi = x.input();
            let ri = res.as_ref().map(|d| d.input());
            let wi = w.as_ref().map(|d| d.input_at(place.weight));
            let bi = b.as_ref().map(|d| d.input_at(place.bias));
            let mut oo = out.output(n, out_shift);
            let mut ro = res_out.as_mut().map(|d| d.output(n, out_shift));
            let mut mo = mean.as_mut().map(|d| d.output(m.rows, out_shift));
            let mut so = rstd.as_mut().map(|d| d.output(m.rows, out_shift));
            let args = NormArgs {
                x: xi.as_ref(),
                residual: ri.as_deref(),
                weight: wi.as_deref(),
                bias: bi.as_deref(),
                out: oo.as_mut(),
                residual_out: ro.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
                mean: mo.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
                rstd: so.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
                shape: m,
                param,
                scale: None,
            };
            kernel
                .launch(launch, args)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
        let got: Vec<Vec<u32>> = [Some(&out), res_out.as_ref(), mean.as_ref(), rstd.as_ref()]
            .into_iter()
            .map(|d| d.map_or_else(Vec::new, |d| d.bits(s)))
            .collect();
        match &first {
            None => first = Some(got.clone()),
            Some(f) => assert!(f == &got, "{what}: run {run} differs from run 0"),
        }
        outs = got;
    }
    let mut inputs = NormInputs::new(&xh, m.rows, m.cols, m.ld, param);
    inputs.residual = res_h.as_ref();
    inputs.weight = w_h.as_ref();
    inputs.bias = b_h.as_ref();
    let want = expect_rows(spec, &inputs);
    compare(&what, spec, m, SLACK + out_shift, &want, &outs);
    if let Values::Offset = values {
        rstd_within(&what, &want, &outs[3], SLACK + out_shift, 1e-5);
    }
}

/// Every row's rstd within `rel` of the f64 value: sharper than the reference's
/// tolerance, which bounds a layer norm's variance against E[x^2] (Chan's
/// merges), so a row far from zero shows whether its squares were centred.
fn rstd_within(what: &str, want: &[RowWant], got: &[u32], at: usize, rel: f64) {
    assert!(!got.is_empty(), "{what}: no rstd written to check");
    let bad: Vec<String> = want
        .iter()
        .enumerate()
        .filter_map(|(r, w)| {
            let want = w.rstd.expect("a layer norm's rstd").value;
            let g = f64::from(f32::from_bits(got[at + r]));
            ((g - want).abs() > rel * want).then(|| format!("rstd of row {r}: {g}, want {want}"))
        })
        .take(8)
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// `at`: where each output starts in its poisoned buffer.
fn compare(what: &str, spec: &NormSpec, m: Matrix, at: usize, want: &[RowWant], got: &[Vec<u32>]) {
    // Poison around and between the rows stays (chunks of the buffer over the
    // cores; the first few findings of each kept).
    let row_buffer = |bits: &[u32], dtype: DType, name: &str| -> Vec<String> {
        let chunk = 1 << 20;
        par_map(bits.len().div_ceil(chunk), |k| {
            let mut bad = Vec::new();
            let start = k * chunk;
            let end = (start + chunk).min(bits.len());
            for (i, &g) in (start..end).zip(&bits[start..end]) {
                let inside = i >= at && {
                    let e = i - at;
                    e < (m.rows - 1) * m.ld + m.cols && e % m.ld < m.cols
                };
                if !inside && g != poison(dtype) && bad.len() < 8 {
                    bad.push(format!("{name}: wrote outside its elements at {i}: {g:#x}"));
                }
            }
            bad
        })
        .concat()
    };
    let mut bad = row_buffer(&got[0], spec.output, "out");
    if spec.residual {
        bad.extend(row_buffer(&got[1], spec.input, "residual_out"));
    }
    // Rows over the cores.
    let rows = par_map(want.len(), |r| {
        let w = &want[r];
        let mut bad = Vec::new();
        for (c, e) in w.out.iter().enumerate() {
            if let Err(msg) = e.check(spec.output, got[0][at + r * m.ld + c])
                && bad.len() < 8
            {
                bad.push(format!("out[{r}][{c}]: {msg}"));
            }
        }
        if let Some(bits) = &w.residual_out {
            for (c, &want_bits) in bits.iter().enumerate() {
                let g = got[1][at + r * m.ld + c];
                if g != want_bits && bad.len() < 8 {
                    bad.push(format!(
                        "residual_out[{r}][{c}]: {g:#x}, want {want_bits:#x}"
                    ));
                }
            }
        }
        for (k, stat) in [(2, w.mean), (3, w.rstd)] {
            if let (Some(e), false) = (stat, got[k].is_empty())
                && let Err(msg) = e.check(DType::F32, got[k][at + r])
            {
                bad.push(format!("stat {k} of row {r}: {msg}"));
            }
        }
        bad
    });
    bad.extend(rows.into_iter().flatten());
    bad.truncate(8);
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// The row op's weight (1 + N(0, 1) / 4 a column) and bias (N(0, 1) / 2),
/// those it takes, drawn in that order.
fn host_columns(
    rng: &mut common::Rng,
    spec: &NormSpec,
    cols: usize,
) -> (Option<HostBuffer>, Option<HostBuffer>) {
    let info = spec.op.info();
    let w = (!info.softmax).then(|| {
        let v = host_values(rng, 1, cols, cols, Values::Normal);
        HostBuffer::from_fn(spec.input, cols, |i| 1.0 + 0.25 * v[i])
    });
    let b = info.bias.then(|| {
        let v = host_values(rng, 1, cols, cols, Values::Normal);
        HostBuffer::from_fn(spec.input, cols, |i| 0.5 * v[i])
    });
    (w, b)
}

/// One call's host inputs.
struct HostCall {
    x: HostBuffer,
    res: Option<HostBuffer>,
    w: Option<HostBuffer>,
    b: Option<HostBuffer>,
}

/// The host inputs of a call of `spec` over `m`, drawn in this order: x (of
/// `values`), the residual (normal; `_res` only), then the weight and bias
/// the op takes (`host_columns`).
fn host_call(rng: &mut common::Rng, spec: &NormSpec, m: Matrix, values: Values) -> HostCall {
    let n = (m.rows - 1) * m.ld + m.cols;
    let x = HostBuffer::from_fn(spec.input, n, {
        let v = host_values(rng, m.rows, m.cols, m.ld, values);
        move |i| v[i]
    });
    let res = spec.residual.then(|| {
        let v = host_values(rng, m.rows, m.cols, m.ld, Values::Normal);
        HostBuffer::from_fn(spec.input, n, |i| v[i])
    });
    let (w, b) = host_columns(rng, spec, m.cols);
    HostCall { x, res, w, b }
}

/// Rows of `cols` back to back (ld = cols).
fn dense(rows: usize, cols: usize) -> Matrix {
    Matrix {
        rows,
        cols,
        ld: cols,
    }
}

fn param_of(spec: &NormSpec) -> f32 {
    if spec.op.info().softmax { 1.0 } else { 1e-5 }
}

/// `check` of normal values at the op's usual parameter, with the row
/// statistics, one run, buffers on the pack grid.
fn check_with_stats(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec, m: Matrix) {
    check_with_stats_at(rt, rng, spec, m, Place::default());
}

/// The same, launched `runs` times (each run's bits must equal the first's).
fn check_runs(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec, m: Matrix, runs: usize) {
    let param = param_of(spec);
    check(
        rt,
        rng,
        spec,
        m,
        Values::Normal,
        param,
        true,
        runs,
        Place::default(),
    );
}

/// The same with the buffers where `place` puts them.
fn check_with_stats_at(
    rt: &Runtime,
    rng: &mut common::Rng,
    spec: &NormSpec,
    m: Matrix,
    place: Place,
) {
    let param = param_of(spec);
    check(rt, rng, spec, m, Values::Normal, param, true, 1, place);
}

/// `check_with_stats` of each named kernel on its (rows, cols, ld).
fn check_named(rt: &Runtime, rng: &mut common::Rng, cases: &[(&str, usize, usize, usize)]) {
    for &(name, rows, cols, ld) in cases {
        let spec: NormSpec = name.parse().unwrap();
        check_with_stats(rt, rng, &spec, Matrix { rows, cols, ld });
    }
}

fn gpu() -> Option<Runtime> {
    common::gpu_or_skip()
}

/// Compiles `specs` and their general twins at once (NVRTC in parallel, through
/// the cache), so the checks that follow load them instead of compiling each
/// in turn.
fn prepare(rt: &Runtime, specs: impl IntoIterator<Item = NormSpec>) {
    let mut all: Vec<NormSpec> = Vec::new();
    for s in specs {
        for s in [
            s.general_twin(),
            s.staged_twin(),
            s.staged_twin_for_cols(40001),
            s,
        ] {
            if !all.contains(&s) {
                all.push(s);
            }
        }
    }
    rt.prepare(&all).expect("compiling the test's kernels");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_op_and_dtype_pair_at_odd_row_lengths() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("every_op_and_dtype_pair_at_odd_row_lengths");
    // 12288: 16-bit RMS norm's 256 x 16 block; 20000: a block of 16 packs
    // (whole); 20001: its split general twin.
    const SHAPES: [(usize, usize); 9] = [
        (1, 1),
        (3, 1),
        (5, 7),
        (17, 1000),
        (3, 4097),
        (3, 12288),
        (3, 20000),
        (2, 20001),
        (2, 1 << 20),
    ];
    prepare(
        &rt,
        row_ops().into_iter().flat_map(|ops| {
            DType::stores().flat_map(move |i| {
                DType::stores().flat_map(move |o| {
                    SHAPES
                        .iter()
                        .map(move |&(_, c)| NormSpec::with(ops, i, o, c as u64))
                })
            })
        }),
    );
    for ops in row_ops() {
        for input in DType::stores() {
            for output in DType::stores() {
                for (rows, cols) in SHAPES {
                    let spec = NormSpec::with(ops, input, output, cols as u64);
                    check_with_stats(&rt, &mut rng, &spec, dense(rows, cols));
                }
            }
        }
    }
}

/// Every layout variant of `ops`, bf16 and f32 rows, compiled with their
/// general twins.
fn bf16_f32_variants(
    rt: &Runtime,
    ops: impl IntoIterator<Item = (NormOp, Option<SoftmaxAlgo>, bool)>,
) -> Vec<NormSpec> {
    let specs = bf16_f32_specs(ops);
    prepare(rt, specs.iter().cloned());
    specs
}

/// Every layout variant of `ops`, bf16 and f32 rows, not compiled.
fn bf16_f32_specs(
    ops: impl IntoIterator<Item = (NormOp, Option<SoftmaxAlgo>, bool)>,
) -> Vec<NormSpec> {
    ops.into_iter()
        .flat_map(|ops| {
            [DType::BF16, DType::F32]
                .into_iter()
                .flat_map(move |d| variants(&NormSpec::with(ops, d, d, 1)))
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_layout_variant_on_strided_rows() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("every_layout_variant_on_strided_rows");
    for spec in bf16_f32_variants(&rt, row_ops()) {
        check_strided_rows(&rt, &mut rng, &spec);
    }
}

/// `spec` over rows that fill it, and a short odd one; a stride of cols + 3
/// (rows off the pack grid: the general twin, which shifts a split row's
/// packs to the grid where every buffer shares the row's offset) and an
/// aligned one; outputs on the grid, and outputs one element off it (buffers
/// at different offsets: the element path).
fn check_strided_rows(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec) {
    let cap = spec.capacity().unwrap_or(3 * spec.chunk() + 5) as usize;
    for cols in [cap, cap.div_ceil(3).max(1) | 1] {
        for (ld, out_shift) in [(cols + 3, 0), (cols + 3, 1), (cols.next_multiple_of(8), 0)] {
            let m = Matrix { rows: 37, cols, ld };
            check_with_stats_at(rt, rng, spec, m, Place::out(out_shift));
        }
    }
}

/// The 16-bit blocks holding their rows raw (`_r`: softmax and log-softmax,
/// RMS and layer norm, with the residual too), at their own launch bound and
/// one block an SM more (as a table may give them), bf16 and f16, exact and
/// ragged: full and odd rows, strided rows off the pack grid, outputs off it,
/// a softmax's large magnitudes and layer norm's rows far from zero.
#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_rows_of_16_bit_blocks() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("raw_rows_of_16_bit_blocks");
    let mut specs: Vec<NormSpec> = Vec::new();
    for ops in row_ops() {
        for d in [DType::BF16, DType::F16] {
            for s in variants(&NormSpec::with(ops, d, d, 1)) {
                // The raw forms the tuner times (`NormSpec::raw_forms`).
                for k in s.raw_forms() {
                    for exact in [false, true] {
                        let k = NormSpec { exact, ..k.clone() };
                        if k.validate().is_ok()
                            && (!exact || k.fills_exactly(k.capacity().unwrap_or(0)))
                        {
                            specs.push(k);
                        }
                    }
                }
            }
        }
    }
    assert!(specs.len() >= 40, "{} raw kernels", specs.len());
    prepare(&rt, specs.iter().cloned());
    for spec in &specs {
        check_strided_rows(&rt, &mut rng, spec);
        let cap = spec.capacity().unwrap_or(4096) as usize;
        if spec.op.info().softmax {
            check_softmax_values(&rt, &mut rng, spec, dense(5, cap));
        }
        if spec.op.info().bias {
            // Rows far from zero: the cheap reduction's second pass, about
            // the mean.
            let (m, param) = (dense(37, cap), param_of(spec));
            check(
                &rt,
                &mut rng,
                spec,
                m,
                Values::Offset,
                param,
                true,
                1,
                Place::default(),
            );
        }
    }
}

/// Layer norm rows far from zero, near the one-reduction form's bound and on
/// it, mixed in every kernel's rows (a warp kernel's warp holds rows of each):
/// every layout variant and its general twin, f32 and bf16, with and without
/// the residual, strided rows off the pack grid; rstd within 1e-5 of the f64
/// value besides the usual check.
#[test]
#[ignore = "needs a CUDA GPU"]
fn layer_norm_rows_off_zero() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("layer_norm_rows_off_zero");
    let ln = row_ops().into_iter().filter(|o| o.0.info().bias);
    for spec in bf16_f32_variants(&rt, ln) {
        let cap = spec.capacity().unwrap_or(3 * spec.chunk() + 5) as usize;
        for ld in [cap, cap + 3] {
            let m = Matrix {
                rows: 37,
                cols: cap,
                ld,
            };
            let param = param_of(&spec);
            check(
                &rt,
                &mut rng,
                &spec,
                m,
                Values::Offset,
                param,
                true,
                1,
                Place::default(),
            );
        }
    }
}

/// A softmax op's rows three ways: special values (some -Inf, all -Inf, a
/// +Inf, a NaN), magnitudes of 1e4 (the max decides) and a scale of 0.125.
fn check_softmax_values(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec, m: Matrix) {
    for (values, scale) in [
        (Values::Special, 1.0),
        (Values::Large, 1.0),
        (Values::Normal, 0.125),
    ] {
        check(rt, rng, spec, m, values, scale, false, 1, Place::default());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn softmax_special_values_large_magnitudes_and_scale() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("softmax_special_values_large_magnitudes_and_scale");
    for ops in row_ops().into_iter().filter(|o| o.0.info().softmax) {
        for d in DType::stores() {
            for cols in [3usize, 100, 1000, 4097, 1 << 20] {
                let spec = NormSpec::with(ops, d, d, cols as u64);
                let m = Matrix {
                    rows: 6,
                    cols,
                    ld: cols,
                };
                check_softmax_values(&rt, &mut rng, &spec, m);
            }
        }
    }
}

/// The softmax ops' split general twins (16-bit: rows of raw words, each
/// output's exponential made from the row's state) on rows off the pack grid:
/// special values (some -Inf, all -Inf, a +Inf, a NaN), magnitudes of 1e4 and
/// a scale, each row 5 elements past three chunks and 1-3 elements off the
/// grid.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_softmax_twins_special_values() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_softmax_twins_special_values");
    for ops in row_ops().into_iter().filter(|o| o.0.info().softmax) {
        for d in DType::stores() {
            let spec = NormSpec::with(ops, d, d, 1 << 20).general_twin();
            assert_eq!(spec.layout, NormLayout::Split);
            let cols = 3 * spec.chunk() as usize + 5;
            for pad in 1..=3 {
                let m = Matrix {
                    rows: 6,
                    cols,
                    ld: cols + pad,
                };
                check_softmax_values(&rt, &mut rng, &spec, m);
            }
        }
    }
}

/// Split rows off the pack grid, small enough for compute-sanitizer: every
/// row op's split general twin (f32 and bf16) at rows of three chunks and a
/// bit, strides of cols + 1, + 2, + 3 (each row at another offset from the
/// grid), outputs on the grid's offset of the inputs (the shifted packs) and
/// one element past it (the element path).
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_rows_off_the_pack_grid_small() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_rows_off_the_pack_grid_small");
    for ops in row_ops() {
        for d in [DType::F32, DType::BF16] {
            let spec = NormSpec::with(ops, d, d, 1 << 20).general_twin();
            assert_eq!(spec.layout, NormLayout::Split);
            let cols = 3 * spec.chunk() as usize + 5;
            for pad in 1..=3 {
                for out_shift in [0, 1] {
                    let m = Matrix {
                        rows: 5,
                        cols,
                        ld: cols + pad,
                    };
                    check_with_stats_at(&rt, &mut rng, &spec, m, Place::out(out_shift));
                }
            }
        }
    }
}

/// The paired-pack split twins (16-bit residual norms, a thread's packs in 16-byte
/// pairs, `NormSpec::paired_packs`): rows at every shift from the 8-element
/// grid (ld = cols + 1 and + 7 over 9 rows), so that lane 0's first pair starts
/// before the row by 1 to 7 elements; the output on the rows' grid, 4 elements
/// off it (on the pack grid, off the pairs': element by element at the row's
/// ends, pack by pack between) and 1 off it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn paired_split_twins_at_every_shift() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("paired_split_twins_at_every_shift");
    let mut specs: Vec<NormSpec> = Vec::new();
    for ops in row_ops() {
        for d in [DType::BF16, DType::F16] {
            for cols in [1 << 20, 1_000_003] {
                let s = NormSpec::with(ops, d, d, cols).general_twin();
                if s.paired_packs() && !specs.contains(&s) {
                    specs.push(s);
                }
            }
        }
    }
    // The 16-bit residual norms, bf16 and f16: RMS norm + residual (one pass)
    // and layer norm + residual (two).
    assert!(
        specs.len() >= 4,
        "{:?}",
        specs.iter().map(|s| s.name()).collect::<Vec<_>>()
    );
    prepare(&rt, specs.clone());
    for spec in &specs {
        assert_eq!(spec.row_grid(), 8, "{}", spec.name());
        let cols = 2 * spec.chunk() as usize + 13;
        for pad in [1, 7] {
            for out_shift in [0, 4, 1] {
                let m = Matrix {
                    rows: 9,
                    cols,
                    ld: cols + pad,
                };
                check_with_stats_at(&rt, &mut rng, spec, m, Place::out(out_shift));
            }
        }
    }
}

/// The 16-bit norms' split general twins, direct and staging, with the weight
/// and bias on their own pack grid 0-3 elements off the chunks' of rows off
/// the grid (rj_col_grid: two vector loads and a pick), together and a grid
/// apart; and bf16 in, f32 out, which keeps the element path.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_twins_with_vectors_off_the_rows_grid() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_twins_with_vectors_off_the_rows_grid");
    let mut specs: Vec<NormSpec> = Vec::new();
    for ops in row_ops().into_iter().filter(|o| !o.0.info().softmax) {
        for (i, o) in [
            (DType::BF16, DType::BF16),
            (DType::F16, DType::F16),
            (DType::BF16, DType::F32),
        ] {
            let long = NormSpec::with(ops, i, o, 1 << 20);
            for s in [long.general_twin(), long.staged_twin()] {
                assert!(s.general && s.layout == NormLayout::Split, "{}", s.name());
                if !specs.contains(&s) {
                    specs.push(s);
                }
            }
        }
    }
    prepare(&rt, specs.clone());
    for spec in &specs {
        let cols = 3 * spec.chunk() as usize + 5;
        for pad in [1, 3] {
            let m = Matrix {
                rows: 5,
                cols,
                ld: cols + pad,
            };
            for weight in 0..4 {
                for bias in [weight, (weight + 1) % 4] {
                    if bias != weight && !spec.op.info().bias {
                        continue;
                    }
                    let place = Place {
                        out: 0,
                        weight,
                        bias,
                    };
                    check_with_stats_at(&rt, &mut rng, spec, m, place);
                }
            }
        }
    }
}

/// Every row op's split general twin for every dtype pair (the norms' twins
/// are laid out apart from their long-row kernels: s512x4 at 2 blocks an SM),
/// on rows of three chunks and a bit at a stride off the pack grid.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_twins_of_every_dtype_pair() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_twins_of_every_dtype_pair");
    let twins: Vec<NormSpec> = row_ops()
        .into_iter()
        .flat_map(|ops| {
            DType::stores().flat_map(move |i| {
                DType::stores().map(move |o| NormSpec::with(ops, i, o, 1 << 20).general_twin())
            })
        })
        .collect();
    prepare(&rt, twins.clone());
    for spec in &twins {
        assert_eq!(spec.layout, NormLayout::Split, "{}", spec.name());
        let cols = 3 * spec.chunk() as usize + 5;
        let m = Matrix {
            rows: 4,
            cols,
            ld: cols + 3,
        };
        check_with_stats(&rt, &mut rng, spec, m);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_take_many_rows_each() {
    // A block's first row skips its first reduction's barrier and its later
    // rows keep it (rj_red_row_block): more rows than resident blocks, so that
    // some blocks take two, for every op's block variants, bf16 and f32, exact
    // and ragged at whole rows and ragged at rows with packs past their end.
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("blocks_take_many_rows_each");
    // Only the block kernels (and their exact forms) are compiled.
    let specs: Vec<NormSpec> = bf16_f32_specs(row_ops())
        .into_iter()
        .filter(|s| s.layout == NormLayout::Block && !s.prefetch)
        .flat_map(|s| {
            let exact = NormSpec {
                exact: true,
                ..s.clone()
            };
            let exact = exact.validate().is_ok().then_some(exact);
            exact.into_iter().chain(std::iter::once(s))
        })
        .collect();
    assert!(specs.iter().any(|s| s.exact));
    prepare(&rt, specs.clone());
    for spec in &specs {
        let resident = rt.norm(spec).unwrap().resident() as usize;
        let cap = spec.capacity().unwrap() as usize;
        let short = cap / 3 / 4 * 4 + 4;
        let lengths: &[usize] = if spec.exact { &[cap] } else { &[cap, short] };
        for &cols in lengths {
            let m = Matrix {
                rows: resident + 7,
                cols,
                ld: cols,
            };
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

/// The prefetching (`_p`) variants of `layout` for every row op: bf16, f32, and
/// f16 out of bf16 (the staged stream is the input's).
fn prefetching_variants(layout: NormLayout) -> Vec<NormSpec> {
    let mut specs = Vec::new();
    for ops in row_ops() {
        for (i, o) in [
            (DType::BF16, DType::BF16),
            (DType::F32, DType::F32),
            (DType::BF16, DType::F16),
        ] {
            specs.extend(
                variants(&NormSpec::with(ops, i, o, 1))
                    .into_iter()
                    .filter(|s| s.prefetch && s.layout == layout),
            );
        }
    }
    specs
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn prefetching_blocks_take_many_rows_each() {
    // A prefetching block stages its next row while it finishes this one: more
    // rows than resident blocks (each block takes two or three), rows that fill
    // the block and rows with packs past their end, a stride past the row
    // (rows apart in memory), statistics, and f16 out of bf16 (the staged
    // stream is the input's).
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("prefetching_blocks_take_many_rows_each");
    let specs = prefetching_variants(NormLayout::Block);
    assert!(!specs.is_empty());
    prepare(&rt, specs.clone());
    for spec in &specs {
        let resident = rt.norm(spec).unwrap().resident() as usize;
        let cap = spec.capacity().unwrap() as usize;
        for (cols, ld) in [(cap, cap), (cap / 3 / 4 * 4 + 4, cap / 3 / 4 * 4 + 12)] {
            let m = Matrix {
                rows: 2 * resident + 7,
                cols,
                ld,
            };
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn prefetching_split_cohorts_take_many_rows() {
    // Prefetching split kernels run in cohorts of a row's blocks, each cohort
    // taking rows in turn and staging its next row's chunks: three rows or
    // more a cohort, rows of two chunks to 64, a last chunk with packs past
    // the row, a stride past the row, statistics, f16 out of bf16, and the
    // same bits on every run.
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("prefetching_split_cohorts_take_many_rows");
    let specs = prefetching_variants(NormLayout::Split);
    // Every op (the safe softmax runs online in the split layout) in each of
    // the three dtype pairs.
    let ops: std::collections::BTreeSet<_> = row_ops()
        .iter()
        .map(|&(op, _, residual)| (op.to_string(), residual))
        .collect();
    let covered: std::collections::BTreeSet<_> = specs
        .iter()
        .map(|s| {
            (
                s.op.to_string(),
                s.residual,
                s.input.to_string(),
                s.output.to_string(),
            )
        })
        .collect();
    assert_eq!(covered.len(), 3 * ops.len(), "{specs:?}");
    prepare(&rt, specs.clone());
    for spec in &specs {
        let resident = rt.norm(spec).unwrap().resident() as usize;
        let chunk = spec.chunk() as usize;
        // (splits, cols, pad, repeats, rows a cohort): at least three rows a
        // cohort, and one row a cohort (the last cohort none), which only the
        // loop's tail finishes.
        for (splits, cols, pad, repeats, per_cohort) in [
            (2, 2 * chunk, 8, 1, 3),
            (3, 2 * chunk + 4, 0, 1, 3),
            (64, 64 * chunk, 0, 2, 3),
            (2, 2 * chunk + 4, 4, 1, 1),
        ] {
            let cohorts = resident / splits;
            let rows = if per_cohort == 1 {
                cohorts - 1
            } else {
                per_cohort * cohorts + 1
            };
            let m = Matrix {
                rows,
                cols,
                ld: cols + pad,
            };
            check_runs(&rt, &mut rng, spec, m, repeats);
        }
    }
}

/// Rows of `cols` (stride `ld`) for `spec`'s split kernel, as many as two a
/// cohort of the row's blocks and one more, so that every cohort takes rows in
/// turn and one cohort a row past them.
fn two_rows_a_cohort(rt: &Runtime, spec: &NormSpec, cols: usize, ld: usize) -> Matrix {
    let resident = rt.norm(spec).unwrap().resident() as usize;
    let splits = spec.splits_for(cols as u64) as usize;
    Matrix {
        rows: 2 * (resident / splits) + 1,
        cols,
        ld,
    }
}

/// The deferred kernels' general twins (`_p_g`) stage each row's chunks at the
/// row's own shift from the pack grid: rows of an odd stride (every shift, and
/// partial first and last packs copied whole between rows), two rows or more a
/// cohort so a cohort stages rows of different shifts ahead, outputs on and
/// off x's grid (the element path).
fn check_deferred_twin(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec) {
    assert!(spec.prefetch && spec.general, "{}", spec.name());
    let cols = 2 * spec.chunk() as usize + 5;
    let m = two_rows_a_cohort(rt, spec, cols, cols + 2);
    for out_shift in [0, 1] {
        check_with_stats_at(rt, rng, spec, m, Place::out(out_shift));
    }
}

/// Every op's deferred general twin in bf16, f32, and f16 out of bf16.
#[test]
#[ignore = "needs a CUDA GPU"]
fn deferred_general_twins_stage_rows_off_the_grid() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("deferred_general_twins_stage_rows_off_the_grid");
    let mut twins: Vec<NormSpec> = Vec::new();
    for s in prefetching_variants(NormLayout::Split) {
        for t in [s.staged_twin(), s.staged_twin_for_cols(40001)] {
            if t.prefetch && !twins.contains(&t) {
                twins.push(t);
            }
        }
    }
    prepare(&rt, twins.clone());
    for spec in &twins {
        check_deferred_twin(&rt, &mut rng, spec);
    }
}

/// The launcher takes a deferred kernel's staging twin for rows off the pack
/// grid that span 16 chunks or more (a short twin, where the op has one, for
/// rows of up to 65537, whatever their chunks), 8 rows a cohort or more, and
/// the direct twin for one row fewer; both right.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_launcher_picks_the_staging_twin_for_many_long_rows() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_launcher_picks_the_staging_twin_for_many_long_rows");
    for name in [
        "norm_rmsnorm_res_f32_f32_s512x4_p",
        "norm_softmax_online_bf16_bf16_s512x8_p",
        "norm_rmsnorm_bf16_bf16_s512x16_p",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        let kernel = rt.norm(&spec).unwrap();
        let mut cases = vec![(16 * spec.chunk() as usize - 3, spec.staged_twin())];
        let short = spec.staged_twin_for_cols(50257);
        if short != spec.staged_twin() {
            cases.push((50257, short));
        }
        for (cols, twin) in cases {
            let splits = twin.splits_for(cols as u64) as usize;
            let cohorts = kernel.resident() as usize / splits;
            for (rows, want) in [
                (8 * cohorts, twin.clone()),
                (8 * cohorts - 1, spec.general_twin()),
            ] {
                let m = dense(rows, cols);
                assert_eq!(
                    kernel.spec_for_aligned(m).unwrap(),
                    want,
                    "{name} {rows}x{cols}"
                );
                check_with_stats(&rt, &mut rng, &spec, m);
            }
        }
    }
}

/// Softmax and log-softmax rows of vocabulary lengths (32769..=65536), whose
/// layouts were measured apart: the ladder's kernel for each, on and off the
/// pack grid and exactly a whole number of chunks, against the f64 reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn softmax_rows_of_vocabulary_lengths() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("softmax_rows_of_vocabulary_lengths");
    for ops in row_ops() {
        if !ops.0.info().softmax {
            continue;
        }
        for d in [DType::BF16, DType::F32] {
            for cols in [36864, 49152, 50256, 50257, 57344, 65536] {
                let spec = NormSpec::with(ops, d, d, cols as u64);
                let m = Matrix {
                    rows: 9,
                    cols,
                    ld: cols,
                };
                check_with_stats(&rt, &mut rng, &spec, m);
            }
        }
    }
}

/// Rows of six chunks and a few elements: seven chunks of about 6/7 of the
/// layout's each where a kernel balances them (`NormSpec::balances`: the
/// deferred kernels, staged weight columns among them, and the short staging
/// twins), the layout's six and a remainder where not (the ticket and
/// two-pass twins, the long rows' staging twins), at an odd stride (every
/// shift) and on the pack grid, cohorts of two rows or more.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_rows_in_balanced_chunks() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_rows_in_balanced_chunks");
    let mut specs: Vec<NormSpec> = Vec::new();
    for ops in row_ops() {
        for d in [DType::BF16, DType::F32] {
            let long = NormSpec::with(ops, d, d, 1 << 20);
            let short = long.staged_twin_for_cols(40001);
            for s in [long.clone(), long.general_twin(), long.staged_twin(), short] {
                if s.layout == NormLayout::Split && !specs.contains(&s) {
                    specs.push(s);
                }
            }
        }
    }
    assert!(specs.iter().any(|s| s.two_pass()));
    assert!(
        specs
            .iter()
            .any(|s| s.prefetch && s.general && s.balances())
    );
    assert!(
        specs
            .iter()
            .any(|s| s.prefetch && s.general && !s.balances())
    );
    prepare(&rt, specs.clone());
    for spec in &specs {
        let chunk = spec.chunk() as usize;
        let (cols, ld) = if spec.general {
            (6 * chunk + 1, 6 * chunk + 4)
        } else {
            (6 * chunk + 8, 6 * chunk + 8)
        };
        assert_eq!(spec.splits_for(cols as u64), 7, "{}", spec.name());
        check_with_stats(&rt, &mut rng, spec, two_rows_a_cohort(&rt, spec, cols, ld));
    }
}

/// Cluster rows (`_c<n>`) of every row op, f32, bf16 and bf16 -> f32 rows,
/// clusters of 2, 4 and 7 blocks of small chunks, loaded directly and staged
/// a row ahead (`_p`): rows at the kernel's
/// capacity (whole packs, and the general twin's 3 fewer), a row one element
/// into its last block, rows shorter than a cluster's packs (blocks with
/// nothing to hold), odd `ld`, and more rows than clusters, so that each
/// cluster takes several rows (both state slots). Three runs must give the
/// same bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_rows_of_every_op() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("cluster_rows_of_every_op");
    let pairs = [
        (DType::F32, DType::F32),
        (DType::BF16, DType::BF16),
        (DType::BF16, DType::F32),
    ];
    let specs = every_op_laid_out(
        &pairs,
        &[(2, 128, 2), (4, 64, 4), (7, 64, 2)],
        |base, &(n, lanes, packs)| {
            [false, true].map(|prefetch| NormSpec {
                layout: NormLayout::Split,
                lanes,
                packs,
                cluster: Some(n),
                prefetch,
                ..base.clone()
            })
        },
    );
    prepare(&rt, specs.clone());
    for spec in &specs {
        let n = spec.cluster.unwrap() as usize;
        let cap = n * spec.chunk() as usize;
        for (rows, cols, ld) in [
            (5, cap, cap),
            (3, cap - 3, cap + 1),
            (600, cap - spec.chunk() as usize + 4, cap),
            (9, cap - spec.chunk() as usize + 1, cap + 3),
            (7, 5, 9),
        ] {
            let m = Matrix { rows, cols, ld };
            // Rows off the pack grid: the cluster's own general twin, and
            // the unclustered kernel the launcher hands them to.
            let whole = cols % 4 == 0 && ld % 4 == 0;
            let general = NormSpec {
                general: true,
                ..spec.clone()
            };
            for s in if whole {
                vec![spec]
            } else {
                vec![&general, spec]
            } {
                check_runs(&rt, &mut rng, s, m, 3);
            }
        }
    }
}

/// Every row op (the softmaxes online) of each dtype pair, laid out by `lay`
/// for each of `forms`, without repeats.
fn every_op_laid_out<F, const N: usize>(
    pairs: &[(DType, DType)],
    forms: &[F],
    lay: impl Fn(&NormSpec, &F) -> [NormSpec; N],
) -> Vec<NormSpec> {
    let mut specs: Vec<NormSpec> = Vec::new();
    for ops in row_ops() {
        for &(i, o) in pairs {
            let base = NormSpec {
                algo: ops.1.map(|_| SoftmaxAlgo::Online),
                ..NormSpec::with(ops, i, o, 1)
            };
            for form in forms {
                for spec in lay(&base, form) {
                    if !specs.contains(&spec) {
                        specs.push(spec);
                    }
                }
            }
        }
    }
    specs
}

/// The loop layout (`l<threads>x<packs>`): every row op but the safe softmax
/// (one reduction a row), f32, bf16 and both directions between them, rows of
/// one chunk, of several with a partial last one, of whole chunks (`_x`), off
/// the pack grid (its general twin), a long row of 70001, rows far from zero
/// (layer norm) and with infinities and NaN (softmax), three runs bit-identical.
#[test]
#[ignore = "needs a CUDA GPU"]
fn loop_rows_of_every_op() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("loop_rows_of_every_op");
    let pairs = [
        (DType::F32, DType::F32),
        (DType::BF16, DType::BF16),
        (DType::BF16, DType::F32),
        (DType::F32, DType::BF16),
    ];
    let specs = every_op_laid_out(&pairs, &[(128, 2), (64, 4)], |base, &(lanes, packs)| {
        [NormSpec {
            layout: NormLayout::Loop,
            lanes,
            packs,
            ..base.clone()
        }]
    });
    let exact: Vec<NormSpec> = specs
        .iter()
        .map(|s| NormSpec {
            exact: true,
            ..s.clone()
        })
        .collect();
    prepare(&rt, specs.iter().chain(&exact).cloned());
    for (spec, exact) in specs.iter().zip(&exact) {
        let chunk = spec.chunk() as usize;
        for (rows, cols, ld) in [
            (37, chunk, chunk),
            (37, 3 * chunk + 516, 3 * chunk + 520),
            (29, 2 * chunk + 7, 2 * chunk + 9),
            (5, 70_001, 70_001),
            (7, 5, 9),
        ] {
            let m = Matrix { rows, cols, ld };
            let whole = cols % 4 == 0 && ld % 4 == 0;
            let general = spec.general_twin();
            let s = if whole { spec } else { &general };
            check_runs(&rt, &mut rng, s, m, 3);
            if spec.fills_exactly(cols as u64) && whole {
                check_runs(&rt, &mut rng, exact, m, 1);
            }
        }
        let m = Matrix {
            rows: 40,
            cols: 3 * chunk - 4,
            ld: 3 * chunk,
        };
        let values = if spec.op.info().softmax {
            Values::Special
        } else {
            Values::Offset
        };
        check(
            &rt,
            &mut rng,
            spec,
            m,
            values,
            param_of(spec),
            true,
            1,
            Place::default(),
        );
    }
}

/// Loop rows small enough for compute-sanitizer: the residual, general twins
/// off the pack grid (RMS norm's shifted to it), whole chunks (`_x`), several
/// chunks a row.
#[test]
#[ignore = "needs a CUDA GPU"]
fn loop_rows_small() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("loop_rows_small");
    check_named(
        &rt,
        &mut rng,
        &[
            ("norm_layernorm_res_bf16_bf16_l64x2", 300, 1500, 1504),
            // The second pass loads the residual's sum back, off the grid
            // element by element.
            ("norm_layernorm_res_f32_bf16_l64x4_g", 100, 1001, 1003),
            ("norm_rmsnorm_res_f32_f32_l64x2_g", 120, 1001, 1003),
            ("norm_softmax_online_f32_f32_l128x1_g", 200, 2049, 2051),
            ("norm_rmsnorm_bf16_f32_l64x4_x", 250, 3072, 3072),
            ("norm_rmsnorm_f32_f32_l64x2_g", 150, 1001, 1003),
        ],
    );
}

/// Rows between f32 and bf16 past 32768 columns (the layouts measured for
/// each direction, and the cluster rows of 32769..57344) on the pack grid
/// and off it, against the f64 reference.
#[test]
#[ignore = "needs a CUDA GPU"]
fn mixed_rows_of_vocabulary_length() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("mixed_rows_of_vocabulary_length");
    let pairs = [(DType::BF16, DType::F32), (DType::F32, DType::BF16)];
    let specs: Vec<NormSpec> = row_ops()
        .into_iter()
        .flat_map(|ops| pairs.map(|(i, o)| NormSpec::with(ops, i, o, 50_256)))
        .collect();
    prepare(&rt, specs.iter().flat_map(|s| [s.clone(), s.unclustered()]));
    for spec in &specs {
        for cols in [50_256, 50_257] {
            let m = Matrix {
                rows: 3,
                cols,
                ld: cols,
            };
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

/// Cluster rows small enough for compute-sanitizer: loaded directly and
/// staged, whole packs and the general twin, two to seven blocks, several
/// rows a cluster (both state slots).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_rows_small() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("cluster_rows_small");
    check_named(
        &rt,
        &mut rng,
        &[
            ("norm_softmax_online_bf16_bf16_s64x2_c2", 700, 1024, 1024),
            ("norm_layernorm_bf16_f32_s64x4_c4_p", 600, 3000, 3004),
            ("norm_rmsnorm_res_f32_f32_s64x2_c7_p_g", 500, 3581, 3583),
            ("norm_layernorm_f16_f16_s64x2_c5_p_g", 400, 2557, 2557),
        ],
    );
}

/// The ladder's cluster rows (mixed-type layer norm of 8193..32768 columns,
/// f32 -> 16-bit layer norm of 57344) against the f64
/// reference, on the grid (the cluster kernel) and off it (the unclustered
/// kernel the launcher hands such calls to, `NormKernel::spec_for_aligned`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_ladders_cluster_rows() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_ladders_cluster_rows");
    let layer = (NormOp::LayerNorm, None, false);
    let cases: [(DType, DType, usize, u32); 3] = [
        (DType::BF16, DType::F32, 12_288, 2),
        (DType::F32, DType::BF16, 20_000, 2),
        (DType::F32, DType::BF16, 57_344, 7),
    ];
    let specs: Vec<NormSpec> = cases
        .iter()
        .map(|&(i, o, cols, _)| NormSpec::with(layer, i, o, cols as u64))
        .collect();
    prepare(&rt, specs.iter().flat_map(|s| [s.clone(), s.unclustered()]));
    for (spec, &(_, _, cols, n)) in specs.iter().zip(&cases) {
        assert_eq!(spec.cluster, Some(n), "{}", spec.name());
        let kernel = rt.norm(spec).unwrap();
        for (rows, cols, ld) in [(300, cols, cols), (37, cols - 1, cols + 1)] {
            let m = Matrix { rows, cols, ld };
            let runs = kernel.spec_for_aligned(m).unwrap();
            assert_eq!(
                runs.cluster.is_some(),
                cols % 4 == 0,
                "{} {rows}x{cols}",
                runs.name()
            );
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

/// The ladder's loop rows (16-bit layer norm of 32769..57344 columns but
/// 49152, 16-bit RMS norm of 32769..40960, f32 -> 16-bit layer norm of
/// 32769..65536 but 57344, f32 layer norm of 32769..38912 and 40961..53248,
/// 16-bit layer norm + residual of 32769..33792)
/// against the f64 reference, on
/// the pack grid and off it (the loop's general twin for 16-bit layer norm,
/// the long rows' split kernel for the others: `NormSpec::off_grid_kernel`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_ladders_loop_rows() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_ladders_loop_rows");
    let layer = (NormOp::LayerNorm, None, false);
    let rms = (NormOp::RmsNorm, None, false);
    let cases = [
        (layer, DType::BF16, DType::BF16, 36_864),
        (layer, DType::F16, DType::F16, 50_256),
        (rms, DType::BF16, DType::BF16, 40_000),
        (layer, DType::F32, DType::BF16, 45_000),
        (layer, DType::F32, DType::F16, 65_536),
        (layer, DType::F32, DType::F32, 36_864),
        (
            (NormOp::LayerNorm, None, true),
            DType::BF16,
            DType::BF16,
            33_000,
        ),
        (
            (NormOp::LayerNorm, None, true),
            DType::BF16,
            DType::BF16,
            50_256,
        ),
        (
            (NormOp::LayerNorm, None, true),
            DType::F32,
            DType::F32,
            33_000,
        ),
        (
            (NormOp::RmsNorm, None, true),
            DType::BF16,
            DType::BF16,
            33_000,
        ),
        (
            (NormOp::RmsNorm, None, true),
            DType::F32,
            DType::F32,
            36_864,
        ),
    ];
    let specs: Vec<NormSpec> = cases
        .iter()
        .map(|&(ops, i, o, cols)| NormSpec::with(ops, i, o, cols))
        .collect();
    prepare(&rt, specs.clone());
    for spec in &specs {
        assert_eq!(spec.layout, NormLayout::Loop, "{}", spec.name());
    }
    for (spec, &(.., cols)) in specs.iter().zip(&cases) {
        let kernel = rt.norm(spec).unwrap();
        // Off the pack grid only 16-bit layer norm keeps the loop (its
        // general twin); the others go to their long rows' split kernel.
        let keeps = spec.op == NormOp::LayerNorm && !spec.residual && spec.input != DType::F32;
        let cols = cols as usize;
        for (rows, cols, ld) in [(300, cols, cols), (37, cols - 1, cols + 1)] {
            let m = Matrix { rows, cols, ld };
            let runs = kernel.spec_for_aligned(m).unwrap();
            assert_eq!(
                runs.layout == NormLayout::Loop,
                cols % 4 == 0 || keeps,
                "{} {rows}x{cols}",
                runs.name()
            );
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

/// Five of them for compute-sanitizer: both row streams staged (the
/// residual), f64 sums (16-bit layer norm), f32 rows, and short twins'
/// balanced chunks (16-bit RMS norm's, and 16-bit layer norm + residual's
/// with Chan's f32 state).
#[test]
#[ignore = "needs a CUDA GPU"]
fn deferred_general_twins_small() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("deferred_general_twins_small");
    for name in [
        "norm_rmsnorm_res_bf16_bf16_s512x8_p_g",
        "norm_layernorm_bf16_bf16_s512x8_p_g",
        "norm_softmax_online_f32_f32_s512x8_p_g",
        "norm_rmsnorm_bf16_bf16_s512x4_p_g",
        "norm_layernorm_res_bf16_bf16_s512x4_p_g",
    ] {
        check_deferred_twin(&rt, &mut rng, &name.parse().unwrap());
    }
}

/// Prefetching split cohorts small enough for compute-sanitizer: two rows or
/// more a cohort of 32 to 128 blocks, the last chunk ragged, both row streams
/// staged (the residual add), a three-word state (layer norm's), a weight
/// read from global memory beside three staged rows (16-bit RMS norm's 16 packs),
/// exact forms (`_p_x`, rows of 64 whole chunks, the f64 sums among them), and
/// columns held in registers (`held_cols`), all or some of a chunk's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn prefetching_split_cohorts_small() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("prefetching_split_cohorts_small");
    // Columns held in registers: every pack, a ragged row's past its end
    // (zeros, never stored), with the residual (f32's exact kernel with f64
    // sums), f32 in and 16 bits out, and a few packs by name.
    let holding = [
        "norm_rmsnorm_f32_f32_s512x8_p",
        "norm_layernorm_res_bf16_bf16_s512x8_p",
        "norm_layernorm_res_f32_f32_s512x4_p_x",
        "norm_layernorm_f32_bf16_s512x4_p",
        "norm_rmsnorm_f32_f16_s512x8_p",
        "norm_rmsnorm_bf16_bf16_s512x16_p_x_h3",
    ];
    for name in [
        "norm_softmax_online_bf16_bf16_s512x16_p",
        "norm_rmsnorm_res_f32_f32_s512x4_p",
        "norm_layernorm_bf16_bf16_s512x8_p",
        "norm_rmsnorm_bf16_bf16_s512x16_p",
        "norm_layernorm_bf16_bf16_s512x8_p_x",
        "norm_softmax_online_f32_f32_s512x8_p_x",
        "norm_layernorm_f16_f16_s512x16_p_x",
        "norm_layernorm_f32_f32_s512x8_p_x",
    ]
    .into_iter()
    .chain(holding)
    {
        let spec: NormSpec = name.parse().unwrap();
        assert!(!spec.general, "{name}");
        assert!(!holding.contains(&name) || spec.held_cols() > 0, "{name}");
        let cols: usize = if spec.exact { 1 << 20 } else { (1 << 20) - 4 };
        let m = two_rows_a_cohort(&rt, &spec, cols, cols + 4);
        check_with_stats(&rt, &mut rng, &spec, m);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn layer_norm_rows_of_larger_chunks() {
    // Layer norm's long rows of a whole number of larger chunks (16-bit
    // s512x16_p_x, f32 s512x8_p_x with the row's states over the warps): two
    // rows a cohort and one more, a stride past the row; through the same
    // handle, a row a pack longer runs the ladder's ragged kernel (not the
    // layout's own ragged form) and an odd one the general twin.
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("layer_norm_rows_of_larger_chunks");
    let layer = (NormOp::LayerNorm, None, false);
    for (d, cols, packs) in [
        (DType::BF16, 1 << 20, 16),
        (DType::F16, 65536, 16),
        (DType::F32, 1 << 20, 8),
        (DType::F32, 65536, 8),
    ] {
        let spec = NormSpec::with(layer, d, d, cols as u64);
        assert!(
            spec.exact && spec.prefetch && spec.packs == packs,
            "{}",
            spec.name()
        );
        let longer = NormSpec::with(layer, d, d, cols as u64 + 4);
        let k = rt.norm(&spec).unwrap();
        let at = |cols: usize| Matrix {
            rows: 3,
            cols,
            ld: cols,
        };
        assert_eq!(k.spec_for_aligned(at(cols + 4)).unwrap(), longer);
        assert_eq!(k.spec_for_aligned(at(cols)).unwrap(), spec);
        for (cols, ld) in [(cols, cols + 8), (cols + 4, cols + 4), (cols - 1, cols)] {
            let m = two_rows_a_cohort(&rt, &spec, cols, ld);
            check_with_stats(&rt, &mut rng, &spec, m);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_kernels_and_their_ragged_twins() {
    // An exact kernel (`_x`) has no bounds test a pack: rows of its length run
    // on it, shorter whole-pack rows on its ragged twin and odd ones on the
    // general twin, all through the one kernel handle.
    check_exact_kernels("exact_kernels_and_their_ragged_twins", [300, 37, 37, 5]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_kernels_small() {
    // The same kernels on a few rows each: for compute-sanitizer (the packs'
    // addresses are a base plus constants, and layer norm stores each pack as
    // it makes it).
    check_exact_kernels("exact_kernels_small", [3, 2, 2, 1]);
}

/// Every exact default and a few named exact kernels, at rows of each
/// kernel's capacity (contiguous and with a stride past the row), one pack
/// shorter (the ragged twin) and odd (the general twin); `rows` a call each.
fn check_exact_kernels(name: &str, rows: [usize; 4]) {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh(name);
    let mut specs = Vec::new();
    for ops in row_ops() {
        for (i, o) in [
            (DType::BF16, DType::BF16),
            (DType::F32, DType::F32),
            (DType::F16, DType::F16),
            (DType::BF16, DType::F32),
            (DType::F32, DType::BF16),
        ] {
            for cols in [4096, 16384, 32768] {
                let s = NormSpec::with(ops, i, o, cols);
                if s.exact {
                    specs.push(s);
                }
            }
        }
    }
    // Layer norm's exact block kernels store each pack as they make it
    // (`stores_each_pack`): with the residual and between dtypes too.
    for name in [
        "norm_softmax_online_bf16_bf16_b512x16_p_x",
        "norm_layernorm_bf16_bf16_b512x16_p_x",
        "norm_layernorm_res_f32_f32_b512x16_x",
        "norm_layernorm_res_bf16_bf16_b512x8_x",
        "norm_layernorm_bf16_f32_b512x16_x",
        "norm_layernorm_f32_bf16_b512x8_o2_x",
        // In pairs (16-byte accesses; layer norm stores a pair as it makes it).
        "norm_layernorm_res_bf16_bf16_b512x8_x_v",
        "norm_layernorm_bf16_bf16_b256x4_x_v",
        "norm_rmsnorm_f16_f16_b128x8_x_v_h8",
        "norm_softmax_safe_bf16_bf16_b256x8_x_v",
        // Warp kernels of short rows, a row a group of lanes.
        "norm_layernorm_bf16_bf16_w8x4_x",
        "norm_layernorm_res_bf16_bf16_w16x2_x_v_h2",
        "norm_rmsnorm_bf16_bf16_w8x4_o5_x_v_h4",
        "norm_softmax_safe_bf16_bf16_w8x4_x_v",
        "norm_logsoftmax_online_f32_f32_w16x4_x",
        "norm_rmsnorm_f16_f16_w32x1_x",
    ] {
        specs.push(name.parse().unwrap());
    }
    assert!(specs.iter().any(|s| s.stores_each_pack()));
    assert!(specs.len() >= 8, "{specs:?}");
    prepare(&rt, specs.iter().flat_map(|s| [s.clone(), s.ragged_twin()]));
    for spec in &specs {
        let cap = spec.capacity().unwrap() as usize;
        for (rows, cols, ld) in [
            (rows[0], cap, cap),
            (rows[1], cap, cap + 8),
            (rows[2], cap - 4, cap),
            (rows[3], cap - 1, cap),
        ] {
            let m = Matrix { rows, cols, ld };
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_split_cohorts_and_their_twins() {
    // A split kernel's exact form takes rows of a whole number of its chunks
    // with no bounds test a pack: every prefetching split variant so, at two
    // chunks a row (three rows or more a cohort, a stride past the row) and
    // at 64; rows one pack past a multiple go to its ragged twin, odd rows to
    // the general twin, all through the one kernel handle.
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("exact_split_cohorts_and_their_twins");
    let specs: Vec<NormSpec> = prefetching_variants(NormLayout::Split)
        .into_iter()
        .map(|s| NormSpec { exact: true, ..s })
        .collect();
    assert!(specs.len() >= 21, "{specs:?}");
    prepare(
        &rt,
        specs
            .iter()
            .flat_map(|s| [s.clone(), s.ragged_twin(), s.general_twin()]),
    );
    for spec in &specs {
        let chunk = spec.chunk() as usize;
        let cohorts = rt.norm(spec).unwrap().resident() as usize / 2;
        for (rows, cols, ld) in [
            (3 * cohorts + 1, 2 * chunk, 2 * chunk + 8),
            (5, 64 * chunk, 64 * chunk),
            (7, 2 * chunk + 4, 2 * chunk + 4),
            (5, 2 * chunk - 1, 2 * chunk),
        ] {
            let m = Matrix { rows, cols, ld };
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}
/// One kernel object's workspace serves calls of any row count, in any order:
/// where a call's counters lie over an earlier call's partial states (a call
/// of more rows after one of fewer), the split rows must still see zeroed
/// counters.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_workspace_serves_calls_of_other_row_counts() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_workspace_serves_calls_of_other_row_counts");
    // Counters a row (whole packs), flagged states in one pass (without and
    // with the early ask; raw 16-bit layer norm launched cooperatively where
    // its items are one wave, 7 x 49152, and from a ticket at the others), a
    // deferred kernel.
    for name in [
        "norm_rmsnorm_f32_f32_s512x8",
        "norm_layernorm_bf16_bf16_s512x8_g",
        "norm_rmsnorm_res_bf16_bf16_s512x4_o2_g",
        "norm_layernorm_bf16_bf16_s512x8_o2_g",
        "norm_softmax_online_bf16_bf16_s512x8_p",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        for (rows, cols) in [
            (64, 1 << 20),
            (300, 40_000),
            (7, 3 * 16384),
            (300, 40_000),
            (64, 1 << 20),
        ] {
            check_with_stats(&rt, &mut rng, &spec, dense(rows, cols));
        }
    }
}

/// Split rows captured into a CUDA graph and replayed, each replay on fresh x
/// written into the captured buffer: a launch's flag lives in the workspace,
/// not in its captured arguments, so every replay must match the reference.
/// Raw 16-bit layer norm of one wave (4 x 100003) is launched cooperatively,
/// the other calls hand their items out from a ticket.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_rows_replayed_from_a_captured_graph() {
    if gpu().is_none() {
        return;
    }
    // cudarc's event waits and records have no place in a capture.
    let rt = Runtime::with_options(RuntimeOptions::default().no_event_tracking(true))
        .expect("a runtime without event tracking");
    let mut rng = common::Rng::fresh("split_rows_replayed_from_a_captured_graph");
    let s = rt.stream();
    for (name, rows, cols) in [
        ("norm_layernorm_bf16_bf16_s512x8_o2_g", 4, 100_003),
        ("norm_layernorm_bf16_bf16_s512x8_o2_g", 300, 40_000),
        ("norm_softmax_online_bf16_bf16_s512x8_g", 4, 100_003),
        ("norm_layernorm_f32_f32_s512x4_o2_g", 4, 100_003),
    ] {
        let spec: NormSpec = name.parse().unwrap();
        let m = dense(rows, cols);
        let what = format!("{name} {rows}x{cols}, replayed");
        let n = rows * cols;
        let fresh = |rng: &mut common::Rng| {
            let v = host_values(rng, rows, cols, cols, Values::Normal);
            HostBuffer::from_fn(spec.input, n, |i| v[i])
        };
        let (w_h, b_h) = host_columns(&mut rng, &spec, cols);
        let mut x = Dev::upload(s, &fresh(&mut rng));
        let w = w_h.as_ref().map(|h| Dev::upload(s, h));
        let b = b_h.as_ref().map(|h| Dev::upload(s, h));
        let mut out = Dev::poisoned(s, spec.output, n);
        let kernel = rt.norm(&spec).unwrap_or_else(|e| panic!("{what}: {e}"));
        let param = param_of(&spec);
        let launch = |x: &Dev, out: &mut Dev| {
            let xi = x.input();
            let wi = w.as_ref().map(|d| d.input());
            let bi = b.as_ref().map(|d| d.input());
            let mut oo = out.output(n, 0);
            let args = match &wi {
                Some(wi) => NormArgs::norm(
                    xi.as_ref(),
                    wi.as_ref(),
                    bi.as_deref(),
                    oo.as_mut(),
                    m,
                    param,
                ),
                None => NormArgs::softmax(xi.as_ref(), oo.as_mut(), m, param),
            };
            kernel
                .launch(s, args)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        };
        // Eager first: the workspace is allocated outside the capture.
        launch(&x, &mut out);
        s.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        launch(&x, &mut out);
        let graph = s
            .end_capture(CUgraphInstantiate_flags(0))
            .unwrap()
            .expect("a graph of the captured launch");
        for _ in 0..3 {
            let xh = fresh(&mut rng);
            x.write(s, &xh);
            out.poison(s);
            graph.launch().unwrap();
            let got = vec![out.bits(s), Vec::new(), Vec::new(), Vec::new()];
            let mut inputs = NormInputs::new(&xh, rows, cols, cols, param);
            inputs.weight = w_h.as_ref();
            inputs.bias = b_h.as_ref();
            compare(&what, &spec, m, SLACK, &expect_rows(&spec, &inputs), &got);
        }
    }
}

/// Where the runtime launches nothing cooperatively (a partition of the
/// device that refuses it), the one-wave 16-bit layer norm takes its items by
/// ticket, one block more than items (`Plan::by_ticket`), and its rows still
/// match the reference, run after run on one workspace.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_wave_rows_without_a_cooperative_launch() {
    let Some(cooperative) = gpu() else { return };
    let rt = Runtime::with_options(RuntimeOptions::default().no_cooperative_launch(true))
        .expect("a runtime that launches nothing cooperatively");
    assert!(!rt.device().cooperative_launch);
    let mut rng = common::Rng::fresh("one_wave_rows_without_a_cooperative_launch");
    for name in [
        "norm_layernorm_bf16_bf16_s512x8_o2_g",
        "norm_layernorm_f16_f16_s512x8_o2_g",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        assert!(spec.one_wave(), "{name}");
        let (k, k_coop) = (rt.norm(&spec).unwrap(), cooperative.norm(&spec).unwrap());
        for (rows, cols) in [(4, 1_000_003), (4, 100_003), (1, 300_001)] {
            let (p, p_coop) = (k.plan(rows, cols), k_coop.plan(rows, cols));
            let items = rows as u64 * u64::from(p.splits);
            assert!(
                !p.cooperative && u64::from(p.grid) == items + 1,
                "{name} {rows}x{cols}: {p:?}"
            );
            assert_eq!(
                p_coop.cooperative,
                cooperative.device().cooperative_launch,
                "{name} {rows}x{cols} on the default runtime: {p_coop:?}"
            );
            check_runs(&rt, &mut rng, &spec, dense(rows, cols), 3);
        }
    }
}

/// On a stream of an SM partition (a green context) the split rows plan for
/// the partition's SMs: every call still matches the reference (the one-wave
/// layer norm by ticket where its items outnumber the partition's blocks), and
/// a row of more blocks than the partition holds is refused before launch,
/// never left waiting for blocks that cannot start.
#[test]
#[ignore = "needs a CUDA GPU"]
fn split_rows_on_an_sm_partition() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_rows_on_an_sm_partition");
    let dev = rt.device();
    assert_eq!(stream_sm_count(rt.stream(), dev).unwrap(), dev.sm_count);
    let part = SmPartition::new(&rt, 64).expect("a partition of 64 SMs");
    let sms = part.sm_count();
    assert!(
        sms >= 64 && sms < dev.sm_count,
        "{sms} SMs of {}",
        dev.sm_count
    );
    assert_eq!(stream_sm_count(part.stream(), dev).unwrap(), sms);
    for name in [
        "norm_layernorm_bf16_bf16_s512x8_o2_g",
        "norm_softmax_online_bf16_bf16_s512x8_g",
        "norm_rmsnorm_res_bf16_bf16_s512x8_o2_g",
        "norm_layernorm_f32_f32_s512x4_o2_g",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        for (rows, cols) in [(4, 1_000_003), (4, 100_003), (64, 40_000)] {
            let m = dense(rows, cols);
            let param = param_of(&spec);
            let place = Place::default();
            check_on(
                &rt,
                part.stream(),
                &mut rng,
                &spec,
                m,
                Values::Normal,
                param,
                true,
                2,
                place,
            );
        }
    }
    // 16 SMs hold 32 blocks of s512x8_o2: a row of 10^6 takes 62.
    let small = SmPartition::new(&rt, 16).expect("a partition of 16 SMs");
    let spec: NormSpec = "norm_layernorm_bf16_bf16_s512x8_o2_g".parse().unwrap();
    let kernel = rt.norm(&spec).unwrap();
    let held = u64::from(small.sm_count()) * u64::from(kernel.blocks_per_sm());
    let (rows, cols) = (4, 1_000_003);
    assert!(
        u64::from(kernel.plan(rows, cols).splits) > held,
        "{held} blocks held"
    );
    let s = rt.stream();
    let n = rows * cols;
    let x = Dev::upload(s, &HostBuffer::from_fn(spec.input, n, |i| (i % 7) as f32));
    let w = Dev::upload(s, &HostBuffer::from_fn(spec.input, cols, |_| 1.0));
    let b = Dev::upload(s, &HostBuffer::from_fn(spec.input, cols, |_| 0.5));
    let mut out = Dev::poisoned(s, spec.output, n);
    let (xi, wi, bi) = (x.input(), w.input(), b.input());
    let mut oo = out.output(n, 0);
    let m = dense(rows, cols);
    let args = NormArgs::norm(
        xi.as_ref(),
        wi.as_ref(),
        Some(bi.as_ref()),
        oo.as_mut(),
        m,
        1e-5,
    );
    let e = kernel
        .launch(small.stream(), args)
        .expect_err("a row of more blocks than the partition holds")
        .to_string();
    assert!(e.contains("must all be resident"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_rows_are_bit_identical_run_to_run() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("split_rows_are_bit_identical_run_to_run");
    for ops in row_ops() {
        let spec = NormSpec::with(ops, DType::BF16, DType::BF16, 1 << 20);
        assert_eq!(spec.layout, NormLayout::Split);
        for (rows, cols) in [(4, 1_000_003), (64, 1 << 20), (300, 40_000)] {
            check_runs(&rt, &mut rng, &spec, dense(rows, cols), 3);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_issue_shapes() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_issue_shapes");
    let shapes = [
        (4096, 4096),
        (32768, 4096),
        (8192, 32768),
        (262_144, 128),
        (4, 1_000_003),
    ];
    for ops in row_ops() {
        // The residual variants at one shape (the issue's fused target).
        let shapes: &[(usize, usize)] = if ops.2 { &shapes[1..2] } else { &shapes };
        for &(rows, cols) in shapes {
            for d in [DType::BF16, DType::F32] {
                let spec = NormSpec::with(ops, d, d, cols as u64);
                let m = dense(rows, cols);
                check(
                    &rt,
                    &mut rng,
                    &spec,
                    m,
                    Values::Normal,
                    param_of(&spec),
                    false,
                    1,
                    Place::default(),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_calls_are_errors_not_launches() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let spec: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
    let k = rt.norm(&spec).unwrap();
    let x = s.clone_htod(&vec![bf16::ONE; 2 * 200]).unwrap();
    let w = s.clone_htod(&vec![bf16::ONE; 200]).unwrap();
    let mut y = s.alloc_zeros::<bf16>(2 * 200).unwrap();
    // 200 columns do not fit a 128-element kernel.
    let m = Matrix {
        rows: 2,
        cols: 200,
        ld: 200,
    };
    let e = k
        .launch(s, NormArgs::norm(&x, &w, None, &mut y, m, 1e-5))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cols = 200") && e.contains("for_cols"), "{e}");
    // The default layout for 200 columns, given an output of the wrong type.
    let k2 = rt.norm(&spec.for_cols(200)).unwrap();
    assert_eq!(k2.spec().name(), "norm_rmsnorm_bf16_bf16_w32x2");
    let mut y32 = s.alloc_zeros::<f32>(2 * 200).unwrap();
    let e = k2
        .launch(s, NormArgs::norm(&x, &w, None, &mut y32, m, 1e-5))
        .unwrap_err()
        .to_string();
    assert!(e.contains("out = f32"), "{e}");
    // And the right one.
    k2.launch(s, NormArgs::norm(&x, &w, None, &mut y, m, 1e-5))
        .unwrap();
    // Empty calls (the runtime crate's rule): no rows, or rows of no elements,
    // launch nothing and leave the output as it was.
    let before = s.clone_dtoh(&y).unwrap();
    for (rows, cols) in [(0, 200), (2, 0)] {
        let m = Matrix {
            rows,
            cols,
            ld: 200,
        };
        let w = w.slice(0..cols);
        k2.launch(s, NormArgs::norm(&x, &w, None, &mut y, m, 1e-5))
            .unwrap();
    }
    assert_eq!(s.clone_dtoh(&y).unwrap(), before);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn blocks_holding_their_columns_take_many_rows_each() {
    // A block or warp kernel that holds its weight (and bias) loads them once,
    // before its first row: more rows than resident blocks (each block takes
    // several; a warp kernel's last block has idle groups), rows that fill the
    // block or group and shorter rows (its packs past their end hold zeros), a
    // stride past the row, statistics, every dtype pair, the exact form with
    // its ragged twin for other lengths, and the 16-bit forms in pairs.
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("blocks_holding_their_columns_take_many_rows_each");
    let mut specs = Vec::new();
    for ops in row_ops().into_iter().filter(|o| !o.0.info().softmax) {
        for (i, o) in [
            (DType::BF16, DType::BF16),
            (DType::F32, DType::F32),
            (DType::BF16, DType::F32),
            (DType::F32, DType::BF16),
        ] {
            for (layout, lanes, packs) in [
                (NormLayout::Block, 128, 8),
                (NormLayout::Block, 256, 4),
                (NormLayout::Block, 256, 8),
                (NormLayout::Block, 512, 4),
                (NormLayout::Warp, 8, 4),
                (NormLayout::Warp, 16, 2),
                (NormLayout::Warp, 32, 1),
            ] {
                for (exact, pairs) in [(false, false), (true, false), (false, true), (true, true)] {
                    let spec = NormSpec {
                        layout,
                        lanes,
                        packs,
                        exact,
                        held: Some(packs),
                        pairs,
                        ..NormSpec::with(ops, i, o, 1)
                    };
                    if spec.validate().is_ok() {
                        specs.push(spec);
                    }
                }
            }
        }
    }
    assert!(specs.len() >= 160, "{}", specs.len());
    prepare(&rt, specs.clone());
    for spec in &specs {
        let k = rt.norm(spec).unwrap();
        let resident = k.resident() as usize;
        let cap = spec.capacity().unwrap() as usize;
        // Shorter rows a whole number of pairs, and one of packs (a paired
        // kernel hands it to its ragged twin, in packs).
        let short = cap / 3 / 8 * 8 + 8;
        for (cols, ld) in [(cap, cap + 8), (short, short + 8), (short + 4, short + 12)] {
            let m = Matrix {
                rows: 2 * resident + 7,
                cols,
                ld,
            };
            let runs = k.spec_for_aligned(m).unwrap();
            // Pairs where this kernel itself runs: its rows on the grid of
            // pairs (and, exact, of its length).
            let itself = cols % 8 == 0 && ld % 8 == 0 && (!spec.exact || cols == cap);
            assert_eq!(runs.paired_packs(), spec.pairs && itself, "{}", runs.name());
            check_with_stats(&rt, &mut rng, spec, m);
        }
    }
}

/// Autotune: the first call of a class times its candidates once and keeps
/// the fastest (in the cache directory too), the kept layout's outputs match
/// the CPU twin, and a second runtime on the same directory takes the kept
/// picks without timing.
#[test]
#[ignore = "needs a CUDA GPU"]
fn autotune_times_a_class_once_and_keeps_its_pick() {
    if gpu().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("redjit-autotune-gpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let open = || {
        Runtime::with_options(
            RuntimeOptions::default()
                .cache_dir(Some(dir.clone()))
                .autotune(Some(redjit::Autotune::Always)),
        )
        .expect("a runtime with autotune")
    };
    let mut rng = common::Rng::fresh("autotune_times_a_class_once_and_keeps_its_pick");
    let cases = [
        ("norm_rmsnorm_bf16_bf16_w32x1", 16, 4096),
        ("norm_layernorm_res_bf16_bf16_w32x1", 300, 8192),
        ("norm_softmax_safe_f32_f32_w32x1", 5, 1000),
        ("norm_rmsnorm_f16_f32_w32x1", 3, 100_003),
    ];
    let rt = open();
    assert_eq!(rt.autotune_mode(), redjit::Autotune::Always);
    let mut kept = Vec::new();
    for (name, rows, cols) in cases {
        let spec: NormSpec = name.parse().unwrap();
        let layout = rt.norm_layout(&spec, rows, cols);
        let class = redjit::autotune::class_of(&spec, rows, cols);
        let pick = rt
            .autotuned()
            .into_iter()
            .find(|p| p.class == class)
            .unwrap_or_else(|| panic!("{class}: no pick kept"));
        assert!(pick.timed_here, "{class}");
        assert!(
            (2..=redjit::autotune::MAX_CANDIDATES).contains(&pick.candidates),
            "{class}: {} candidates",
            pick.candidates
        );
        assert_eq!(pick.pick, layout, "{class}");
        eprintln!(
            "autotune {class}: {} of {} candidates, first use {:.0} ms",
            layout.name(),
            pick.candidates,
            pick.first_use.as_secs_f64() * 1e3
        );
        // The same class again: the kept pick, not timed again.
        assert_eq!(rt.norm_layout(&spec, rows, cols), layout);
        check_with_stats(&rt, &mut rng, &layout, dense(rows, cols));
        kept.push((spec, rows, cols, layout));
    }
    drop(rt);
    let warm = open();
    let listed = warm.autotuned();
    for (spec, rows, cols, layout) in kept {
        let class = redjit::autotune::class_of(&spec, rows, cols);
        let p = listed
            .iter()
            .find(|p| p.class == class)
            .unwrap_or_else(|| panic!("{class}: not read back"));
        assert!(!p.timed_here, "{class}");
        assert_eq!(warm.norm_layout(&spec, rows, cols), layout, "{class}");
    }
    assert_eq!(warm.autotuned().iter().filter(|p| p.timed_here).count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One in-place call beside the same call out of place, from the same random
/// rows: x (and the residual) overwritten must hold the out-of-place output
/// (and residual_out) bit for bit, the poison before them untouched. `shift`
/// moves both buffers off the pack grid (the general twin, from a copy).
fn check_in_place(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec, m: Matrix, shift: usize) {
    let s = rt.stream();
    let what = format!(
        "{} {}x{} ld {} shift {shift}",
        spec.name(),
        m.rows,
        m.cols,
        m.ld
    );
    let n = (m.rows - 1) * m.ld + m.cols;
    let HostCall {
        x: xh,
        res: res_h,
        w: w_h,
        b: b_h,
    } = host_call(rng, spec, m, Values::Normal);
    let w = w_h.as_ref().map(|h| Dev::upload(s, h));
    let b = b_h.as_ref().map(|h| Dev::upload(s, h));
    let kernel = rt.norm(spec).unwrap_or_else(|e| panic!("{what}: {e}"));
    let param = param_of(spec);
    // Out of place, into poisoned buffers at the same shift.
    let x = Dev::upload(s, &xh);
    let res = res_h.as_ref().map(|h| Dev::upload(s, h));
    let mut out = Dev::poisoned(s, spec.output, n);
    let mut res_out = spec.residual.then(|| Dev::poisoned(s, spec.input, n));
    {
        let xi = x.input();
        let ri = res.as_ref().map(|d| d.input());
        let wi = w.as_ref().map(|d| d.input());
        let bi = b.as_ref().map(|d| d.input());
        let mut oo = out.output(n, shift);
        let mut ro = res_out.as_mut().map(|d| d.output(n, shift));
        let args = NormArgs {
            x: xi.as_ref(),
            residual: ri.as_deref(),
            weight: wi.as_deref(),
            bias: bi.as_deref(),
            out: oo.as_mut(),
            residual_out: ro.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
            mean: None,
            rstd: None,
            shape: m,
            param,
            scale: None,
        };
        kernel
            .launch(s, args)
            .unwrap_or_else(|e| panic!("{what}: out of place: {e}"));
    }
    // In place: the same rows after SLACK + shift elements of poison.
    let mut xo = Dev::upload_at(s, &xh, SLACK + shift);
    let mut ro = res_h.as_ref().map(|h| Dev::upload_at(s, h, SLACK + shift));
    {
        let mut xv = xo.output(n, shift);
        let mut rv = ro.as_mut().map(|d| d.output(n, shift));
        let wi = w.as_ref().map(|d| d.input());
        let bi = b.as_ref().map(|d| d.input());
        let args = NormInPlace {
            x: xv.as_mut(),
            residual: rv.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
            weight: wi.as_deref(),
            bias: bi.as_deref(),
            mean: None,
            rstd: None,
            shape: m,
            param,
        };
        kernel
            .launch_in_place(s, args)
            .unwrap_or_else(|e| panic!("{what}: in place: {e}"));
    }
    let at = SLACK + shift;
    let pairs = [
        (Some(&out), Some(&xo), "out"),
        (res_out.as_ref(), ro.as_ref(), "residual"),
    ];
    for (apart, over, name) in pairs {
        let (Some(apart), Some(over)) = (apart, over) else {
            continue;
        };
        let (want, got) = (apart.bits(s), over.bits(s));
        let dtype = if name == "out" {
            spec.output
        } else {
            spec.input
        };
        assert!(
            got[..at].iter().all(|&g| g == poison(dtype)),
            "{what}: {name} in place wrote before its rows"
        );
        let differs = (0..n)
            .filter(|&i| i % m.ld < m.cols)
            .find(|&i| want[at + i] != got[at + i]);
        assert!(
            differs.is_none(),
            "{what}: {name} in place differs from out of place at {:?}: {:#x} against {:#x}",
            differs,
            differs.map_or(0, |i| got[at + i]),
            differs.map_or(0, |i| want[at + i]),
        );
        // The input was overwritten: the result is not the rows as they were.
        let input_bits = match name {
            "out" => Dev::upload(s, &xh).bits(s),
            _ => Dev::upload(s, res_h.as_ref().unwrap()).bits(s),
        };
        assert!(
            (0..n).any(|i| i % m.ld < m.cols && got[at + i] != input_bits[i]),
            "{what}: {name} in place left the rows as they were"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn in_place_calls_match_out_of_place_bit_for_bit() {
    // Every row op, f32 / bf16 / f16 in and out, with and without the
    // residual; the default layout of each row length (a lane group, a block,
    // a block of 16 packs, a split row whole and off the grid), a loop row,
    // strided rows, and every buffer off the pack grid (the general twin,
    // which runs from a copy).
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("in_place_calls_match_out_of_place_bit_for_bit");
    const SHAPES: [(usize, usize, usize); 7] = [
        (37, 100, 100),
        (16, 4096, 4096),
        (5, 4097, 4099),
        (3, 20000, 20000),
        (2, 20001, 20001),
        (2, 1 << 20, 1 << 20),
        (513, 8, 12),
    ];
    let types = [DType::F32, DType::BF16, DType::F16];
    prepare(
        &rt,
        row_ops().into_iter().flat_map(|ops| {
            types.into_iter().flat_map(move |t| {
                SHAPES
                    .iter()
                    .map(move |&(_, c, _)| NormSpec::with(ops, t, t, c as u64))
            })
        }),
    );
    for ops in row_ops() {
        for t in types {
            for (rows, cols, ld) in SHAPES {
                let spec = NormSpec::with(ops, t, t, cols as u64);
                let m = Matrix { rows, cols, ld };
                check_in_place(&rt, &mut rng, &spec, m, 0);
                if cols < (1 << 20) {
                    check_in_place(&rt, &mut rng, &spec, m, 1);
                }
            }
        }
    }
    // Loop rows (two passes over a row's chunks), on and off the grid.
    for name in [
        "norm_rmsnorm_res_bf16_bf16_l512x4",
        "norm_layernorm_f32_f32_l256x4",
        "norm_softmax_online_f16_f16_l256x4",
    ] {
        let spec: NormSpec = name.parse().unwrap();
        for shift in [0, 1] {
            check_in_place(&rt, &mut rng, &spec, dense(7, 40000), shift);
        }
    }
    // In place needs one type in and out.
    let mixed: NormSpec = "norm_rmsnorm_bf16_f32_b256x4".parse().unwrap();
    let k = rt.norm(&mixed).unwrap();
    let s = rt.stream();
    let mut x = s.clone_htod(&vec![bf16::ONE; 2 * 1024]).unwrap();
    let w = s.clone_htod(&vec![bf16::ONE; 1024]).unwrap();
    let e = k
        .launch_in_place(
            s,
            NormInPlace::norm(&mut x, None, &w, None, dense(2, 1024), 1e-5),
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("x = in place") && e.contains("reads bf16 and writes f32"),
        "{e}"
    );
}

/// One FP8-output call against the twin: random rows (the residual too), the
/// e4m3 output poisoned with all-ones bytes around its rows, per-row scales
/// poisoned; every code within one of the twin's rounding, every per-row scale
/// within its tolerance, residual_out exact, nothing written outside.
fn check_fp8(rt: &Runtime, rng: &mut common::Rng, spec: &NormSpec, m: Matrix, given: f32) {
    let s = rt.stream();
    let what = format!("{} {}x{} ld {}", spec.name(), m.rows, m.cols, m.ld);
    let n = (m.rows - 1) * m.ld + m.cols;
    let HostCall {
        x: xh,
        res: res_h,
        w: w_h,
        b: b_h,
    } = host_call(rng, spec, m, Values::Normal);
    let x = Dev::upload(s, &xh);
    let res = res_h.as_ref().map(|h| Dev::upload(s, h));
    let w = w_h.as_ref().map(|h| Dev::upload(s, h));
    let b = b_h.as_ref().map(|h| Dev::upload(s, h));
    let poison8 = F8E4M3::from_bits(0xff);
    let mut out = s.clone_htod(&vec![poison8; n + 2 * SLACK]).unwrap();
    let mut res_out = spec.residual.then(|| Dev::poisoned(s, spec.input, n));
    let per_row = spec.fp8 == Some(Fp8Scale::PerRow);
    let mut scales = s.clone_htod(&vec![POISON_F32; m.rows]).unwrap();
    let given_buf = s.clone_htod(&[given]).unwrap();
    let kernel = rt.norm(spec).unwrap_or_else(|e| panic!("{what}: {e}"));
    {
        let xi = x.input();
        let ri = res.as_ref().map(|d| d.input());
        let wi = w.as_ref().map(|d| d.input());
        let bi = b.as_ref().map(|d| d.input());
        let mut oo = out.slice_mut(SLACK..SLACK + n);
        let mut ro = res_out.as_mut().map(|d| d.output(n, 0));
        let scale = if per_row {
            Fp8Scales::PerRow(&mut scales)
        } else {
            Fp8Scales::Given(&given_buf)
        };
        let args = NormArgs {
            x: xi.as_ref(),
            residual: ri.as_deref(),
            weight: wi.as_deref(),
            bias: bi.as_deref(),
            out: &mut oo,
            residual_out: ro.as_deref_mut().map(|o| o as &mut dyn KernelOutput),
            mean: None,
            rstd: None,
            shape: m,
            param: 1e-5,
            scale: Some(scale),
        };
        kernel
            .launch(s, args)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let got: Vec<u8> = s
        .clone_dtoh(&out)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let got_scales = s.clone_dtoh(&scales).unwrap();
    let mut inputs = NormInputs::new(&xh, m.rows, m.cols, m.ld, 1e-5);
    inputs.residual = res_h.as_ref();
    inputs.weight = w_h.as_ref();
    inputs.bias = b_h.as_ref();
    inputs.scale = Some(given);
    let want = expect_rows(spec, &inputs);
    // Read back once, not per row (per row, a check of 2048 rows moved the
    // whole buffer 2048 times).
    let residual_got = res_out.as_ref().map(|ro| ro.bits(s));
    let mut bad = Vec::new();
    for (i, &g) in got.iter().enumerate() {
        let inside = i >= SLACK && {
            let e = i - SLACK;
            e < n && e % m.ld < m.cols
        };
        if !inside && g != 0xff && bad.len() < 8 {
            bad.push(format!("wrote outside its elements at {i}: {g:#x}"));
        }
    }
    for (r, row) in want.iter().enumerate() {
        for (c, e) in row.out.iter().enumerate() {
            let g = got[SLACK + r * m.ld + c];
            if let Err(msg) = e.check(DType::E4M3, u32::from(g))
                && bad.len() < 8
            {
                bad.push(format!("out[{r}][{c}]: {msg}"));
            }
        }
        match (row.scale, per_row) {
            (Some(e), true) => {
                if let Err(msg) = e.check(DType::F32, got_scales[r].to_bits()) {
                    bad.push(format!("scale[{r}]: {msg}"));
                }
            }
            (None, false) => {
                assert!(
                    got_scales[r].to_bits() == POISON_F32.to_bits(),
                    "{what}: a given scale's call wrote scales"
                );
            }
            other => panic!("{what}: the twin's scale {other:?}"),
        }
        if let (Some(bits), Some(all)) = (&row.residual_out, &residual_got) {
            for (c, &wb) in bits.iter().enumerate() {
                let g = all[SLACK + r * m.ld + c];
                if g != wb && bad.len() < 8 {
                    bad.push(format!("residual_out[{r}][{c}]: {g:#x}, want {wb:#x}"));
                }
            }
        }
    }
    bad.truncate(8);
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// Every FP8-output kernel of one norm op against the twin: f32 / bf16 / f16
/// in, e4m3 out with per-row and given scales, at the ladder's layout for each
/// row length (lane groups, blocks of 256 and 512), strided rows among them.
/// One test an op, so that their NVRTC compiles run as parallel processes.
fn check_fp8_op(test: &str, op: NormOp, residual: bool) {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh(test);
    const SHAPES: [(usize, usize, usize); 8] = [
        (1, 4096, 4096),
        (16, 4096, 4096),
        (128, 8192, 8192),
        (5, 100, 104),
        (37, 1000, 1000),
        (513, 64, 64),
        (3, 12288, 12288),
        (2, 16384, 16384),
    ];
    let ops = row_ops()
        .into_iter()
        .find(|o| o.0 == op && o.2 == residual)
        .expect("a norm op");
    let spec = |t, q, cols: usize| {
        NormSpec::with(ops, t, t, 1)
            .to_e4m3(q)
            .for_cols(cols as u64)
    };
    let types = [DType::F32, DType::BF16, DType::F16];
    let scales = [Fp8Scale::PerRow, Fp8Scale::Given];
    let mut all: Vec<NormSpec> = Vec::new();
    for t in types {
        for q in scales {
            for (_, c, _) in SHAPES {
                let s = spec(t, q, c);
                if !all.contains(&s) {
                    all.push(s);
                }
            }
        }
    }
    rt.prepare(&all).expect("compiling the FP8 kernels");
    for t in types {
        for q in scales {
            for (rows, cols, ld) in SHAPES {
                check_fp8(
                    &rt,
                    &mut rng,
                    &spec(t, q, cols),
                    Matrix { rows, cols, ld },
                    0.02,
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_rms_norm_matches_the_twin() {
    check_fp8_op("fp8_rms_norm_matches_the_twin", NormOp::RmsNorm, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_rms_norm_with_residual_matches_the_twin() {
    check_fp8_op(
        "fp8_rms_norm_with_residual_matches_the_twin",
        NormOp::RmsNorm,
        true,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_layer_norm_matches_the_twin() {
    check_fp8_op("fp8_layer_norm_matches_the_twin", NormOp::LayerNorm, false);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_layer_norm_with_residual_matches_the_twin() {
    check_fp8_op(
        "fp8_layer_norm_with_residual_matches_the_twin",
        NormOp::LayerNorm,
        true,
    );
}

/// The error of an RMS norm call with an FP8 output that must fail.
fn fp8_call_error<'a>(
    k: &redjit::NormKernel<'_>,
    s: &Arc<CudaStream>,
    x: &'a CudaSlice<bf16>,
    w: &'a dyn KernelInput,
    y: &'a mut CudaSlice<F8E4M3>,
    m: Matrix,
    scale: Option<Fp8Scales<'a>>,
) -> String {
    let mut a = NormArgs::norm(x, w, None, y, m, 1e-5);
    a.scale = scale;
    k.launch(s, a).map(|_| ()).unwrap_err().to_string()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fp8_bad_calls_are_errors_before_any_launch() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let spec: NormSpec = "norm_rmsnorm_bf16_e4m3_b256x4_qd".parse().unwrap();
    let k = rt.norm(&spec).unwrap();
    let x = s.clone_htod(&vec![bf16::ONE; 4 * 4097]).unwrap();
    let w_all = s.clone_htod(&vec![bf16::ONE; 4097]).unwrap();
    let (w, w_odd) = (w_all.slice(0..4096), w_all.slice(0..4097));
    let mut y = s
        .clone_htod(&vec![F8E4M3::from_bits(0xff); 4 * 4097])
        .unwrap();
    let mut scales = s.clone_htod(&[POISON_F32; 4]).unwrap();
    // No scale buffer, or too short a one.
    let e = fp8_call_error(&k, s, &x, &w, &mut y, dense(4, 4096), None);
    assert!(e.contains("scale = none"), "{e}");
    let mut short = s.clone_htod(&[0f32; 3]).unwrap();
    let e = fp8_call_error(
        &k,
        s,
        &x,
        &w,
        &mut y,
        dense(4, 4096),
        Some(Fp8Scales::PerRow(&mut short)),
    );
    assert!(
        e.contains("PerRow: 3 x f32") && e.contains("rows (4)"),
        "{e}"
    );
    // Rows off the pack grid: an FP8 output takes whole packs.
    let e = fp8_call_error(
        &k,
        s,
        &x,
        &w_odd,
        &mut y,
        dense(4, 4097),
        Some(Fp8Scales::PerRow(&mut scales)),
    );
    assert!(e.contains("takes whole packs"), "{e}");
    // Nothing was written.
    assert!(
        s.clone_dtoh(&y)
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == 0xff)
    );
    assert!(
        s.clone_dtoh(&scales)
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == POISON_F32.to_bits())
    );
}

/// The device table's picks at the LLM shapes, what a caller of `for_shape`
/// gets (redjit-candle, the bench): each row op, f32 and bf16, in and out,
/// against the CPU twin. The FP8-output picks are the next test (together the
/// two ran past a shard's time limit of `scripts/gpu-run.sh`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_tables_llm_picks_match_the_twin() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_device_tables_llm_picks_match_the_twin");
    let cases = table_picks(&rt, &[1, 16, 128, 512], |ops, d| {
        Some(NormSpec::with(ops, d, d, 1))
    });
    for (spec, m) in &cases {
        let param = param_of(spec);
        check(
            &rt,
            &mut rng,
            spec,
            *m,
            Values::Normal,
            param,
            false,
            1,
            Place::default(),
        );
    }
}

/// The device table's picks for an FP8 output (each row's own scale) at the
/// LLM shapes and at 2048 rows, where their table's prefetching blocks take
/// many rows each, against the CPU twin.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_device_tables_fp8_picks_match_the_twin() {
    let Some(rt) = gpu() else { return };
    let mut rng = common::Rng::fresh("the_device_tables_fp8_picks_match_the_twin");
    let cases = table_picks(&rt, &[1, 16, 128, 512, 2048], |ops, d| {
        ops.1
            .is_none()
            .then(|| NormSpec::with(ops, d, d, 1).to_e4m3(Fp8Scale::PerRow))
    });
    for (spec, m) in &cases {
        check_fp8(&rt, &mut rng, spec, *m, 0.02);
    }
}

/// `spec_of`'s spec of each row op, f32 and bf16, laid out by the device's
/// table at each of `rows` x 4096 and 8192, with its dense matrix, all
/// compiled.
fn table_picks(
    rt: &Runtime,
    rows: &[usize],
    spec_of: impl Fn((NormOp, Option<SoftmaxAlgo>, bool), DType) -> Option<NormSpec>,
) -> Vec<(NormSpec, Matrix)> {
    let table = &rt.tuning().tuning;
    let mut cases = Vec::new();
    for ops in row_ops() {
        for d in [DType::BF16, DType::F32] {
            let Some(base) = spec_of(ops, d) else {
                continue;
            };
            for cols in [4096, 8192] {
                for &r in rows {
                    let spec = base.clone().for_shape(Some(r as u64), cols as u64, table);
                    cases.push((spec, dense(r, cols)));
                }
            }
        }
    }
    rt.prepare(&cases.iter().map(|c| c.0.clone()).collect::<Vec<_>>())
        .expect("compiling the table's picks");
    cases
}
