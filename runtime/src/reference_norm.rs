//! CPU twin of the `norm` kernels, and of the whole-array softmax
//! (`softmax_all`, [`check_softmax_all`]) through the same [`SoftmaxStats`]:
//! every row op in f64, from the very f32 values
//! the kernel works on (softmax: `x * scale` rounded to f32; fused residual:
//! `x + residual` rounded to f32 and then to the input type, which is also the
//! exact expected `residual_out`), and the tolerance each output must meet.
//!
//! Tolerances (absolute, per element, from the kernel's f32 arithmetic; `u` =
//! 2^-24, `chain` = the longest chain of rounded adds a row's sums go through
//! under the launch's layout, `t` = s x - max, `d` the normaliser):
//! - softmax `y = e^t / d`: |y| (2^-20 + |t| 2^-23 + chain u + 4u), plus 2^-126
//!   (`ex2.approx.ftz` flushes results below f32's normal range); 2^-20 covers
//!   ex2.approx (about 2 ulp) in each term and in the sum.
//! - log-softmax `y = t - ln d`: |t| 2^-23 + 2^-20 + chain u + (|y| + |ln d|) 2^-23
//!   (lg2.approx is absolute to about 2^-22).
//! - RMS norm `y = x rstd w`: |y| (chain u / 2 + 8u) + 2^-126.
//! - layer norm `y = (x - mean) rstd w + b`: |w| rstd (|x - mean| e_var + e_mean) +
//!   |y| 4u + |b| u, where e_mean = gamma(chain + 4) sum|x| / n and e_var =
//!   4 gamma(2 chain + 8) E[x^2] / var / 2 + 4u (Chan's merges against the
//!   uncentred second moment, as `reference_reduce` bounds the variance).
//!
//! f32 outputs must be within the tolerance; for randn-like rows it is below
//! the issue's 1e-5 relative. bf16 and f16 outputs must be within 1 ulp of the
//! correctly rounded f64 value, or within the tolerance where the f32 error
//! exceeds that ulp (tiny results of a cancelling layer norm). NaN must be NaN
//! and an infinity itself. Special rows (softmax): NaN or +Inf anywhere, or
//! only -Inf, gives NaN everywhere; -Inf elements of other rows give 0
//! (log-softmax: -Inf).
//!
//! ```
//! use redjit_runtime::reference::HostBuffer;
//! use redjit_runtime::reference_norm::{NormInputs, expect_rows};
//! use redjit_runtime::{DType, NormSpec};
//!
//! let spec: NormSpec = "norm_softmax_safe_f32_f32_w4x1".parse().unwrap();
//! let x = HostBuffer::from_fn(DType::F32, 3, |i| [0.0, 0.0, f32::NEG_INFINITY][i]);
//! let rows = expect_rows(&spec, &NormInputs::new(&x, 1, 3, 3, 1.0));
//! assert!(rows[0].out[0].check(DType::F32, 0.5f32.to_bits()).is_ok());
//! assert!(rows[0].out[2].check(DType::F32, 0).is_ok());
//! ```

use half::{bf16, f16};
use redjit_codegen::spec::norm::{E4M3_MAX, FP8_MIN_SCALE, Fp8Scale};
use redjit_codegen::{
    AllReduceSpec, DType, KernelSpec, NormLayout, NormOp, NormSpec, SoftmaxAllSpec,
};

use crate::fp8::{F8E4M3, e4m3_rn};

use crate::reference::{HostBuffer, par_map};
use crate::reference_reduce::gamma;

const U: f64 = 1.0 / 16_777_216.0;
/// f32's smallest normal.
const TINY: f64 = 1.175_494_350_822_287_5e-38;

/// The host buffers and scalars of one call.
pub struct NormInputs<'a> {
    /// The rows, as the kernel's `x`.
    pub x: &'a HostBuffer,
    /// Fused residual add (`_res` specs): added to x before the norm.
    pub residual: Option<&'a HostBuffer>,
    /// Norms: cols elements; `None` counts as all ones.
    pub weight: Option<&'a HostBuffer>,
    /// Layer norm: cols elements; `None` counts as all zeros.
    pub bias: Option<&'a HostBuffer>,
    /// Rows of the matrix.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Elements between the starts of two rows.
    pub ld: usize,
    /// Softmax: the scale; norms: eps.
    pub param: f32,
    /// An FP8 output's given scale (`_qs` specs).
    pub scale: Option<f32>,
}

