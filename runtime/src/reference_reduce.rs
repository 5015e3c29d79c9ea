//! CPU twin of the `reduce` kernels: every op over f64 (max, min, argmax and
//! argmin exactly, with the device's NaN and signed-zero rules), and the
//! tolerance a GPU value must meet, derived from the accumulator's unit roundoff
//! and the longest chain of rounded operations the launch puts an element
//! through (`Plan::chain`): |error| <= gamma(chain) * sum |x| for a sum (Higham,
//! "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 4.2), and
//! the like for the others. Integer inputs accumulated in i64 (`reduce_*_i8_i64`)
//! are exact: sum, sum of squares and dot are the exact integers
//! ([`Reduced::Int`]), mean and the variances the device's own f64 steps from
//! the exact integer moments, so every one of them is compared bit for bit.
//!
//! ```
//! use redjit_runtime::reference::HostBuffer;
//! use redjit_runtime::reference_reduce::{all, Reduced};
//! use redjit_runtime::{DType, ReduceSpec};
//!
//! let x = HostBuffer::from_fn(DType::F32, 5, |i| [1.0, 7.0, f32::NAN, 7.0, 2.0][i]);
//! let argmax: ReduceSpec = "reduce_all_argmax_f32_f32".parse().unwrap();
//! // The first NaN wins, as in PyTorch.
//! assert_eq!(all(&argmax, 10, &[&x]).result, Reduced::Index(2));
//! let sum: ReduceSpec = "reduce_all_sum_f32_f32".parse().unwrap();
//! let e = all(&sum, 10, &[&HostBuffer::from_fn(DType::F32, 4, |i| i as f32)]);
//! assert!(e.check_f32(6.0).is_ok() && e.check_f32(6.01).is_err());
//! ```

use redjit_codegen::{DType, Op, ReduceOp, ReduceSpec};

use crate::reference::{HostBuffer, op_apply, par_map};

/// A reduction's exact (f64) result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reduced {
    /// A value (every op but argmax and argmin).
    Value(f64),
    /// An element index (argmax, argmin; -1 for no element).
    Index(i64),
    /// An exact integer (sum, sum of squares, dot of integer inputs).
    Int(i64),
}

/// What a GPU result must be: the exact result and how far a value may be
/// from it (0 for exact ops; NaN and infinities must match as such).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    /// The exact result.
    pub result: Reduced,
    /// How far a GPU value may be from it (0: must be equal).
    pub tol: f64,
}

impl Expected {
    /// Checks an f32 result.
    pub fn check_f32(&self, got: f32) -> Result<(), String> {
        let Reduced::Value(want) = self.result else {
            return Err(format!(
                "got the value {got}, want the index {:?}",
                self.result
            ));
        };
        let g = f64::from(got);
        let ok = if want.is_nan() {
            g.is_nan()
        } else if want.is_infinite() || self.tol == 0.0 {
            g == want && (want != 0.0 || g.is_sign_negative() == want.is_sign_negative())
        } else {
            (g - want).abs() <= self.tol
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "got {got:e} (bits {:#010x}), want {want:e} within {:e} (off by {:e})",
                got.to_bits(),
                self.tol,
                (g - want).abs()
            ))
        }
    }

    /// Checks an i64 result (an index, or an exact integer).
    pub fn check_i64(&self, got: i64) -> Result<(), String> {
        match self.result {
            Reduced::Index(want) | Reduced::Int(want) if want == got => Ok(()),
            want => Err(format!("got {got}, want {want:?}")),
        }
    }
}

/// The accumulator's unit roundoff: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16), 0
/// (i64: exact); NaN for a type that is no accumulator (so any tolerance made
/// from it fails every check).
pub fn unit_roundoff(accum: DType) -> f64 {
    match accum {
        DType::F32 => (-24f64).exp2(),
        DType::F16 => (-11f64).exp2(),
        DType::BF16 => (-8f64).exp2(),
        DType::I64 => 0.0,
        DType::E4M3 | DType::E5M2 | DType::I8 => f64::NAN,
    }
}

