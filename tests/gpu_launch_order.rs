//! The norm and reduce_copy launchers take each buffer's address once a call
//! (each take of a tracked slice is an event wait and record on the host, a
//! small call's largest cost past the launch), and cudarc's event tracking
//! still orders their calls with work on other streams: out of place, in
//! place, and on the general and misaligned twins.
//! Run with `--ignored` on a GPU machine (scripts/gpu-run.sh tests).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::order::{Counted, Gate};
use cudarc::driver::{CudaSlice, CudaStream};
use redjit::{
    DType, KernelInput, KernelOutput, Matrix, NormArgs, NormInPlace, NormKernel, NormOp, NormSpec,
    ReduceCopySpec, Role, Runtime, Src,
};

/// How long the gated stream is held after the other streams' work is issued:
/// work that did not wait for the call runs first.
const HELD: Duration = Duration::from_millis(50);

fn gpu() -> Option<Runtime> {
    let rt = common::gpu_or_skip()?;
    let ctx = rt.stream().context();
    assert!(
        ctx.is_event_tracking() && ctx.is_in_multi_stream_mode(),
        "the runtime's own stream puts cudarc in its tracking mode"
    );
    Some(rt)
}

fn random(rng: &mut common::Rng, n: usize) -> Vec<f32> {
    rng.values(n)
}

fn bits(s: &Arc<CudaStream>, b: &CudaSlice<f32>) -> Vec<u32> {
    s.clone_dtoh(b)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// A layer norm with the residual and both statistics: every slot of the
/// norm kernel's signature but the FP8 scale holds a buffer.
fn layer_norm(rt: &Runtime, cols: usize) -> NormKernel<'_> {
    let spec = NormSpec::with(
        (NormOp::LayerNorm, None, true),
        DType::F32,
        DType::F32,
        cols as u64,
    );
    rt.norm(&spec).unwrap()
}

/// One call's host inputs: x, residual, weight, bias.
struct Rows {
    x: Vec<f32>,
    res: Vec<f32>,
    w: Vec<f32>,
    b: Vec<f32>,
    m: Matrix,
}

impl Rows {
    fn new(rng: &mut common::Rng, m: Matrix) -> Rows {
        let n = (m.rows - 1) * m.ld + m.cols;
        Rows {
            x: random(rng, n),
            res: random(rng, n),
            w: random(rng, m.cols),
            b: random(rng, m.cols),
            m,
        }
    }

    fn n(&self) -> usize {
        self.x.len()
    }
}

/// The outputs of one norm call, read back: out, residual_out, mean, rstd.
type Outputs = [Vec<u32>; 4];

/// The layer norm with every buffer: x, residual, weight and bias read; out,
/// residual_out, mean and rstd written.
fn launch_all(
    k: &NormKernel<'_>,
    s: &Arc<CudaStream>,
    [x, res, w, b]: [&dyn KernelInput; 4],
    [out, res_out, mean, rstd]: [&mut dyn KernelOutput; 4],
    m: Matrix,
) {
    k.launch(
        s,
        NormArgs {
            x,
            residual: Some(res),
            weight: Some(w),
            bias: Some(b),
            out,
            residual_out: Some(res_out),
            mean: Some(mean),
            rstd: Some(rstd),
            shape: m,
            param: 1e-5,
            scale: None,
        },
    )
    .unwrap();
}

/// The call on plain slices, into poisoned outputs.
fn norm_plain(rt: &Runtime, k: &NormKernel<'_>, r: &Rows) -> Outputs {
    let s = rt.stream();
    let up = |v: &[f32]| s.clone_htod(v).unwrap();
    let poison = |n: usize| s.clone_htod(&vec![f32::NAN; n]).unwrap();
    let (x, res, w, b) = (up(&r.x), up(&r.res), up(&r.w), up(&r.b));
    let (mut out, mut res_out) = (poison(r.n()), poison(r.n()));
    let (mut mean, mut rstd) = (poison(r.m.rows), poison(r.m.rows));
    launch_all(
        k,
        s,
        [&x, &res, &w, &b],
        [&mut out, &mut res_out, &mut mean, &mut rstd],
        r.m,
    );
    [
        bits(s, &out),
        bits(s, &res_out),
        bits(s, &mean),
        bits(s, &rstd),
    ]
}