impl<'a> NormInputs<'a> {
    /// A call with only x (a softmax); set the other buffers for a norm.
    pub fn new(x: &'a HostBuffer, rows: usize, cols: usize, ld: usize, param: f32) -> Self {
        NormInputs {
            x,
            residual: None,
            weight: None,
            bias: None,
            rows,
            cols,
            ld,
            param,
            scale: None,
        }
    }
}

/// One expected output element: the f64 value and the absolute tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Want {
    /// The exact result, in f64.
    pub value: f64,
    /// How far the GPU's value may be from it.
    pub tol: f64,
}

impl Want {
    /// Checks the bits the GPU wrote in `dtype` (f32 bits, or 16-bit in the low half).
    pub fn check(&self, dtype: DType, got_bits: u32) -> Result<(), String> {
        let got = match dtype {
            DType::F32 => f64::from(f32::from_bits(got_bits)),
            DType::BF16 => f64::from(bf16::from_bits(got_bits as u16).to_f32()),
            DType::F16 => f64::from(f16::from_bits(got_bits as u16).to_f32()),
            DType::E4M3 => f64::from(F8E4M3::from_bits(got_bits as u8).to_f32()),
            // A validated norm spec's output is a store type or e4m3.
            other => return Err(format!("a norm kernel writes no {other}")),
        };
        let w = self.value;
        let ok = if w.is_nan() {
            got.is_nan()
        } else if w.is_infinite() && dtype == DType::E4M3 {
            // e4m3 has no infinity: the GPU's satfinite store saturates to +-448.
            got_bits as u8 == e4m3_rn(w as f32).to_bits()
        } else if w.is_infinite() {
            got == w
        } else if (got - w).abs() <= self.tol {
            true
        } else {
            match dtype {
                DType::F32 => false,
                // Within one ulp of the correctly rounded value.
                DType::BF16 => {
                    let r = bf16::from_f64(w).to_bits();
                    ordered16(r, true).abs_diff(ordered16(got_bits as u16, true)) <= 1
                }
                DType::F16 => {
                    let r = f16::from_f64(w).to_bits();
                    ordered16(r, false).abs_diff(ordered16(got_bits as u16, false)) <= 1
                }
                // Within one code of the GPU's rounding (saturating) of the value.
                DType::E4M3 => {
                    let r = e4m3_rn(w as f32).to_bits();
                    ordered8(r).abs_diff(ordered8(got_bits as u8)) <= 1
                }
                // Refused above.
                _ => false,
            }
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "got {got:e} (bits {got_bits:#x}), want {w:e} within {:e} (off by {:e})",
                self.tol,
                (got - w).abs()
            ))
        }
    }
}

/// An 8-bit float's bits on a line where adjacent values differ by 1.
fn ordered8(b: u8) -> i32 {
    let mag = i32::from(b & 0x7f);
    if b & 0x80 != 0 { -mag } else { mag }
}

/// A 16-bit float's bits on a line where adjacent values differ by 1.
fn ordered16(b: u16, _bf16: bool) -> i32 {
    let mag = i32::from(b & 0x7fff);
    if b & 0x8000 != 0 { -mag } else { mag }
}

/// What one row must give.
#[derive(Debug, Clone)]
pub struct RowWant {
    /// One per element of the row.
    pub out: Vec<Want>,
    /// Fused residual: the exact bits of `residual_out` (input type).
    pub residual_out: Option<Vec<u32>>,
    /// Layer norm: the row's mean.
    pub mean: Option<Want>,
    /// Norms: the row's 1 / sqrt(var + eps).
    pub rstd: Option<Want>,
    /// An FP8 output's per-row scale (`_qd` specs).
    pub scale: Option<Want>,
}

/// The longest chain of rounded adds a row's sums take under `spec`'s layout
/// for rows of `cols`: a thread's own elements, the lane tree, the merge of
/// the chunks (split).
pub fn chain(spec: &NormSpec, cols: u64) -> u64 {
    let per_thread = u64::from(spec.packs) * 4;
    let tree = u64::from(spec.lanes.max(1).ilog2()) + 1;
    let splits = match spec.layout {
        NormLayout::Split | NormLayout::Loop => cols.div_ceil(spec.chunk()),
        _ => 1,
    };
    per_thread + tree + splits + 2
}