/// `n M2 = n q - s^2` from the exact integer sum `s` and sum of squares `q`,
/// as `prelude/reduce_int.cuh` forms it: each product with its FMA residual,
/// then the differences, every step an f64 rounding to nearest.
fn int_n_m2(s: i64, q: i64, n: f64) -> f64 {
    let (s, q) = (s as f64, q as f64);
    let p = n * q;
    let ep = n.mul_add(q, -p);
    let r = s * s;
    let er = s.mul_add(s, -r);
    (p - r) + (ep - er)
}

/// gamma(k) = k u / (1 - k u): the relative error bound of k rounded operations
/// (infinite when k u >= 1: no bound).
pub fn gamma(k: u64, u: f64) -> f64 {
    let ku = k as f64 * u;
    if ku >= 1.0 {
        f64::INFINITY
    } else {
        ku / (1.0 - ku)
    }
}

/// Running statistics of one range, in f64, for every op at once.
#[derive(Debug, Clone)]
struct Acc {
    n: u64,
    sum: f64,
    sum_abs: f64,
    sum_sq: f64,
    dot: f64,
    dot_abs: f64,
    /// The device's max / min, folded in f32 with its NaN and signed-zero rules.
    max: f32,
    min: f32,
    argmax: Option<(f32, i64)>,
    argmin: Option<(f32, i64)>,
    first_nan: Option<i64>,
    mean: f64,
    m2: f64,
    /// Online softmax state (max, sum of e^(x - max)).
    lse_m: f64,
    lse_d: f64,
    /// Exact integer moments (meaningful for integer inputs only; wrapping so
    /// float inputs, for which they are unused, cannot overflow).
    int_sum: i64,
    int_sq: i64,
    int_dot: i64,
}

impl Acc {
    fn new() -> Acc {
        Acc {
            n: 0,
            sum: 0.0,
            sum_abs: 0.0,
            sum_sq: 0.0,
            dot: 0.0,
            dot_abs: 0.0,
            max: f32::NEG_INFINITY,
            min: f32::INFINITY,
            argmax: None,
            argmin: None,
            first_nan: None,
            mean: 0.0,
            m2: 0.0,
            lse_m: f64::NEG_INFINITY,
            lse_d: 0.0,
            int_sum: 0,
            int_sq: 0,
            int_dot: 0,
        }
    }

    /// Element `i` (elements arrive in increasing index order) with value x and,
    /// for dot, y.
    fn push(&mut self, i: i64, x: f32, y: f32) {
        let (xd, yd) = (f64::from(x), f64::from(y));
        let (xi, yi) = (x as i64, y as i64);
        self.int_sum = self.int_sum.wrapping_add(xi);
        self.int_sq = self.int_sq.wrapping_add(xi.wrapping_mul(xi));
        self.int_dot = self.int_dot.wrapping_add(xi.wrapping_mul(yi));
        self.n += 1;
        self.sum += xd;
        self.sum_abs += xd.abs();
        self.sum_sq += xd * xd;
        self.dot += xd * yd;
        self.dot_abs += (xd * yd).abs();
        self.max = op_apply(Op::Max, self.max, x);
        self.min = op_apply(Op::Min, self.min, x);
        if x.is_nan() {
            self.first_nan.get_or_insert(i);
        } else {
            // Strict comparisons: a tie (-0 and +0 included) keeps the lower index.
            if self.argmax.is_none_or(|(v, _)| x > v) {
                self.argmax = Some((x, i));
            }
            if self.argmin.is_none_or(|(v, _)| x < v) {
                self.argmin = Some((x, i));
            }
        }
        let d = xd - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (xd - self.mean);
        if xd > self.lse_m {
            self.lse_d = self.lse_d * (self.lse_m - xd).exp() + 1.0;
            self.lse_m = xd;
        } else if xd.is_finite() || self.lse_m.is_finite() {
            self.lse_d += (xd - self.lse_m).exp();
        }
    }

