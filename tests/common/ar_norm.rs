//! The fused all-reduce + residual + RMS norm's test steps, shared by the
//! one-process placements (`gpu_all_reduce_norm.rs`) and the one process a
//! rank placement (`gpu_all_reduce_ipc.rs`): one call on fresh, poisoned
//! buffers, and its check against the CPU twin.

use cudarc::driver::{CudaSlice, DeviceRepr};
use redjit::all_reduce::{AddRmsNorm, ArFp8Scales, Communicator};
use redjit::codegen::spec::norm::Fp8Scale;
use redjit::reference::HostBuffer;
use redjit::reference_norm::{NormInputs, RowWant, expect_ar_add_rms_norm};
use redjit::{AllReduceSpec, DType, F8E4M3, KernelInput, KernelOutput, KernelSpec};

use super::ar::{Elem, rank_stream};

/// Guard elements past every output, poisoned and checked untouched.
pub const GUARD: usize = 16;

/// One rank's host inputs for a call.
pub struct RankInputs<T> {
    pub x: Vec<T>,
    pub residual: Vec<T>,
}

pub fn host<T: Elem>(v: &[T]) -> HostBuffer {
    HostBuffer::from_fn(T::DT, v.len(), |i| v[i].to_f64() as f32)
}

/// What one call left on the device, per rank `c` drives (local order): the
/// residual, y's bits (the guard included) and the scales.
pub struct Got {
    pub residual: Vec<Vec<u32>>,
    pub y: Vec<Vec<u32>>,
    pub scales: Vec<Vec<f32>>,
}

/// One fused call's spec and host inputs: every rank's rows, the weight, the
/// shape and the given FP8 scale (used where the spec's output takes one).
pub struct Case<'a, T> {
    pub spec: &'a AllReduceSpec,
    pub inputs: &'a [RankInputs<T>],
    pub weight: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub given: f32,
}

impl<'a, T> Case<'a, T> {
    pub fn new(
        spec: &'a AllReduceSpec,
        inputs: &'a [RankInputs<T>],
        weight: &'a [T],
        (rows, cols): (usize, usize),
        given: f32,
    ) -> Self {
        Case {
            spec,
            inputs,
            weight,
            rows,
            cols,
            given,
        }
    }
}

/// Runs one fused call on fresh device buffers of the ranks `c` drives, each
/// rank r with `inputs[r]` (`inputs` holds every rank's): y and the scales
/// poisoned, `GUARD` poisoned elements past y.
pub fn run<T: Elem>(c: &Communicator, case: &Case<'_, T>) -> Got {
    let Case {
        spec,
        inputs,
        weight,
        rows,
        cols,
        given,
    } = *case;
    let fp8 = spec.norm.and_then(|n| n.fp8);
    let local = c.local_ranks();
    let w = local.len();
    let n = rows * cols;
    let s = |li: usize| rank_stream(c, li);
    let mine = |li: usize| &inputs[local[li] as usize];
    let xs: Vec<CudaSlice<T>> = (0..w)
        .map(|r| s(r).clone_htod(&mine(r).x).unwrap())
        .collect();
    let mut res: Vec<CudaSlice<T>> = (0..w)
        .map(|r| s(r).clone_htod(&mine(r).residual).unwrap())
        .collect();
    let ws: Vec<CudaSlice<T>> = (0..w).map(|r| s(r).clone_htod(weight).unwrap()).collect();
    let poison = T::from_f64(f64::NAN);
    let mut ys16: Vec<CudaSlice<T>> = Vec::new();
    let mut ys8: Vec<CudaSlice<F8E4M3>> = Vec::new();
    for r in 0..w {
        match fp8 {
            None => ys16.push(s(r).clone_htod(&vec![poison; n + GUARD]).unwrap()),
            Some(_) => ys8.push(
                s(r).clone_htod(&vec![F8E4M3::from_bits(0x7f); n + GUARD])
                    .unwrap(),
            ),
        }
    }
    let mut per_row: Vec<CudaSlice<f32>> = (0..w)
        .map(|r| s(r).clone_htod(&vec![f32::NAN; rows.max(1)]).unwrap())
        .collect();
    let given_bufs: Vec<CudaSlice<f32>> =
        (0..w).map(|r| s(r).clone_htod(&[given]).unwrap()).collect();
    {
        let x: Vec<&dyn KernelInput> = xs.iter().map(|b| b as &dyn KernelInput).collect();
        let mut residual: Vec<&mut dyn KernelOutput> =
            res.iter_mut().map(|b| b as &mut dyn KernelOutput).collect();
        let weights: Vec<&dyn KernelInput> = ws.iter().map(|b| b as &dyn KernelInput).collect();
        let mut y16: Vec<cudarc::driver::CudaViewMut<'_, T>> =
            ys16.iter_mut().map(|b| b.slice_mut(0..n)).collect();
        let mut y8: Vec<cudarc::driver::CudaViewMut<'_, F8E4M3>> =
            ys8.iter_mut().map(|b| b.slice_mut(0..n)).collect();
        let mut out: Vec<&mut dyn KernelOutput> = match fp8 {
            None => y16.iter_mut().map(|b| b as &mut dyn KernelOutput).collect(),
            Some(_) => y8.iter_mut().map(|b| b as &mut dyn KernelOutput).collect(),
        };
        let mut rows_out: Vec<&mut dyn KernelOutput> = per_row
            .iter_mut()
            .map(|b| b as &mut dyn KernelOutput)
            .collect();
        let given_in: Vec<&dyn KernelInput> =
            given_bufs.iter().map(|b| b as &dyn KernelInput).collect();
        let scale = match fp8 {
            None => None,
            Some(Fp8Scale::PerRow) => Some(ArFp8Scales::PerRow(&mut rows_out)),
            Some(Fp8Scale::Given) => Some(ArFp8Scales::Given(&given_in)),
        };
        c.all_reduce_add_rms_norm(AddRmsNorm {
            x: &x,
            residual: &mut residual,
            weight: &weights,
            out: &mut out,
            scale,
            cols,
            eps: 1e-5,
            layout: spec.norm,
            algo: Some(spec.algo),
            skip_rank: None,
        })
        .unwrap_or_else(|e| panic!("{} {rows}x{cols}: {e}", spec.name()));
    }
    c.synchronize().unwrap();
    Got {
        residual: bits_of(c, &res, |v| v.bits()),
        y: match fp8 {
            None => bits_of(c, &ys16, |v| v.bits()),
            Some(_) => bits_of(c, &ys8, |v| u32::from(v.to_bits())),
        },
        scales: (0..w)
            .map(|r| s(r).clone_dtoh(&per_row[r]).unwrap())
            .collect(),
    }
}