// A validated norm spec's input and output are store types (f32, bf16, f16);
// the others would be a harness error.
fn round_to(dtype: DType, v: f32) -> f32 {
    match dtype {
        DType::F32 => v,
        DType::BF16 => crate::reference::bf16_rn(v).to_f32(),
        DType::F16 => crate::reference::f16_rn(v).to_f32(),
        other => panic!("a norm kernel has no {other} buffers"),
    }
}

fn bits_of(dtype: DType, v: f32) -> u32 {
    match dtype {
        DType::F32 => v.to_bits(),
        DType::BF16 => u32::from(crate::reference::bf16_rn(v).to_bits()),
        DType::F16 => u32::from(crate::reference::f16_rn(v).to_bits()),
        other => panic!("a norm kernel has no {other} buffers"),
    }
}

/// The max of a softmax's scaled values, NaN if any is NaN (fold from -Inf).
pub fn softmax_max(m: f64, x: f64) -> f64 {
    if m.is_nan() || x.is_nan() {
        f64::NAN
    } else {
        m.max(x)
    }
}

/// A softmax's f64 statistics over its scaled values and the error budget of
/// the kernel's normaliser: what every softmax twin (a row of the `norm`
/// family, a whole array of `softmax_all`) derives each element's [`Want`]
/// from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxStats {
    /// The max of the scaled values (NaN if any is NaN).
    pub m: f64,
    /// The sum of e^(v - m) over the scaled values v.
    pub d: f64,
    /// ln d.
    pub ln_d: f64,
    /// The kernel's relative error in d: 2^-20 (ex2.approx in each term and
    /// the sum) + chain u, and whatever else its reduction rounds.
    pub sum_err: f64,
}

impl SoftmaxStats {
    /// The statistics of max m and normaliser d, with the kernel's budget.
    pub fn new(m: f64, d: f64, sum_err: f64) -> SoftmaxStats {
        SoftmaxStats {
            m,
            d,
            ln_d: d.ln(),
            sum_err,
        }
    }

    /// NaN or +Inf among the values, or only -Inf: NaN everywhere.
    pub fn special(&self) -> bool {
        self.m.is_nan() || self.m.is_infinite()
    }

    /// The expected output (softmax, or log-softmax when `log`) for the scaled
    /// value `x` (`x * scale` rounded to f32, as the kernels compute it).
    pub fn want(&self, x: f64, log: bool) -> Want {
        if self.special() {
            return Want {
                value: f64::NAN,
                tol: 0.0,
            };
        }
        let t = x - self.m;
        if log {
            let y = t - self.ln_d;
            Want {
                value: y,
                tol: t.abs() * 2.0 * U + self.sum_err + (y.abs() + self.ln_d.abs()) * 2.0 * U,
            }
        } else {
            let y = t.exp() / self.d;
            let tol = if t == f64::NEG_INFINITY {
                0.0
            } else {
                y * (self.sum_err + t.abs() * 2.0 * U + 4.0 * U) + TINY
            };
            Want { value: y, tol }
        }
    }
}

/// The expected outputs of every row. Panics if the buffers do not fit the
/// spec (a harness error).
pub fn expect_rows(spec: &NormSpec, a: &NormInputs<'_>) -> Vec<RowWant> {
    assert_eq!(a.x.dtype(), spec.input, "x dtype");
    let ch = chain(spec, a.cols as u64);
    par_map(a.rows, |r| expect_row(spec, a, r, ch))
}