    /// Adds the state of the elements after this state's (Chan's merge for the
    /// mean and M2, the online-softmax merge for logsumexp; ties keep this
    /// state's lower index).
    fn merge(&mut self, o: &Acc) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let n = na + nb;
        let d = o.mean - self.mean;
        self.mean += d * nb / n;
        self.m2 += o.m2 + d * d * na * nb / n;
        self.n += o.n;
        self.int_sum = self.int_sum.wrapping_add(o.int_sum);
        self.int_sq = self.int_sq.wrapping_add(o.int_sq);
        self.int_dot = self.int_dot.wrapping_add(o.int_dot);
        self.sum += o.sum;
        self.sum_abs += o.sum_abs;
        self.sum_sq += o.sum_sq;
        self.dot += o.dot;
        self.dot_abs += o.dot_abs;
        self.max = op_apply(Op::Max, self.max, o.max);
        self.min = op_apply(Op::Min, self.min, o.min);
        self.first_nan = self.first_nan.or(o.first_nan);
        if let Some((x, i)) = o.argmax
            && self.argmax.is_none_or(|(v, _)| x > v)
        {
            self.argmax = Some((x, i));
        }
        if let Some((x, i)) = o.argmin
            && self.argmin.is_none_or(|(v, _)| x < v)
        {
            self.argmin = Some((x, i));
        }
        let m = self.lse_m.max(o.lse_m);
        if m == f64::NEG_INFINITY {
            self.lse_d += o.lse_d;
        } else {
            let scaled = |lm: f64, ld: f64| if ld == 0.0 { 0.0 } else { ld * (lm - m).exp() };
            self.lse_d = scaled(self.lse_m, self.lse_d) + scaled(o.lse_m, o.lse_d);
        }
        self.lse_m = m;
    }

    fn finish(&self, op: ReduceOp, accum: DType, chain: u64) -> Expected {
        let u = unit_roundoff(accum);
        let u32_ = unit_roundoff(DType::F32);
        let n = self.n as f64;
        let value = |v: f64, tol: f64| Expected {
            result: Reduced::Value(v),
            tol,
        };
        let index = |i: Option<(f32, i64)>| Expected {
            result: Reduced::Index(self.first_nan.or(i.map(|(_, i)| i)).unwrap_or(-1)),
            tol: 0.0,
        };
        if accum == DType::I64 {
            // Exact integer moments; the f32 results are the device's f64 steps.
            let int = |v: i64| Expected {
                result: Reduced::Int(v),
                tol: 0.0,
            };
            let f32_exact = |v: f64| value(f64::from(v as f32), 0.0);
            let c = if op == ReduceOp::VarSamp { 1.0 } else { 0.0 };
            match op {
                ReduceOp::Sum => return int(self.int_sum),
                ReduceOp::SumSq => return int(self.int_sq),
                ReduceOp::Dot => return int(self.int_dot),
                ReduceOp::Mean => return f32_exact(self.int_sum as f64 / n),
                ReduceOp::VarPop | ReduceOp::VarSamp => {
                    return f32_exact(int_n_m2(self.int_sum, self.int_sq, n) / n / (n - c));
                }
                // Validation keeps the others off the integer accumulator.
                _ => {}
            }
        }
        match op {
            ReduceOp::Sum => value(self.sum, gamma(chain, u) * self.sum_abs),
            ReduceOp::Mean => value(
                self.sum / n,
                gamma(chain + 2, u) * self.sum_abs / n + 2.0 * u32_ * (self.sum / n).abs(),
            ),
            ReduceOp::SumSq => value(self.sum_sq, gamma(chain + 1, u) * self.sum_sq),
            ReduceOp::Dot => value(self.dot, gamma(chain + 1, u) * self.dot_abs),
            ReduceOp::Max => value(f64::from(self.max), 0.0),
            ReduceOp::Min => value(f64::from(self.min), 0.0),
            ReduceOp::ArgMax => index(self.argmax),
            ReduceOp::ArgMin => index(self.argmin),
            ReduceOp::VarPop | ReduceOp::VarSamp => {
                let c = if op == ReduceOp::VarSamp { 1.0 } else { 0.0 };
                let var = if self.sum.is_nan() || self.sum_abs.is_infinite() {
                    f64::NAN
                } else {
                    self.m2 / (n - c)
                };
                // Welford's per-element updates and Chan's merges: each element's
                // deviation goes through about twice the sum's chain; bound the
                // error by the uncentred second moment, which also covers the
                // mean's error.
                value(
                    var,
                    4.0 * gamma(2 * chain + 8, u) * self.sum_sq / (n - c).max(1.0),
                )
            }
            ReduceOp::LogSumExp => {
                let m = self.lse_m;
                let r = if self.first_nan.is_some() {
                    f64::NAN
                } else if m.is_infinite() {
                    m
                } else {
                    m + self.lse_d.ln()
                };
                // The max is exact; ln d is off by d's relative error (rounded
                // adds, ex2.approx at about 2^-22 per term) plus lg2.approx's.
                value(
                    r,
                    2.0 * u32_ * m.abs()
                        + gamma(chain + 8, u32_)
                        + 8.0 * (-22f64).exp2()
                        + 2.0 * u32_ * r.abs(),
                )
            }
        }
    }
}

