//! CPU twin of the `norm` kernels: every row op in f64, from the very f32 values
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
use redjit_codegen::{DType, NormLayout, NormOp, NormSpec};

use crate::reference::HostBuffer;
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
            // A validated norm spec's output is a store type.
            other => return Err(format!("a norm kernel writes no {other}")),
        };
        let w = self.value;
        let ok = if w.is_nan() {
            got.is_nan()
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
}

/// The longest chain of rounded adds a row's sums take under `spec`'s layout
/// for rows of `cols`: a thread's own elements, the lane tree, the merge of
/// the chunks (split).
pub fn chain(spec: &NormSpec, cols: u64) -> u64 {
    let per_thread = u64::from(spec.packs) * 4;
    let tree = u64::from(spec.lanes.max(1).ilog2()) + 1;
    let splits = match spec.layout {
        NormLayout::Split => cols.div_ceil(spec.chunk()),
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

/// The expected outputs of every row. Panics if the buffers do not fit the
/// spec (a harness error).
pub fn expect_rows(spec: &NormSpec, a: &NormInputs<'_>) -> Vec<RowWant> {
    assert_eq!(a.x.dtype(), spec.input, "x dtype");
    let ch = chain(spec, a.cols as u64);
    crate::reference::par_map(a.rows, |r| expect_row(spec, a, r, ch))
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
        let m = v.iter().copied().fold(f64::NEG_INFINITY, |m, x| {
            if m.is_nan() || x.is_nan() {
                f64::NAN
            } else {
                m.max(x)
            }
        });
        // The f64 formula; NaN / +Inf anywhere or an all -Inf row: NaN.
        let special = m.is_nan() || m == f64::INFINITY || m == f64::NEG_INFINITY;
        let d: f64 = v.iter().map(|x| (x - m).exp()).sum();
        let ln_d = d.ln();
        let sum_err = 2f64.powi(-20) + ch as f64 * U;
        let out = v
            .iter()
            .map(|&x| {
                if special {
                    return Want {
                        value: f64::NAN,
                        tol: 0.0,
                    };
                }
                let t = x - m;
                if log {
                    let y = t - ln_d;
                    Want {
                        value: y,
                        tol: t.abs() * 2.0 * U + sum_err + (y.abs() + ln_d.abs()) * 2.0 * U,
                    }
                } else {
                    let y = t.exp() / d;
                    let tol = if t == f64::NEG_INFINITY {
                        0.0
                    } else {
                        y * (sum_err + t.abs() * 2.0 * U + 4.0 * U) + TINY
                    };
                    Want { value: y, tol }
                }
            })
            .collect();
        return RowWant {
            out,
            residual_out: None,
            mean: None,
            rstd: None,
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
        return RowWant {
            out,
            residual_out,
            mean: None,
            rstd: Some(Want {
                value: rstd,
                tol: rstd * rel,
            }),
        };
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