/// The fused all-reduce + residual + RMS norm (issue 60, an `AllReduceSpec`
/// with `norm`) on the host, for one rank: the ranks' `xs` summed in rank
/// order in f32 and rounded to x's type (the all-reduce's bits), then
/// [`expect_rows`] of RMS norm + residual over that sum, with the error
/// budget of the kernel's layout (a block of its threads, its packs a
/// thread). Its `residual_out` is the new residual's exact bits.
pub fn expect_ar_add_rms_norm(
    spec: &AllReduceSpec,
    xs: &[&HostBuffer],
    a: &NormInputs<'_>,
) -> Vec<RowWant> {
    let norm = spec.norm.expect("a fused all-reduce + norm spec");
    let dtype = spec.dtype;
    let n = a.rows * a.cols;
    let sum = HostBuffer::from_fn(dtype, n, |i| {
        let mut acc = xs[0].get_f32(i);
        for x in &xs[1..] {
            acc += x.get_f32(i);
        }
        acc
    });
    let norm_spec = NormSpec {
        op: NormOp::RmsNorm,
        algo: None,
        residual: true,
        input: dtype,
        output: if norm.fp8.is_some() {
            DType::E4M3
        } else {
            dtype
        },
        fp8: norm.fp8,
        layout: NormLayout::Block,
        lanes: norm.threads,
        // The norm family counts packs of 4 elements.
        packs: norm.packs * spec.pack_elts() / 4,
        ..NormSpec::default()
    };
    expect_rows(&norm_spec, &NormInputs { x: &sum, ..*a })
}

/// Whole-array softmax (`softmax_all`, issue 11): the statistics of
/// `scale * x` (each product rounded to f32, as the kernels) over all of x,
/// summed in parallel chunks, with the stats stage's error budget for a launch
/// of `grid` blocks: 2^-20 + chain u + (2^-22 + u) per rescale of a partial
/// sum (`SoftmaxAllSpec::stats_chain`, `stats_rescales`). That worst case
/// (every group raising its thread's max: an ascending array) is about 4e-5
/// at 2^28 elements; random arrays rescale a few times a thread and land far
/// below 1e-5 (the GPU tests assert both).
pub fn softmax_all_stats(
    spec: &SoftmaxAllSpec,
    x: &HostBuffer,
    scale: f32,
    grid: u32,
) -> SoftmaxStats {
    let n = x.len();
    let chunks = n.clamp(1, 1024);
    let per = n.div_ceil(chunks).max(1);
    let range = |c: usize| c * per..((c + 1) * per).min(n);
    let scaled = |i: usize| f64::from(x.get_f32(i) * scale);
    let m = par_map(chunks, |c| {
        range(c).map(scaled).fold(f64::NEG_INFINITY, softmax_max)
    })
    .into_iter()
    .fold(f64::NEG_INFINITY, softmax_max);
    let d: f64 = par_map(chunks, |c| {
        range(c).map(|i| (scaled(i) - m).exp()).sum::<f64>()
    })
    .iter()
    .sum();
    let chain = spec.stats_chain(n as u64, grid);
    let rescales = spec.stats_rescales(n as u64, grid);
    SoftmaxStats::new(
        m,
        d,
        2f64.powi(-20) + chain as f64 * U + rescales as f64 * (2f64.powi(-22) + U),
    )
}

/// Checks every element of a whole-array softmax's output `y` (the kernel's
/// bits) against the twin of `x`: [`softmax_all_stats`], then each element's
/// [`Want`] (f32 within the tolerance; 16-bit within it or 1 ulp of the
/// correctly rounded value). Returns the largest relative error among the
/// finite nonzero expected values, or the first failures (at most 8) and
/// their count.
pub fn check_softmax_all(
    spec: &SoftmaxAllSpec,
    x: &HostBuffer,
    scale: f32,
    grid: u32,
    y: &HostBuffer,
) -> Result<f64, String> {
    assert_eq!(x.dtype(), spec.input, "x dtype");
    assert_eq!(y.dtype(), spec.output, "y dtype");
    assert_eq!(x.len(), y.len(), "lengths");
    let st = softmax_all_stats(spec, x, scale, grid);
    let log = spec.op == NormOp::LogSoftmax;
    let n = x.len();
    let chunks = n.clamp(1, 1024);
    let per = n.div_ceil(chunks).max(1);
    let parts = par_map(chunks, |c| {
        let mut worst = 0f64;
        let mut bad = Vec::new();
        let mut count = 0usize;
        for i in c * per..((c + 1) * per).min(n) {
            let w = st.want(f64::from(x.get_f32(i) * scale), log);
            let bits = y.bits(i);
            match w.check(spec.output, bits) {
                Ok(()) => {
                    let got = f64::from(y.get_f32(i));
                    if w.value.is_finite() && w.value != 0.0 {
                        worst = worst.max((got - w.value).abs() / w.value.abs());
                    }
                }
                Err(e) => {
                    count += 1;
                    if bad.len() < 8 {
                        bad.push(format!("y[{i}] (x = {:e}): {e}", x.get_f32(i)));
                    }
                }
            }
        }
        (worst, bad, count)
    });
    let worst = parts.iter().map(|p| p.0).fold(0f64, f64::max);
    let count: usize = parts.iter().map(|p| p.2).sum();
    if count == 0 {
        return Ok(worst);
    }
    let first: Vec<String> = parts.into_iter().flat_map(|p| p.1).take(8).collect();
    Err(format!(
        "{}: {count} of {n} elements wrong (m = {:e}, d = {:e}, budget {:e}); first:\n{}",
        spec.name(),
        st.m,
        st.d,
        st.sum_err,
        first.join("\n")
    ))
}