fn check_srcs(spec: &ReduceSpec, srcs: &[&HostBuffer]) {
    assert_eq!(srcs.len(), spec.op.info().inputs, "input count");
    for s in srcs {
        assert_eq!(s.dtype(), spec.input, "input dtype");
    }
}

/// The expected result of a full-array reduction of `srcs` (dot: two buffers).
/// Panics if the buffers do not fit the spec (a harness error).
pub fn all(spec: &ReduceSpec, chain: u64, srcs: &[&HostBuffer]) -> Expected {
    check_srcs(spec, srcs);
    let y = |i: usize| srcs.get(1).map_or(0.0, |b| b.get_f32(i));
    let len = srcs[0].len();
    // Chunks in parallel, merged in index order.
    let chunk = 1 << 20;
    let parts = par_map(len.div_ceil(chunk), |k| {
        let mut acc = Acc::new();
        for i in k * chunk..((k + 1) * chunk).min(len) {
            acc.push(i as i64, srcs[0].get_f32(i), y(i));
        }
        acc
    });
    let mut acc = Acc::new();
    for p in &parts {
        acc.merge(p);
    }
    acc.finish(spec.op, spec.accum, chain)
}

/// The expected result of each row of the rows x cols matrix (row r at element
/// r * ld) held in `srcs`.
pub fn rows(
    spec: &ReduceSpec,
    chain: u64,
    srcs: &[&HostBuffer],
    (rows, cols, ld): (usize, usize, usize),
) -> Vec<Expected> {
    check_srcs(spec, srcs);
    let y = |i: usize| srcs.get(1).map_or(0.0, |b| b.get_f32(i));
    let row = |r: usize| {
        let mut acc = Acc::new();
        for c in 0..cols {
            let i = r * ld + c;
            acc.push(c as i64, srcs[0].get_f32(i), y(i));
        }
        acc.finish(spec.op, spec.accum, chain)
    };
    par_map(rows, row)
}