/// Out of place and in place, on the whole-pack kernel (rows of 1024) and on
/// the general twin (rows of 1001, ld 1003; in place it runs from a copy):
/// every buffer's address is taken once, and the results are the bits of the
/// call on plain slices (which `gpu_norm` checks against the CPU twin).
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_norm_buffer_is_taken_once_a_call() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let mut rng = common::Rng::fresh("each_norm_buffer_is_taken_once_a_call");
    for (rows, cols, ld) in [(7, 1024, 1024), (5, 1001, 1003)] {
        let k = layer_norm(&rt, cols);
        let r = Rows::new(&mut rng, Matrix { rows, cols, ld });
        let want = norm_plain(&rt, &k, &r);
        let what = format!("{} {rows}x{cols} ld {ld}", k.name());
        let counted = |v: &[f32]| Counted::new(s.clone_htod(v).unwrap());
        let poisoned = |n: usize| counted(&vec![f32::NAN; n]);
        let (w, b) = (counted(&r.w), counted(&r.b));

        let (x, res) = (counted(&r.x), counted(&r.res));
        let (mut out, mut res_out) = (poisoned(r.n()), poisoned(r.n()));
        let (mut mean, mut rstd) = (poisoned(rows), poisoned(rows));
        launch_all(
            &k,
            s,
            [&x, &res, &w, &b],
            [&mut out, &mut res_out, &mut mean, &mut rstd],
            r.m,
        );
        for (name, b) in [
            ("x", &x),
            ("residual", &res),
            ("weight", &w),
            ("bias", &b),
            ("out", &out),
            ("residual_out", &res_out),
            ("mean", &mean),
            ("rstd", &rstd),
        ] {
            assert_eq!(b.take(), 1, "{what}: takes of {name}'s address");
        }
        let got = [&out, &res_out, &mean, &rstd].map(|b| bits(s, &b.buf));
        assert_eq!(got, want, "{what}: out of place");

        // In place: x becomes out, the residual residual_out.
        let (mut x, mut res) = (counted(&r.x), counted(&r.res));
        let (mut mean, mut rstd) = (poisoned(rows), poisoned(rows));
        k.launch_in_place(
            s,
            NormInPlace {
                x: &mut x,
                residual: Some(&mut res),
                weight: Some(&w),
                bias: Some(&b),
                mean: Some(&mut mean),
                rstd: Some(&mut rstd),
                shape: r.m,
                param: 1e-5,
            },
        )
        .unwrap();
        for (name, b) in [
            ("x", &x),
            ("residual", &res),
            ("weight", &w),
            ("bias", &b),
            ("mean", &mean),
            ("rstd", &rstd),
        ] {
            assert_eq!(b.take(), 1, "{what}: in place, takes of {name}'s address");
        }
        let got = [&x, &res, &mean, &rstd].map(|b| bits(s, &b.buf));
        // In place, the gap of each row past cols keeps x's and the
        // residual's own values, where out of place it keeps the poison.
        let row_elems = |v: &[u32], host: &[f32]| -> Vec<u32> {
            (0..v.len())
                .map(|i| {
                    if i % ld < cols {
                        v[i]
                    } else {
                        host[i].to_bits()
                    }
                })
                .collect()
        };
        let want_in_place = [
            row_elems(&want[0], &r.x),
            row_elems(&want[1], &r.res),
            want[2].clone(),
            want[3].clone(),
        ];
        assert_eq!(got, want_in_place, "{what}: in place");
    }
}

/// cudarc's event tracking orders a norm call with other streams: an
/// overwrite of x there (issued after the call) waits for the call's read,
/// and a copy of the output there waits for the call's write. The call's
/// stream is held at a [`Gate`] while the other streams' work is issued and
/// for `HELD` more, so work that did not wait runs before the call. Whole
/// packs and the general twin; in place (from a copy on the twin) too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn norm_calls_are_ordered_with_other_streams() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let other = s.context().new_stream().unwrap();
    let gate = Gate::new(s);
    let mut rng = common::Rng::fresh("norm_calls_are_ordered_with_other_streams");
    for (rows, cols, ld) in [(64, 4096, 4096), (61, 4001, 4003)] {
        let k = layer_norm(&rt, cols);
        let r = Rows::new(&mut rng, Matrix { rows, cols, ld });
        let what = format!("{} {rows}x{cols} ld {ld}", k.name());
        // Ungated first: the call's kernels are loaded before any gate.
        let want = norm_plain(&rt, &k, &r);
        let up = |v: &[f32]| s.clone_htod(v).unwrap();
        let poison = |n: usize| s.clone_htod(&vec![f32::NAN; n]).unwrap();
        let (w, b) = (up(&r.w), up(&r.b));
        let poison_rows = poison(r.n());
        for in_place in [false, true] {
            let (mut x, mut res) = (up(&r.x), up(&r.res));
            let (mut out, mut res_out) = (poison(r.n()), poison(r.n()));
            let mut copy = poison(r.n());
            s.synchronize().unwrap();
            let held = gate.close(s);
            if in_place {
                k.launch_in_place(
                    s,
                    NormInPlace::norm(&mut x, Some(&mut res), &w, Some(&b), r.m, 1e-5),
                )
                .unwrap();
                // Read after write: the other stream copies the result.
                other.memcpy_dtod(&x, &mut copy).unwrap();
            } else {
                k.launch(
                    s,
                    NormArgs {
                        residual: Some(&res),
                        residual_out: Some(&mut res_out),
                        ..NormArgs::norm(&x, &w, Some(&b), &mut out, r.m, 1e-5)
                    },
                )
                .unwrap();
                // Write after read: the other stream overwrites x; read
                // after write: it copies the output.
                other.memcpy_dtod(&poison_rows, &mut x).unwrap();
                other.memcpy_dtod(&out, &mut copy).unwrap();
            }
            std::thread::sleep(HELD);
            held.open();
            other.synchronize().unwrap();
            s.synchronize().unwrap();
            let got = bits(s, &copy);
            let differs = (0..r.n()).find(|&i| i % ld < cols && got[i] != want[0][i]);
            assert!(
                differs.is_none(),
                "{what} in place {in_place}: element {differs:?} of the copy is {:#x}, the call's {:#x}",
                differs.map_or(0, |i| got[i]),
                differs.map_or(0, |i| want[0][i]),
            );
        }
    }
}