fn expect_row(spec: &NormSpec, a: &NormInputs<'_>, r: usize, ch: u64) -> RowWant {
    let n = a.cols;
    let at = |c: usize| r * a.ld + c;
    let info = spec.op.info();
    if info.softmax {
        let v: Vec<f64> = (0..n)
            .map(|c| f64::from(a.x.get_f32(at(c)) * a.param))
            .collect();
        let log = spec.op == NormOp::LogSoftmax;
        let m = v.iter().copied().fold(f64::NEG_INFINITY, softmax_max);
        let d: f64 = v.iter().map(|x| (x - m).exp()).sum();
        let st = SoftmaxStats::new(m, d, 2f64.powi(-20) + ch as f64 * U);
        return RowWant {
            out: v.iter().map(|&x| st.want(x, log)).collect(),
            residual_out: None,
            mean: None,
            rstd: None,
            scale: None,
        };
    }
    // Norms: h = x (+ residual, rounded to the input type as the kernel does).
    let (h, residual_out): (Vec<f32>, Option<Vec<u32>>) = match a.residual {
        Some(res) => {
            let h: Vec<f32> = (0..n)
                .map(|c| round_to(spec.input, a.x.get_f32(at(c)) + res.get_f32(at(c))))
                .collect();
            let bits = h.iter().map(|&v| bits_of(spec.input, v)).collect();
            (h, Some(bits))
        }
        None => ((0..n).map(|c| a.x.get_f32(at(c))).collect(), None),
    };
    let w = |c: usize| a.weight.map_or(1.0, |b| f64::from(b.get_f32(c)));
    let b = |c: usize| a.bias.map_or(0.0, |b| f64::from(b.get_f32(c)));
    let eps = f64::from(a.param);
    let nf = n as f64;
    let hv: Vec<f64> = h.iter().map(|&v| f64::from(v)).collect();
    if spec.op == NormOp::RmsNorm {
        let ss: f64 = hv.iter().map(|x| x * x).sum();
        let rstd = 1.0 / (ss / nf + eps).sqrt();
        let rel = gamma(ch + 1, U) / 2.0 + 8.0 * U;
        let out = (0..n)
            .map(|c| {
                let y = hv[c] * rstd * w(c);
                Want {
                    value: y,
                    tol: y.abs() * rel + TINY,
                }
            })
            .collect();
        return fp8_scaled(
            spec,
            a,
            RowWant {
                out,
                residual_out,
                mean: None,
                rstd: Some(Want {
                    value: rstd,
                    tol: rstd * rel,
                }),
                scale: None,
            },
        );
    }
    // Layer norm.
    let mean = hv.iter().sum::<f64>() / nf;
    let var = hv.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / nf;
    let second = hv.iter().map(|x| x * x).sum::<f64>() / nf;
    let abs_mean = hv.iter().map(|x| x.abs()).sum::<f64>() / nf;
    let rstd = 1.0 / (var + eps).sqrt();
    let e_mean = gamma(ch + 4, U) * abs_mean;
    let e_var = if var + eps > 0.0 {
        2.0 * gamma(2 * ch + 8, U) * second / (var + eps) + 4.0 * U
    } else {
        f64::INFINITY
    };
    let out = (0..n)
        .map(|c| {
            let xc = hv[c] - mean;
            let y = xc * rstd * w(c) + b(c);
            Want {
                value: y,
                tol: w(c).abs() * rstd * (xc.abs() * e_var + e_mean)
                    + y.abs() * 4.0 * U
                    + b(c).abs() * U
                    + TINY,
            }
        })
        .collect();
    fp8_scaled(
        spec,
        a,
        RowWant {
            out,
            residual_out,
            mean: Some(Want {
                value: mean,
                tol: e_mean + mean.abs() * U,
            }),
            rstd: Some(Want {
                value: rstd,
                tol: rstd * e_var,
            }),
            scale: None,
        },
    )
}

