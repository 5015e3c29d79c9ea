//! Autotune: on a device no table was measured on, the first call of a norm
//! operation at a shape class times a few layouts once and keeps the fastest,
//! in memory and in the cache directory, so later calls and later processes
//! take it without timing anything.
//!
//! A class is the operation and dtypes, the row-count class and the row-length
//! class the tuning tables use ([`ROW_CLASSES`](redjit_codegen::tuning::ROW_CLASSES), [`cols_class`](redjit_codegen::tuning::cols_class)). The
//! candidates are [`closest_candidates`](redjit_codegen::tuning::closest_candidates): the table's pick first, then the
//! layouts that hold the row with the fewest spare columns, at most
//! [`MAX_CANDIDATES`], compiled in one parallel batch. Each is timed on the
//! runtime's stream with CUDA events over scratch buffers of the call's shape
//! (random rows), never the caller's. Anything that goes wrong (a compile, an
//! allocation, a launch) is one warning and the table's pick: autotune can
//! make a call faster, never make it fail.

use cudarc::driver::CudaSlice;
use cudarc::driver::sys::CUevent_flags;
use redjit_codegen::{DType, NormSpec};

use crate::elem::DeviceElem;
use crate::error::{DriverContext, Result};
use crate::norm::NormArgs;
use crate::reduce::Matrix;
use crate::runtime::Runtime;

pub(crate) mod state;

pub use state::{Autotune, AutotunePick, MAX_CANDIDATES, Tried, class_of, picks_path};

/// Calls whose scratch buffers would pass this are left to the table.
pub const MAX_SCRATCH_BYTES: u64 = 1 << 30;
/// Timed launches per candidate (after one untimed), in two rounds of
/// alternating order; a candidate's time is its median.
const ITERS_PER_ROUND: usize = 3;

impl Runtime {
    /// `spec`'s operation laid out for `rows` x `cols` by this device's
    /// tuning table ([`NormSpec::for_shape`]): the kernel to ask
    /// [`Runtime::norm`] for. With autotune on
    /// ([`crate::RuntimeOptions::autotune`]), the first call of a class times
    /// a few layouts and keeps the fastest.
    pub fn norm_layout(&self, spec: &NormSpec, rows: usize, cols: usize) -> NormSpec {
        let table = spec.for_shape(Some(rows as u64), cols as u64, &self.tuning().tuning);
        // An FP8 output takes its input type's rows (no candidates timed).
        if spec.fp8.is_some() {
            return table;
        }
        self.autotune_state()
            .norm(spec, &table, rows, cols, |cands| {
                time_candidates(self, cands, rows, cols)
            })
    }

    /// The autotune mode in effect: [`crate::RuntimeOptions::autotune`] (or
    /// `$REDJIT_AUTOTUNE`), `Off` where `Untuned` met a measured table.
    pub fn autotune_mode(&self) -> Autotune {
        self.autotune_state().mode()
    }

    /// The classes autotune settled so far (timed here or read from the
    /// cache directory), by class.
    pub fn autotuned(&self) -> Vec<AutotunePick> {
        self.autotune_state().list()
    }
}

/// Element types the scratch rows are made of.
trait Sample: DeviceElem {
    fn of(v: f32) -> Self;
}
impl Sample for f32 {
    fn of(v: f32) -> f32 {
        v
    }
}
impl Sample for half::bf16 {
    fn of(v: f32) -> half::bf16 {
        half::bf16::from_f32(v)
    }
}
impl Sample for half::f16 {
    fn of(v: f32) -> half::f16 {
        half::f16::from_f32(v)
    }
}

/// Each candidate's median time (µs) at `rows` x `cols` (infinite where its
/// launch was refused).
fn time_candidates(
    rt: &Runtime,
    cands: &[NormSpec],
    rows: usize,
    cols: usize,
) -> Tried<Vec<(NormSpec, f64)>> {
    let spec = &cands[0];
    let bytes = |d: DType| d.info().bytes as u64;
    let n = rows as u64 * cols as u64;
    let scratch = n * (2 * bytes(spec.input) + bytes(spec.output))
        + if spec.residual {
            n * 2 * bytes(spec.input)
        } else {
            0
        };
    if scratch > MAX_SCRATCH_BYTES {
        return Err(format!(
            "{scratch} bytes of scratch rows, past the {MAX_SCRATCH_BYTES} autotune takes"
        ));
    }
    use half::{bf16, f16};
    let timed = match (spec.input, spec.output) {
        (DType::F32, DType::F32) => time_typed::<f32, f32>(rt, cands, rows, cols),
        (DType::F32, DType::BF16) => time_typed::<f32, bf16>(rt, cands, rows, cols),
        (DType::F32, DType::F16) => time_typed::<f32, f16>(rt, cands, rows, cols),
        (DType::BF16, DType::F32) => time_typed::<bf16, f32>(rt, cands, rows, cols),
        (DType::BF16, DType::BF16) => time_typed::<bf16, bf16>(rt, cands, rows, cols),
        (DType::BF16, DType::F16) => time_typed::<bf16, f16>(rt, cands, rows, cols),
        (DType::F16, DType::F32) => time_typed::<f16, f32>(rt, cands, rows, cols),
        (DType::F16, DType::BF16) => time_typed::<f16, bf16>(rt, cands, rows, cols),
        (DType::F16, DType::F16) => time_typed::<f16, f16>(rt, cands, rows, cols),
        (i, o) => return Err(format!("no scratch rows of {i} to {o}")),
    };
    timed.map_err(|e| e.to_string())
}