/// The expected result of each column of the rows x cols matrix (row r at
/// element r * ld) held in `srcs`.
pub fn cols(
    spec: &ReduceSpec,
    chain: u64,
    srcs: &[&HostBuffer],
    (rows, cols, ld): (usize, usize, usize),
) -> Vec<Expected> {
    check_srcs(spec, srcs);
    let y = |i: usize| srcs.get(1).map_or(0.0, |b| b.get_f32(i));
    // Column blocks in parallel; rows in order within each (the index order).
    // Narrow matrices (262144 x 128) still spread over the cores.
    let block = cols
        .div_ceil(std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 256);
    let blocks = par_map(cols.div_ceil(block), |b| {
        let c0 = b * block;
        let c1 = (c0 + block).min(cols);
        let mut accs = vec![Acc::new(); c1 - c0];
        for r in 0..rows {
            for (c, acc) in (c0..c1).zip(accs.iter_mut()) {
                let i = r * ld + c;
                acc.push(r as i64, srcs[0].get_f32(i), y(i));
            }
        }
        accs.iter()
            .map(|a| a.finish(spec.op, spec.accum, chain))
            .collect::<Vec<_>>()
    });
    blocks.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ReduceSpec {
        name.parse().unwrap()
    }

    fn buf(v: &[f32]) -> HostBuffer {
        HostBuffer::F32(v.to_vec())
    }

    /// The chunked `all` merges states; every split of a range must give the
    /// serial state's results (ties, NaNs and infinities across the cut included).
    #[test]
    fn merged_states_equal_the_serial_state() {
        let mut v: Vec<f32> = (0..97)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.37)
            .collect();
        v[40] = v[10]; // a tie of the argmax value across a cut
        let mut cases = vec![v.clone()];
        let mut inf = v.clone();
        inf[70] = f32::INFINITY;
        cases.push(inf);
        let mut nan = v.clone();
        nan[55] = f32::NAN;
        nan[80] = f32::NAN;
        cases.push(nan);
        cases.push(vec![f32::NEG_INFINITY; 9]);
        for x in &cases {
            let serial = {
                let mut a = Acc::new();
                for (i, &e) in x.iter().enumerate() {
                    a.push(i as i64, e, 0.5);
                }
                a
            };
            for cut in [0, 1, x.len() / 3, x.len() / 2, x.len() - 1, x.len()] {
                let mut a = Acc::new();
                let mut b = Acc::new();
                for (i, &e) in x.iter().enumerate() {
                    let acc = if i < cut { &mut a } else { &mut b };
                    acc.push(i as i64, e, 0.5);
                }
                a.merge(&b);
                for &op in ReduceOp::ALL {
                    let (m, s) = (
                        a.finish(op, DType::F32, 1),
                        serial.finish(op, DType::F32, 1),
                    );
                    match (m.result, s.result) {
                        (Reduced::Value(p), Reduced::Value(q)) => assert!(
                            (p.is_nan() && q.is_nan())
                                || p == q
                                || (p - q).abs() <= 1e-12 * q.abs().max(1.0),
                            "{op:?} cut {cut}: {p} vs {q}"
                        ),
                        (p, q) => assert_eq!(p, q, "{op:?} cut {cut}"),
                    }
                }
            }
        }
    }

    #[test]
    fn arg_ops_take_the_first_nan_then_the_lowest_index_of_a_tie() {
        let x = buf(&[3.0, -0.0, 9.0, 0.0, 9.0, -5.0]);
        assert_eq!(
            all(&spec("reduce_all_argmax_f32_f32"), 1, &[&x]).result,
            Reduced::Index(2)
        );
        assert_eq!(
            all(&spec("reduce_all_argmin_f32_f32"), 1, &[&x]).result,
            Reduced::Index(5)
        );
        let z = buf(&[0.0, -0.0, 0.0]);
        assert_eq!(
            all(&spec("reduce_all_argmin_f32_f32"), 1, &[&z]).result,
            Reduced::Index(0)
        );
        let nan = buf(&[1.0, f32::NAN, 5.0, f32::NAN]);
        for op in ["argmax", "argmin"] {
            let e = all(&spec(&format!("reduce_all_{op}_f32_f32")), 1, &[&nan]);
            assert_eq!(e.result, Reduced::Index(1), "{op}");
        }
    }

    #[test]
    fn max_min_follow_nan_and_signed_zero() {
        let z = buf(&[-0.0, 0.0]);
        let e = all(&spec("reduce_all_max_f32_f32"), 1, &[&z]);
        assert!(e.check_f32(0.0).is_ok() && e.check_f32(-0.0).is_err());
        let e = all(&spec("reduce_all_min_f32_f32"), 1, &[&z]);
        assert!(e.check_f32(-0.0).is_ok() && e.check_f32(0.0).is_err());
        let nan = buf(&[1.0, f32::NAN, 5.0]);
        assert!(
            all(&spec("reduce_all_max_f32_f32"), 1, &[&nan])
                .check_f32(f32::NAN)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_max_f32_f32"), 1, &[&nan])
                .check_f32(5.0)
                .is_err()
        );
    }

    #[test]
    fn variance_mean_lse_and_dot_of_known_data() {
        let x = buf(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        let val = |name: &str| match all(&spec(name), 4, &[&x]).result {
            Reduced::Value(v) => v,
            r => panic!("{r:?}"),
        };
        assert_eq!(val("reduce_all_varpop_f32_f32"), 4.0);
        assert!((val("reduce_all_varsamp_f32_f32") - 32.0 / 7.0).abs() < 1e-12);
        assert_eq!(val("reduce_all_mean_f32_f32"), 5.0);
        assert_eq!(val("reduce_all_sumsq_f32_f32"), 232.0);
        let lse = val("reduce_all_lse_f32_f32");
        let want: f64 = [2.0f64, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
            .iter()
            .map(|v| v.exp())
            .sum::<f64>()
            .ln();
        assert!((lse - want).abs() < 1e-12, "{lse} {want}");
        let y = buf(&[1.0, -1.0, 0.5, 2.0, 0.0, 1.0, 1.0, -1.0]);
        let d = all(&spec("reduce_all_dot_f32_f32"), 4, &[&x, &y]);
        assert_eq!(
            d.result,
            Reduced::Value(2.0 - 4.0 + 2.0 + 8.0 + 0.0 + 5.0 + 7.0 - 9.0)
        );
        // One element: the sample variance is NaN, the population one 0.
        let one = buf(&[3.0]);
        assert!(
            all(&spec("reduce_all_varsamp_f32_f32"), 1, &[&one])
                .check_f32(f32::NAN)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_varpop_f32_f32"), 1, &[&one])
                .check_f32(0.0)
                .is_ok()
        );
    }

    #[test]
    fn lse_of_infinities() {
        let inf = buf(&[1.0, f32::INFINITY]);
        assert!(
            all(&spec("reduce_all_lse_f32_f32"), 1, &[&inf])
                .check_f32(f32::INFINITY)
                .is_ok()
        );
        let ninf = buf(&[f32::NEG_INFINITY, f32::NEG_INFINITY]);
        assert!(
            all(&spec("reduce_all_lse_f32_f32"), 1, &[&ninf])
                .check_f32(f32::NEG_INFINITY)
                .is_ok()
        );
    }

    #[test]
    fn tolerances_grow_with_the_chain_and_the_accumulator() {
        let x = HostBuffer::from_fn(DType::F32, 1000, |i| (i as f32).sin());
        let f32_tol = all(&spec("reduce_all_sum_f32_f32"), 20, &[&x]).tol;
        let longer = all(&spec("reduce_all_sum_f32_f32"), 40, &[&x]).tol;
        assert!(longer > 1.9 * f32_tol && f32_tol > 0.0);
        let xb = HostBuffer::from_fn(DType::BF16, 1000, |i| (i as f32).sin());
        let lossy = all(&spec("reduce_all_sum_bf16_bf16"), 20, &[&xb]).tol;
        let exact = all(&spec("reduce_all_sum_bf16_f32"), 20, &[&xb]).tol;
        assert!(lossy > 1000.0 * exact, "{lossy} {exact}");
    }

    #[test]
    fn rows_and_cols_of_a_strided_matrix() {
        // 2 x 3 in a buffer with ld 4 (the fourth column is padding).
        let x = buf(&[1.0, 2.0, 3.0, 100.0, 4.0, 5.0, 6.0, 100.0]);
        let s = spec("reduce_rows_sum_f32_f32");
        let r: Vec<_> = rows(&s, 4, &[&x], (2, 3, 4))
            .iter()
            .map(|e| e.result)
            .collect();
        assert_eq!(r, vec![Reduced::Value(6.0), Reduced::Value(15.0)]);
        let s = spec("reduce_cols_argmax_f32_f32");
        let c: Vec<_> = cols(&s, 4, &[&x], (2, 3, 4))
            .iter()
            .map(|e| e.result)
            .collect();
        assert_eq!(c, vec![Reduced::Index(1); 3]);
    }

    fn i8buf(v: &[i8]) -> HostBuffer {
        HostBuffer::I8(v.to_vec())
    }

    #[test]
    fn i8_sums_are_exact_integers_and_compared_bit_for_bit() {
        let x = i8buf(&[127, -128, 5, -3, 127, 0]);
        let y = i8buf(&[-128, -128, 2, 7, 1, 99]);
        let e = all(&spec("reduce_all_sum_i8_i64"), 1, &[&x]);
        assert_eq!((e.result, e.tol), (Reduced::Int(128), 0.0));
        assert!(e.check_i64(128).is_ok() && e.check_i64(127).is_err());
        assert!(e.check_f32(128.0).is_err(), "an integer result is no f32");
        let e = all(&spec("reduce_all_sumsq_i8_i64"), 1, &[&x]);
        assert_eq!(e.result, Reduced::Int(127 * 127 * 2 + 128 * 128 + 25 + 9));
        let e = all(&spec("reduce_all_dot_i8_i64"), 1, &[&x, &y]);
        assert_eq!(
            e.result,
            Reduced::Int(-127 * 128 + 128 * 128 + 10 - 21 + 127)
        );
        // Past the i32 range: 2^26 elements of -128 sum to -2^33.
        let big = HostBuffer::I8(vec![-128; 1 << 26]);
        let e = all(&spec("reduce_all_sum_i8_i64"), 1, &[&big]);
        assert_eq!(e.result, Reduced::Int(-(1i64 << 33)));
        let e = all(&spec("reduce_all_sumsq_i8_i64"), 1, &[&big]);
        assert_eq!(e.result, Reduced::Int(1i64 << 40));
        // max, min, argmax, argmin of i8 take the f32 path, exactly.
        let e = all(&spec("reduce_all_max_i8_f32"), 1, &[&x]);
        assert!(e.tol == 0.0 && e.check_f32(127.0).is_ok() && e.check_f32(126.0).is_err());
        assert_eq!(
            all(&spec("reduce_all_argmax_i8_f32"), 1, &[&x]).result,
            Reduced::Index(0)
        );
        assert_eq!(
            all(&spec("reduce_all_argmin_i8_f32"), 1, &[&x]).result,
            Reduced::Index(1)
        );
        let e = all(&spec("reduce_all_min_i8_f32"), 1, &[&x]);
        assert!(e.check_f32(-128.0).is_ok());
    }

    #[test]
    fn i8_mean_and_variance_are_the_exact_moments_rounded_once() {
        // Mean: the exact sum over n in f64, rounded once to f32.
        let x = i8buf(&[1, 2, 2]);
        let e = all(&spec("reduce_all_mean_i8_i64"), 1, &[&x]);
        assert_eq!(e.tol, 0.0);
        assert!(e.check_f32((5.0f64 / 3.0) as f32).is_ok());
        assert!(
            e.check_f32(f32::from_bits(((5.0f64 / 3.0) as f32).to_bits() + 1))
                .is_err()
        );
        // Variance against exact rationals: n M2 = n q - s^2.
        let rng = |i: usize| ((i * 2_654_435_761) >> 13) as u8 as i8;
        for n in [1usize, 2, 3, 1000, 65_537] {
            let v: Vec<i8> = (0..n).map(rng).collect();
            let (s, q) = v.iter().fold((0i128, 0i128), |(s, q), &x| {
                (s + i128::from(x), q + i128::from(x) * i128::from(x))
            });
            let nm2 = n as i128 * q - s * s;
            let b = HostBuffer::I8(v);
            let pop = all(&spec("reduce_all_varpop_i8_i64"), 1, &[&b]);
            let want = (nm2 as f64 / (n as f64 * n as f64)) as f32;
            // Within one f32 ulp of the exact value (the f64 steps round far below).
            let Reduced::Value(got) = pop.result else {
                panic!("{:?}", pop.result)
            };
            let got = got as f32;
            assert!(
                got.to_bits().abs_diff(want.to_bits()) <= 1,
                "varpop n={n}: {got} vs {want}"
            );
            let samp = all(&spec("reduce_all_varsamp_i8_i64"), 1, &[&b]);
            if n == 1 {
                assert!(samp.check_f32(f32::NAN).is_ok() && pop.check_f32(0.0).is_ok());
            } else {
                let want = (nm2 as f64 / (n as f64 * (n - 1) as f64)) as f32;
                let Reduced::Value(got) = samp.result else {
                    panic!()
                };
                assert!(
                    (got as f32).to_bits().abs_diff(want.to_bits()) <= 1,
                    "varsamp n={n}"
                );
            }
        }
        // A constant array: exactly zero, no cancellation residue.
        let c = HostBuffer::I8(vec![-77; 100_001]);
        assert!(
            all(&spec("reduce_all_varpop_i8_i64"), 1, &[&c])
                .check_f32(0.0)
                .is_ok()
        );
    }

    #[test]
    fn i8_rows_and_cols_of_a_strided_matrix() {
        // 2 x 3 with ld 4 (the fourth column is padding).
        let x = i8buf(&[1, -2, 3, 100, 4, 5, -128, 100]);
        let r: Vec<_> = rows(&spec("reduce_rows_sum_i8_i64"), 1, &[&x], (2, 3, 4))
            .iter()
            .map(|e| e.result)
            .collect();
        assert_eq!(r, vec![Reduced::Int(2), Reduced::Int(-119)]);
        let c: Vec<_> = cols(&spec("reduce_cols_sumsq_i8_i64"), 1, &[&x], (2, 3, 4))
            .iter()
            .map(|e| e.result)
            .collect();
        assert_eq!(
            c,
            vec![Reduced::Int(17), Reduced::Int(29), Reduced::Int(9 + 16384)]
        );
    }

    #[test]
    fn fp8_inputs_decode_exactly_and_propagate_nan_and_inf() {
        use crate::fp8::{F8E4M3, F8E5M2};
        // e4m3: 448 + 1 + NaN.
        let x = HostBuffer::E4M3(vec![
            F8E4M3::from_bits(0x7e),
            F8E4M3::from_bits(0x38),
            F8E4M3::from_bits(0x7f),
        ]);
        assert!(
            all(&spec("reduce_all_sum_e4m3_f32"), 1, &[&x])
                .check_f32(f32::NAN)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_max_e4m3_f32"), 1, &[&x])
                .check_f32(f32::NAN)
                .is_ok()
        );
        assert_eq!(
            all(&spec("reduce_all_argmin_e4m3_f32"), 1, &[&x]).result,
            Reduced::Index(2)
        );
        let finite = HostBuffer::E4M3(vec![
            F8E4M3::from_bits(0x7e),
            F8E4M3::from_bits(0x38),
            F8E4M3::from_bits(0xfe),
        ]);
        assert!(
            all(&spec("reduce_all_sum_e4m3_f32"), 1, &[&finite])
                .check_f32(1.0)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_max_e4m3_f32"), 1, &[&finite])
                .check_f32(448.0)
                .is_ok()
        );
        // e5m2: +inf wins max, -inf + +inf is NaN, the first NaN is argmax.
        let y = HostBuffer::E5M2(vec![
            F8E5M2::from_bits(0x3c),
            F8E5M2::from_bits(0x7c),
            F8E5M2::from_bits(0x7b),
        ]);
        assert!(
            all(&spec("reduce_all_max_e5m2_f32"), 1, &[&y])
                .check_f32(f32::INFINITY)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_sum_e5m2_f32"), 1, &[&y])
                .check_f32(f32::INFINITY)
                .is_ok()
        );
        assert!(
            all(&spec("reduce_all_min_e5m2_f32"), 1, &[&y])
                .check_f32(1.0)
                .is_ok()
        );
        let z = HostBuffer::E5M2(vec![
            F8E5M2::from_bits(0xfc),
            F8E5M2::from_bits(0x7c),
            F8E5M2::from_bits(0x7e),
            F8E5M2::from_bits(0x7d),
        ]);
        assert!(
            all(&spec("reduce_all_sum_e5m2_f32"), 1, &[&z])
                .check_f32(f32::NAN)
                .is_ok()
        );
        assert_eq!(
            all(&spec("reduce_all_argmax_e5m2_f32"), 1, &[&z]).result,
            Reduced::Index(2)
        );
        // from_fn rounds to nearest even and saturates e4m3 as cvt.rn.satfinite.
        let r = HostBuffer::from_fn(DType::E4M3, 3, |i| [1.0625, 1000.0, -0.0][i]);
        assert_eq!(
            r,
            HostBuffer::E4M3(vec![
                F8E4M3::from_bits(0x38),
                F8E4M3::from_bits(0x7e),
                F8E4M3::from_bits(0x80)
            ])
        );
        assert_eq!(r.bits(2), 0x80);
        let i = HostBuffer::from_fn(DType::I8, 4, |i| [2.5, -300.0, f32::NAN, 127.4][i]);
        assert_eq!(i, HostBuffer::I8(vec![2, -128, 0, 127]));
    }
}