/// f32 + f32 -> f32: every buffer a `Counted`, and an exact sum.
fn sum_spec() -> ReduceCopySpec {
    ReduceCopySpec {
        srcs: vec![Src::from(Role::Accum), Src::from(Role::Accum)],
        dsts: vec![Role::Accum],
        ..ReduceCopySpec::default()
    }
}

/// reduce_copy takes each buffer's address once a call, aligned and on a
/// misaligned twin (every buffer one element off its pack), and sums exactly.
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_reduce_copy_buffer_is_taken_once_a_call() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let k = rt.reduce_copy(&sum_spec()).unwrap();
    let mut rng = common::Rng::fresh("each_reduce_copy_buffer_is_taken_once_a_call");
    for (n, off) in [(100_003, 0), (100_003, 1)] {
        let (a, b) = (random(&mut rng, n + off), random(&mut rng, n + off));
        let counted = |v: &[f32]| Counted::new(s.clone_htod(v).unwrap());
        let (da, db) = (counted(&a), counted(&b));
        let mut out = counted(&vec![f32::NAN; n + off]);
        {
            let (va, vb) = (da.buf.slice(off..), db.buf.slice(off..));
            if off == 0 {
                k.launch(s, &[&da, &db], &mut [&mut out]).unwrap();
            } else {
                // Views of the counted buffers are not counted: count the
                // aligned call only, check the misaligned call's sums.
                let mut vo = out.buf.slice_mut(off..);
                k.launch(s, &[&va, &vb], &mut [&mut vo]).unwrap();
            }
        }
        if off == 0 {
            for (name, c) in [("a", &da), ("b", &db), ("out", &out)] {
                assert_eq!(c.take(), 1, "n {n}: takes of {name}'s address");
            }
        }
        let got = s.clone_dtoh(&out.buf).unwrap();
        for i in off..n + off {
            let want = a[i] + b[i];
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "n {n} off {off}: element {i} is {} (want {want})",
                got[i]
            );
        }
    }
}

/// cudarc's event tracking orders a reduce_copy call with other streams, as
/// for the norm: a source overwritten there waits for the call's read, and a
/// copy of the destination there waits for the call's write.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reduce_copy_calls_are_ordered_with_other_streams() {
    let Some(rt) = gpu() else { return };
    let s = rt.stream();
    let other = s.context().new_stream().unwrap();
    let gate = Gate::new(s);
    let k = rt.reduce_copy(&sum_spec()).unwrap();
    let mut rng = common::Rng::fresh("reduce_copy_calls_are_ordered_with_other_streams");
    let n = 1 << 22;
    let (a, b) = (random(&mut rng, n), random(&mut rng, n));
    let up = |v: &[f32]| s.clone_htod(v).unwrap();
    let poison = up(&vec![f32::NAN; n]);
    // Ungated first: the kernel is loaded before the gate.
    let (mut da, db, mut out) = (up(&a), up(&b), up(&vec![f32::NAN; n]));
    k.launch(s, &[&da, &db], &mut [&mut out]).unwrap();
    let mut copy = up(&vec![f32::NAN; n]);
    s.synchronize().unwrap();
    let held = gate.close(s);
    k.launch(s, &[&da, &db], &mut [&mut out]).unwrap();
    other.memcpy_dtod(&poison, &mut da).unwrap();
    other.memcpy_dtod(&out, &mut copy).unwrap();
    std::thread::sleep(HELD);
    held.open();
    other.synchronize().unwrap();
    let got = s.clone_dtoh(&copy).unwrap();
    let bad = (0..n).find(|&i| got[i].to_bits() != (a[i] + b[i]).to_bits());
    assert!(
        bad.is_none(),
        "element {bad:?} of the copy is {:?}, want {:?}",
        bad.map(|i| got[i]),
        bad.map(|i| a[i] + b[i])
    );
}