fn time_typed<I: Sample, O: Sample>(
    rt: &Runtime,
    cands: &[NormSpec],
    rows: usize,
    cols: usize,
) -> Result<Vec<(NormSpec, f64)>> {
    let spec = &cands[0];
    let info = spec.op.info();
    let stream = rt.stream();
    // A fixed pseudo-random row (xorshift): values in [-2, 2).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
    };
    let n = rows * cols;
    let host_rows: Vec<I> = (0..n).map(|_| I::of(next())).collect();
    let host_cols: Vec<I> = (0..cols).map(|_| I::of(next())).collect();
    let up = |v: &[I]| -> Result<CudaSlice<I>> {
        stream
            .clone_htod(v)
            .during(|| "autotune: copying scratch rows".into())
    };
    let x = up(&host_rows)?;
    let residual = if spec.residual {
        Some(up(&host_rows)?)
    } else {
        None
    };
    let weight = if info.softmax {
        None
    } else {
        Some(up(&host_cols)?)
    };
    let bias = if info.bias {
        Some(up(&host_cols)?)
    } else {
        None
    };
    let alloc = |len: usize| -> Result<CudaSlice<O>> {
        // SAFETY: every element is written by the launch before it is read
        // (nothing reads the scratch outputs).
        unsafe { stream.alloc::<O>(len) }.during(|| "autotune: allocating scratch rows".into())
    };
    let mut out = alloc(n)?;
    let mut residual_out = if spec.residual {
        Some(
            unsafe { stream.alloc::<I>(n) }
                .during(|| "autotune: allocating scratch rows".into())?,
        )
    } else {
        None
    };
    rt.prepare(cands)?;
    let kernels = cands
        .iter()
        .map(|s| rt.norm(s))
        .collect::<Result<Vec<_>>>()?;
    let shape = Matrix {
        rows,
        cols,
        ld: cols,
    };
    let mut launch = |k: usize| -> Result<()> {
        kernels[k].launch(
            stream,
            NormArgs {
                x: &x,
                residual: residual.as_ref().map(|r| r as _),
                weight: weight.as_ref().map(|w| w as _),
                bias: bias.as_ref().map(|b| b as _),
                out: &mut out,
                residual_out: residual_out.as_mut().map(|r| r as _),
                mean: None,
                rstd: None,
                shape,
                param: if info.softmax { 1.0 } else { 1e-5 },
                // FP8-output kernels are not autotuned (`norm_layout`).
                scale: None,
            },
        )
    };
    let event = || {
        rt.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .during(|| "autotune: creating a timing event".into())
    };
    let (start, end) = (event()?, event()?);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); cands.len()];
    // A candidate whose launch is refused (a split row past what this device
    // holds at once) is timed as infinite; the table's pick is among the rest.
    let runs: Vec<bool> = (0..cands.len()).map(|k| launch(k).is_ok()).collect();
    for round in 0..2 {
        for i in 0..cands.len() {
            let k = if round % 2 == 0 {
                i
            } else {
                cands.len() - 1 - i
            };
            if !runs[k] {
                times[k].push(f64::INFINITY);
                continue;
            }
            for _ in 0..ITERS_PER_ROUND {
                start
                    .record(stream)
                    .during(|| "autotune: recording an event".into())?;
                launch(k)?;
                end.record(stream)
                    .during(|| "autotune: recording an event".into())?;
                let ms = start
                    .elapsed_ms(&end)
                    .during(|| "autotune: reading an event time".into())?;
                times[k].push(f64::from(ms) * 1e3);
            }
        }
    }
    Ok(cands
        .iter()
        .cloned()
        .zip(times.into_iter().map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        }))
        .collect())
}