/// A norm's row as an FP8 output stores it (`_qd`, `_qs`): y / scale, the
/// scale the row's max |y| / 448 (at least 1 / (448 x 512)) or the given one.
/// The kernel's y * (1 / scale) has y's error, the scale's, and two roundings.
fn fp8_scaled(spec: &NormSpec, a: &NormInputs<'_>, w: RowWant) -> RowWant {
    let Some(q) = spec.fp8 else {
        return w;
    };
    let (s, s_tol) = match q {
        Fp8Scale::PerRow => {
            let amax = w.out.iter().map(|e| e.value.abs()).fold(0.0, f64::max);
            let nan = w.out.iter().any(|e| e.value.is_nan());
            let tol = w.out.iter().map(|e| e.tol).fold(0.0, f64::max);
            let floor = f64::from(FP8_MIN_SCALE);
            let s = if nan {
                f64::NAN
            } else {
                (amax / f64::from(E4M3_MAX)).max(floor)
            };
            (s, tol / f64::from(E4M3_MAX) + s * 2.0 * U)
        }
        Fp8Scale::Given => (f64::from(a.scale.expect("a _qs spec's given scale")), 0.0),
    };
    let rel = s_tol / s + 2.0 * U;
    RowWant {
        out: w
            .out
            .iter()
            .map(|e| Want {
                value: e.value / s,
                tol: (e.tol + e.value.abs() * rel) / s,
            })
            .collect(),
        scale: (q == Fp8Scale::PerRow).then_some(Want {
            value: s,
            tol: s_tol,
        }),
        ..w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_infinite_value_written_as_e4m3_is_its_saturated_code() {
        let inf = |value: f64| Want { value, tol: 0.0 };
        assert!(inf(f64::INFINITY).check(DType::E4M3, 0x7e).is_ok());
        assert!(inf(f64::NEG_INFINITY).check(DType::E4M3, 0xfe).is_ok());
        for wrong in [0x7d, 0x7f, 0xfe] {
            assert!(
                inf(f64::INFINITY).check(DType::E4M3, wrong).is_err(),
                "{wrong:#x}"
            );
        }
        // The 16-bit types keep their infinities.
        assert!(inf(f64::INFINITY).check(DType::F16, 0x7c00).is_ok());
        assert!(inf(f64::INFINITY).check(DType::F16, 0x7bff).is_err());
    }

    fn spec(name: &str) -> NormSpec {
        name.parse().unwrap()
    }

    fn f32s(v: &[f32]) -> HostBuffer {
        HostBuffer::F32(v.to_vec())
    }

    #[test]
    fn softmax_of_known_rows_and_special_values() {
        let x = f32s(&[1.0, 2.0, 3.0, f32::NEG_INFINITY]);
        let s = spec("norm_softmax_online_f32_f32_w1x1");
        let r = &expect_rows(&s, &NormInputs::new(&x, 1, 4, 4, 1.0))[0];
        let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|v| v.exp()).collect();
        let d: f64 = e.iter().sum();
        assert!((r.out[2].value - e[2] / d).abs() < 1e-15);
        assert_eq!(r.out[3].value, 0.0);
        // Row sums to 1.
        assert!((r.out.iter().map(|w| w.value).sum::<f64>() - 1.0).abs() < 1e-15);
        // NaN / +Inf / all -Inf rows: NaN everywhere.
        for bad in [
            [1.0, f32::NAN, 0.0],
            [1.0, f32::INFINITY, 0.0],
            [f32::NEG_INFINITY; 3],
        ] {
            let x = f32s(&bad);
            let r = &expect_rows(&s, &NormInputs::new(&x, 1, 3, 3, 1.0))[0];
            assert!(r.out.iter().all(|w| w.value.is_nan()), "{bad:?}");
        }
        // Large magnitudes: the max is subtracted.
        let x = f32s(&[1e4, 1e4 - 1.0, -1e4]);
        let l = spec("norm_logsoftmax_safe_f32_f32_w1x1");
        let r = &expect_rows(&l, &NormInputs::new(&x, 1, 3, 3, 1.0))[0];
        assert!(r.out[0].value.is_finite() && r.out[0].value < 0.0);
        assert!((r.out[0].value - r.out[1].value - 1.0).abs() < 1e-12);
        // A scale is applied in f32 first.
        let x = f32s(&[2.0, 4.0]);
        let r = &expect_rows(&s, &NormInputs::new(&x, 1, 2, 2, 0.5))[0];
        assert!((r.out[0].value - 1.0 / (1.0 + 1f64.exp())).abs() < 1e-15);
    }

    #[test]
    fn norms_of_known_rows_and_the_residual_bits() {
        let x = f32s(&[1.0, 2.0, 3.0, 4.0]);
        let w = f32s(&[1.0, 1.0, 2.0, 1.0]);
        let b = f32s(&[0.0, 0.0, 0.0, 0.5]);
        let mut a = NormInputs::new(&x, 1, 4, 4, 0.0);
        a.weight = Some(&w);
        a.bias = Some(&b);
        let r = &expect_rows(&spec("norm_layernorm_f32_f32_w1x1"), &a)[0];
        let sd = 1.25f64.sqrt();
        assert!((r.out[0].value - (-1.5 / sd)).abs() < 1e-12);
        assert!((r.out[2].value - 2.0 * 0.5 / sd).abs() < 1e-12);
        assert!((r.out[3].value - (1.5 / sd + 0.5)).abs() < 1e-12);
        assert_eq!(r.mean.unwrap().value, 2.5);
        a.bias = None;
        let r = &expect_rows(&spec("norm_rmsnorm_f32_f32_w1x1"), &a)[0];
        let rms = (30.0f64 / 4.0).sqrt();
        assert!((r.out[1].value - 2.0 / rms).abs() < 1e-12);
        // bf16 residual: x + r rounded to bf16 (1 + 2^-9 rounds to 1).
        let xb = HostBuffer::from_fn(DType::BF16, 1, |_| 1.0);
        let rb = HostBuffer::from_fn(DType::BF16, 1, |_| 2f32.powi(-9));
        let wb = HostBuffer::from_fn(DType::BF16, 1, |_| 1.0);
        let mut a = NormInputs::new(&xb, 1, 1, 1, 1e-6);
        a.residual = Some(&rb);
        a.weight = Some(&wb);
        let r = &expect_rows(&spec("norm_rmsnorm_res_bf16_bf16_w1x1"), &a)[0];
        assert_eq!(r.residual_out.as_ref().unwrap()[0], 0x3f80);
    }

    #[test]
    fn fp8_outputs_are_y_over_the_rows_scale() {
        // RMS norm of [1, 2, 3, 4]: y = x / sqrt(7.5), max |y| = 4 / sqrt(7.5).
        let x = f32s(&[1.0, 2.0, 3.0, 4.0]);
        let w = f32s(&[1.0; 4]);
        let mut a = NormInputs::new(&x, 1, 4, 4, 0.0);
        a.weight = Some(&w);
        let r = &expect_rows(&spec("norm_rmsnorm_f32_e4m3_w1x1_qd"), &a)[0];
        let rms = 7.5f64.sqrt();
        let s = 4.0 / rms / 448.0;
        assert!((r.scale.unwrap().value - s).abs() < 1e-15);
        // The row's max maps to 448, the others in proportion.
        assert!((r.out[3].value - 448.0).abs() < 1e-9);
        assert!((r.out[0].value - 112.0).abs() < 1e-9);
        // 112 and 448 are e4m3 codes 0x6e and 0x7e; one code off passes (the
        // GPU's f32 y may round the other way), two do not.
        assert!(r.out[0].check(DType::E4M3, 0x6e).is_ok());
        assert!(r.out[0].check(DType::E4M3, 0x6f).is_ok());
        assert!(r.out[0].check(DType::E4M3, 0x70).is_err());
        assert!(r.out[3].check(DType::E4M3, 0x7e).is_ok());
        // A given scale divides every row; a row of zeros takes the floor.
        a.scale = Some(0.5);
        let r = &expect_rows(&spec("norm_rmsnorm_f32_e4m3_w1x1_qs"), &a)[0];
        assert!(r.scale.is_none());
        assert!((r.out[1].value - 2.0 / rms / 0.5).abs() < 1e-12);
        let z = f32s(&[0.0; 4]);
        let mut a = NormInputs::new(&z, 1, 4, 4, 1e-6);
        a.weight = Some(&w);
        let r = &expect_rows(&spec("norm_rmsnorm_f32_e4m3_w1x1_qd"), &a)[0];
        assert_eq!(r.scale.unwrap().value, f64::from(FP8_MIN_SCALE));
        assert!(r.out[0].check(DType::E4M3, 0).is_ok());
    }

    #[test]
    fn whole_array_softmax_is_the_one_row_softmax() {
        let x = f32s(&[1.0, 2.0, 3.0, f32::NEG_INFINITY, 0.5]);
        let row = &expect_rows(
            &spec("norm_softmax_online_f32_f32_w1x1"),
            &NormInputs::new(&x, 1, 5, 5, 0.5),
        )[0];
        let all: SoftmaxAllSpec = "softmax_all_softmax_f32_f32".parse().unwrap();
        let st = softmax_all_stats(&all, &x, 0.5, 1);
        for (i, w) in row.out.iter().enumerate() {
            let a = st.want(f64::from(x.get_f32(i) * 0.5), false);
            assert!((a.value - w.value).abs() < 1e-15, "{i}");
        }
        // The kernel's values pass, a value 1e-4 off fails, naming the element.
        let y = HostBuffer::F32(row.out.iter().map(|w| w.value as f32).collect());
        let worst = check_softmax_all(&all, &x, 0.5, 1, &y).unwrap();
        assert!(worst < 1e-7, "{worst}");
        let mut off = row.out.iter().map(|w| w.value as f32).collect::<Vec<_>>();
        off[1] *= 1.0 + 1e-4;
        let e = check_softmax_all(&all, &x, 0.5, 1, &HostBuffer::F32(off)).unwrap_err();
        assert!(
            e.contains("1 of 5 elements wrong") && e.contains("y[1]"),
            "{e}"
        );
        // Special arrays: NaN everywhere.
        for bad in [
            [1.0, f32::NAN],
            [1.0, f32::INFINITY],
            [f32::NEG_INFINITY; 2],
        ] {
            let st = softmax_all_stats(&all, &f32s(&bad), 1.0, 1);
            assert!(st.special() && st.want(1.0, true).value.is_nan(), "{bad:?}");
        }
        // The budget grows with n: at most 5e-5 at 2^28 on 1056 blocks.
        let big = softmax_all_stats(&all, &x, 1.0, 1).sum_err
            + (all.stats_chain(1 << 28, 1056) - all.stats_chain(5, 1)) as f64 * U
            + (all.stats_rescales(1 << 28, 1056) - all.stats_rescales(5, 1)) as f64
                * (2f64.powi(-22) + U);
        assert!(big < 5e-5, "{big}");
    }

    #[test]
    fn sixteen_bit_outputs_take_one_ulp() {
        let w = Want {
            value: 1.0 + 3.0 / 256.0,
            tol: 0.0,
        };
        // bf16's ulp at 1 is 2^-7: a tie, rounded to even 1 + 2^-6 (0x3f82).
        for ok in [0x3f81, 0x3f82, 0x3f83] {
            assert!(w.check(DType::BF16, ok).is_ok(), "{ok:#x}");
        }
        for bad in [0x3f80, 0x3f84] {
            assert!(w.check(DType::BF16, bad).is_err(), "{bad:#x}");
        }
        let z = Want {
            value: 0.0,
            tol: 0.0,
        };
        assert!(z.check(DType::F16, 0x8000).is_ok() && z.check(DType::F16, 0x0001).is_ok());
        let nan = Want {
            value: f64::NAN,
            tol: 0.0,
        };
        assert!(nan.check(DType::F32, 0x7fc0_0000).is_ok() && nan.check(DType::F32, 0).is_err());
    }
}