/// Each local rank's buffer (in local order) read back, as `bits` gives its
/// elements.
pub fn bits_of<T: DeviceRepr>(
    c: &Communicator,
    bufs: &[CudaSlice<T>],
    bits: impl Fn(&T) -> u32,
) -> Vec<Vec<u32>> {
    bufs.iter()
        .enumerate()
        .map(|(r, b)| {
            rank_stream(c, r)
                .clone_dtoh(b)
                .unwrap()
                .iter()
                .map(&bits)
                .collect()
        })
        .collect()
}

/// Checks `got` against the twin for rank 0's residual (every rank passed
/// the same; `inputs` holds every rank's), and every rank `got` holds
/// against its first bit for bit.
pub fn check<T: Elem>(case: &Case<'_, T>, got: &Got) {
    let Case {
        spec,
        inputs,
        weight,
        rows,
        cols,
        given,
    } = *case;
    let what = format!("{} {rows}x{cols}", spec.name());
    let xs: Vec<HostBuffer> = inputs.iter().map(|i| host(&i.x)).collect();
    let xr: Vec<&HostBuffer> = xs.iter().collect();
    let res = host(&inputs[0].residual);
    let w = host(weight);
    let a = NormInputs {
        residual: Some(&res),
        weight: Some(&w),
        scale: Some(given),
        ..NormInputs::new(&xs[0], rows, cols, cols, 1e-5)
    };
    let want: Vec<RowWant> = expect_ar_add_rms_norm(spec, &xr, &a);
    let fp8 = spec.norm.and_then(|n| n.fp8);
    let out_dtype = if fp8.is_some() {
        DType::E4M3
    } else {
        spec.dtype
    };
    let poison = match fp8 {
        Some(_) => 0x7f,
        None => T::from_f64(f64::NAN).bits(),
    };
    for (r, row) in want.iter().enumerate() {
        let bits = row.residual_out.as_ref().unwrap();
        for (c, (want_bits, want_y)) in bits.iter().zip(&row.out).enumerate() {
            let i = r * cols + c;
            assert_eq!(
                got.residual[0][i], *want_bits,
                "{what}: residual row {r} col {c}"
            );
            if let Err(e) = want_y.check(out_dtype, got.y[0][i]) {
                panic!("{what}: y row {r} col {c}: {e}");
            }
        }
        if let Some(Err(e)) = row
            .scale
            .map(|s| s.check(DType::F32, got.scales[0][r].to_bits()))
        {
            panic!("{what}: scale of row {r}: {e}");
        }
    }
    for g in &got.y[0][rows * cols..] {
        assert_eq!(*g, poison, "{what}: a guard element past y was written");
    }
    for q in 1..got.y.len() {
        assert_eq!(
            got.residual[q], got.residual[0],
            "{what}: rank {q}'s residual"
        );
        assert_eq!(got.y[q], got.y[0], "{what}: rank {q}'s y");
        if fp8 == Some(Fp8Scale::PerRow) {
            let bits = |v: &Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got.scales[q]),
                bits(&got.scales[0]),
                "{what}: rank {q}'s scales"
            );
        }
    }
}

pub fn random_inputs<T: Elem>(rng: &mut super::Rng, world: usize, n: usize) -> Vec<RankInputs<T>> {
    let residual: Vec<T> = rng
        .values(n)
        .iter()
        .map(|&v| T::from_f64(f64::from(v)))
        .collect();
    (0..world)
        .map(|_| RankInputs {
            x: rng
                .values(n)
                .iter()
                .map(|&v| T::from_f64(f64::from(v)))
                .collect(),
            residual: residual.clone(),
        })
        .collect()
}
