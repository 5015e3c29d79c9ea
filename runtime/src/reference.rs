//! CPU twins of the kernels: the same math on the host, bit for bit, so GPU
//! results are checked exactly rather than within a tolerance.
//!
//! ```
//! use half::bf16;
//! use redjit_runtime::reference::{HostBuffer, Params, reduce_copy};
//! use redjit_runtime::ReduceCopySpec;
//!
//! let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_TA_T_sum_rn".parse().unwrap();
//! let recv = HostBuffer::BF16(vec![bf16::from_f32(1.5); 8]);
//! let user = HostBuffer::F32(vec![2.25; 8]);
//! let out = reduce_copy(&spec, &[&recv, &user], &[0, 0], 8, Params::default());
//! assert_eq!(out[0], HostBuffer::BF16(vec![bf16::from_f32(3.75); 8]));
//! ```

use half::{bf16, f16};
use redjit_codegen::{DType, Op, ReduceCopySpec, Role, Rounding};

use crate::fp8::{F8E4M3, F8E5M2, e4m3_rn, e5m2_rn};

/// A host buffer of one of redjit's dtypes.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuffer {
    /// f32 elements.
    F32(Vec<f32>),
    /// bf16 elements.
    BF16(Vec<bf16>),
    /// f16 elements.
    F16(Vec<f16>),
    /// OCP FP8 E4M3 elements (a reduction input).
    E4M3(Vec<F8E4M3>),
    /// OCP FP8 E5M2 elements (a reduction input).
    E5M2(Vec<F8E5M2>),
    /// i8 elements (a reduction input).
    I8(Vec<i8>),
}

impl HostBuffer {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            HostBuffer::F32(_) => DType::F32,
            HostBuffer::BF16(_) => DType::BF16,
            HostBuffer::F16(_) => DType::F16,
            HostBuffer::E4M3(_) => DType::E4M3,
            HostBuffer::E5M2(_) => DType::E5M2,
            HostBuffer::I8(_) => DType::I8,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            HostBuffer::F32(v) => v.len(),
            HostBuffer::BF16(v) => v.len(),
            HostBuffer::F16(v) => v.len(),
            HostBuffer::E4M3(v) => v.len(),
            HostBuffer::E5M2(v) => v.len(),
            HostBuffer::I8(v) => v.len(),
        }
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to f32 (exact for every dtype here).
    pub fn get_f32(&self, i: usize) -> f32 {
        match self {
            HostBuffer::F32(v) => v[i],
            HostBuffer::BF16(v) => v[i].to_f32(),
            HostBuffer::F16(v) => v[i].to_f32(),
            HostBuffer::E4M3(v) => v[i].to_f32(),
            HostBuffer::E5M2(v) => v[i].to_f32(),
            HostBuffer::I8(v) => f32::from(v[i]),
        }
    }

    /// The raw bits of element `i`, for exact comparison.
    pub fn bits(&self, i: usize) -> u32 {
        match self {
            HostBuffer::F32(v) => v[i].to_bits(),
            HostBuffer::BF16(v) => u32::from(v[i].to_bits()),
            HostBuffer::F16(v) => u32::from(v[i].to_bits()),
            HostBuffer::E4M3(v) => u32::from(v[i].to_bits()),
            HostBuffer::E5M2(v) => u32::from(v[i].to_bits()),
            HostBuffer::I8(v) => u32::from(v[i] as u8),
        }
    }

    /// Element `i` as an integer: i8 exactly; `None` for the float types.
    pub fn get_int(&self, i: usize) -> Option<i64> {
        match self {
            HostBuffer::I8(v) => Some(i64::from(v[i])),
            _ => None,
        }
    }

    /// A buffer of `len` elements of `dtype`, each `f(i)` rounded to nearest even
    /// (as `cvt.rn` does, NaN included; fp8 E4M3 saturates to +-448 as
    /// `cvt.rn.satfinite` does; i8 saturates to -128..=127, NaN to 0), filled in
    /// parallel chunks. Panics for i64, which is no element type of a buffer
    /// here (a harness error).
    pub fn from_fn(dtype: DType, len: usize, f: impl Fn(usize) -> f32 + Sync) -> HostBuffer {
        match dtype {
            DType::F32 => HostBuffer::F32(par_fill(len, &f)),
            DType::BF16 => HostBuffer::BF16(par_fill(len, |i| bf16_rn(f(i)))),
            DType::F16 => HostBuffer::F16(par_fill(len, |i| f16_rn(f(i)))),
            DType::E4M3 => HostBuffer::E4M3(par_fill(len, |i| e4m3_rn(f(i)))),
            DType::E5M2 => HostBuffer::E5M2(par_fill(len, |i| e5m2_rn(f(i)))),
            // `as` saturates and maps NaN to 0.
            DType::I8 => HostBuffer::I8(par_fill(len, |i| f(i).round_ties_even() as i8)),
            DType::I64 => panic!("i64 is an accumulator, not a buffer's element type"),
        }
    }
}

/// `cvt.rn.bf16.f32`: round to nearest even; every NaN becomes the canonical
/// 0x7fff (`half` keeps the payload's top bits instead).
pub fn bf16_rn(x: f32) -> bf16 {
    if x.is_nan() {
        bf16::from_bits(0x7fff)
    } else {
        bf16::from_f32(x)
    }
}

/// `cvt.rn.f16.f32`: round to nearest even; every NaN becomes the canonical 0x7fff.
pub fn f16_rn(x: f32) -> f16 {
    if x.is_nan() {
        f16::from_bits(0x7fff)
    } else {
        f16::from_f32(x)
    }
}

/// NVIDIA's canonical NaN, what min.NaN / max.NaN and cvt produce.
const CANONICAL_NAN: f32 = f32::from_bits(0x7fff_ffff);

/// The twin of `prelude/ops.cuh`: `pre`, `apply`, `post` of each op, each step
/// rounded to f32 as the device's explicit `.rn` instructions round it.
/// `pre`: applied to each source element (premulsum multiplies by `arg`).
pub fn op_pre(op: Op, arg: f32, x: f32) -> f32 {
    match op {
        Op::PreMulSum => x * arg,
        _ => x,
    }
}

/// `apply`: combines the accumulator with the next pre-processed element
/// (min and max propagate NaN as the canonical NaN and order -0 below +0).
pub fn op_apply(op: Op, acc: f32, x: f32) -> f32 {
    match op {
        Op::Sum | Op::PreMulSum | Op::Avg => acc + x,
        Op::Prod => acc * x,
        Op::Min | Op::Max if acc.is_nan() || x.is_nan() => CANONICAL_NAN,
        // PTX min/max order -0 below +0.
        Op::Min => {
            if acc < x || (acc == x && acc.is_sign_negative()) {
                acc
            } else {
                x
            }
        }
        Op::Max => {
            if acc > x || (acc == x && acc.is_sign_positive()) {
                acc
            } else {
                x
            }
        }
    }
}

/// `post`: applied once before the store (avg divides by `arg`).
pub fn op_post(op: Op, arg: f32, acc: f32) -> f32 {
    match op {
        Op::Avg => acc / arg,
        _ => acc,
    }
}

/// Stochastic rounding of `x` to bf16 with random word `r`: the twin of
/// `rj_f32_to_bf16_sr`.
pub fn bf16_sr(x: f32, r: u32) -> bf16 {
    let u = x.to_bits();
    let a = u & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return bf16::from_bits(0x7fff);
    }
    if a == 0x7f80_0000 {
        return bf16::from_bits((u >> 16) as u16);
    }
    bf16::from_bits((u.wrapping_add(r & 0xffff) >> 16) as u16)
}

/// Stochastic rounding of `x` to f16 with random word `r`: the twin of
/// `rj_f32_to_f16_sr` (exact integer arithmetic, subnormals and the overflow
/// edge included).
pub fn f16_sr(x: f32, r: u32) -> f16 {
    let u = x.to_bits();
    let sign = ((u >> 16) & 0x8000) as u16;
    let a = u & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return f16::from_bits(0x7fff);
    }
    if a == 0x7f80_0000 {
        return f16::from_bits(sign | 0x7c00);
    }
    if a >= 0x3880_0000 {
        let v = (a + (r & 0x1fff)) & !0x1fff;
        if v >= 0x4780_0000 {
            return f16::from_bits(sign | 0x7c00);
        }
        return f16::from_bits(sign | ((((v >> 23) - 112) << 10) | ((v >> 13) & 0x3ff)) as u16);
    }
    let e = a >> 23;
    let m = (a & 0x7f_ffff) | if e != 0 { 0x80_0000 } else { 0 };
    let d = 126 - e.max(1);
    let (units, up) = if d < 32 {
        (m >> d, u32::from((r >> (32 - d)) < (m & ((1 << d) - 1))))
    } else {
        (0, u32::from(d - 32 < 32 && r < (m >> (d - 32))))
    };
    f16::from_bits(sign | (units + up) as u16)
}

/// Host-side parameters of a launch: the op's scalar and the SR seed and base.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Params {
    /// The op's scalar (premulsum's factor, avg's count); ignored by other ops.
    pub op_arg: f32,
    /// Stochastic rounding's Philox key.
    pub sr_seed: u64,
    /// Stochastic rounding's counter offset of element 0.
    pub sr_base: u64,
}

/// `reduce_copy` on the host: each element reduced in f32 in source order, then
/// stored with the spec's rounding. Source `k` is read from element `offsets[k]`
/// on (a misaligned view), `n` elements; the work is split over the host's cores.
/// Panics if the buffers do not fit the spec (a harness error, not caller input).
pub fn reduce_copy(
    spec: &ReduceCopySpec,
    srcs: &[&HostBuffer],
    offsets: &[usize],
    n: usize,
    params: Params,
) -> Vec<HostBuffer> {
    assert_eq!(srcs.len(), spec.srcs.len(), "source count");
    assert_eq!(offsets.len(), srcs.len(), "one offset per source");
    for ((s, src), &off) in srcs.iter().zip(&spec.srcs).zip(offsets) {
        assert_eq!(s.dtype(), spec.dtype_of(src.role), "source dtype");
        assert!(off + n <= s.len(), "source shorter than offset + n");
    }
    let (op, arg) = (spec.op, params.op_arg);
    let value = |i: usize| {
        let mut acc = op_pre(op, arg, srcs[0].get_f32(i + offsets[0]));
        for (s, off) in srcs.iter().zip(offsets).skip(1) {
            acc = op_apply(op, acc, op_pre(op, arg, s.get_f32(i + off)));
        }
        op_post(op, arg, acc)
    };
    let bits = |i: usize| crate::philox::sr_bits(params.sr_seed, params.sr_base, i as u64);
    spec.dsts
        .iter()
        .map(|&r: &Role| match (spec.dtype_of(r), spec.rounding) {
            (dtype, Rounding::Nearest) | (dtype @ DType::F32, Rounding::Stochastic) => {
                HostBuffer::from_fn(dtype, n, value)
            }
            (DType::BF16, Rounding::Stochastic) => {
                HostBuffer::BF16(par_fill(n, |i| bf16_sr(value(i), bits(i))))
            }
            (DType::F16, Rounding::Stochastic) => {
                HostBuffer::F16(par_fill(n, |i| f16_sr(value(i), bits(i))))
            }
            // A validated spec's buffers are store types (f32, bf16, f16).
            (dtype, Rounding::Stochastic) => {
                panic!("reduce_copy has no {dtype} buffers: {spec:?} is not a valid spec")
            }
        })
        .collect()
}

/// `(0..len).map(f).collect()` over the host's cores, in index order: the CPU
/// twins of large launches (and the GPU tests' input generation and checks)
/// would otherwise take minutes on one core.
pub fn par_map<T: Send>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = len.div_ceil(workers).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..len)
            .step_by(chunk)
            .map(|start| {
                let f = &f;
                s.spawn(move || (start..(start + chunk).min(len)).map(f).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// `(0..len).map(f).collect()` into a flat buffer, in chunks of at least 2^16
/// elements over the host's cores.
fn par_fill<T: Copy + Default + Send>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); len];
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = len.div_ceil(workers).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    *x = f(c * chunk + j);
                }
            });
        }
    });
    out
}

/// The twin of the quantized all-reduce ([`crate::all_reduce::quant`]): what
/// every rank's output holds after
/// [`Communicator::all_reduce_quantized`](crate::all_reduce::Communicator::all_reduce_quantized)
/// of `inputs` (one f32 slice per rank, in rank order, all of one length),
/// bit for bit. Rank r's input is rounded to bf16 stochastically from position
/// `q.input_base(r, n)`, the ranks' values are combined in f32 in rank order
/// with `op` (`scalar`: premulsum's factor, avg's count); the two-stage kernel
/// rounds the result of every element of a whole 8-element pack to bf16 again
/// from position `q.partial_base(R, n)`, the last `n % 8` elements are not
/// rounded again. Large inputs are computed with [`par_map`].
///
/// # Panics
/// When the inputs differ in length or `q.transport` is not bf16 (the only
/// transport generated).
pub fn all_reduce_quantized(
    inputs: &[&[f32]],
    algo: redjit_codegen::AllReduceAlgo,
    op: Op,
    scalar: Option<f32>,
    q: crate::all_reduce::Quantize,
) -> Vec<f32> {
    assert_eq!(q.transport, DType::BF16, "only bf16 transport is generated");
    let world = inputs.len() as u32;
    let n = inputs.first().map_or(0, |x| x.len());
    assert!(
        inputs.iter().all(|x| x.len() == n),
        "every rank passes the same length"
    );
    let arg = scalar.unwrap_or(0.0);
    let bases: Vec<u64> = (0..world).map(|r| q.input_base(r, n)).collect();
    let partial = q.partial_base(world, n);
    // Whole 16-byte packs of bf16: the two-stage reduce-scatter's part.
    let packed = n / 8 * 8;
    let two_stage = algo == redjit_codegen::AllReduceAlgo::TwoStage;
    let value = |i: usize| {
        let mut acc = 0.0f32;
        for (r, x) in inputs.iter().enumerate() {
            let v = bf16_sr(x[i], crate::philox::sr_bits(q.seed, bases[r], i as u64)).to_f32();
            let v = op_pre(op, arg, v);
            acc = if r == 0 { v } else { op_apply(op, acc, v) };
        }
        let acc = op_post(op, arg, acc);
        if two_stage && i < packed {
            bf16_sr(acc, crate::philox::sr_bits(q.seed, partial, i as u64)).to_f32()
        } else {
            acc
        }
    };
    // Threads only where they pay (the unbiasedness test makes many tiny calls).
    if n < 1 << 14 {
        (0..n).map(value).collect()
    } else {
        par_map(n, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::philox::sr_bits;

    /// The values x rounds between, for one target type: (down, up) as f64.
    fn neighbours(x: f32, to: DType) -> (f64, f64) {
        let (lo, hi) = match to {
            DType::BF16 => (bf16_sr(x, 0).to_f64(), bf16_sr(x, 0xffff).to_f64()),
            DType::F16 => (f16_sr(x, 0).to_f64(), f16_sr(x, u32::MAX).to_f64()),
            DType::F32 => (f64::from(x), f64::from(x)),
            other => panic!("no stochastic rounding to {other}"),
        };
        (lo, hi)
    }

    /// The mean of SR(x) over many draws is x, within 4 standard errors: normal
    /// values, values on a representable point, f16 and f32 subnormals, values
    /// just below the overflow edge (whose "up" is Inf: skipped as unbounded).
    #[test]
    fn stochastic_rounding_is_unbiased() {
        let draws = 200_000u64;
        let cases: &[(f32, DType)] = &[
            (1.0 + 1.0 / 3.0, DType::BF16),
            (-2.718_281_7, DType::BF16),
            (1.0e-40, DType::BF16), // an f32 subnormal
            (2.5e-39, DType::BF16),
            (1.0 + 1.0 / 3.0, DType::F16),
            (-1234.567, DType::F16),
            (3.0e-6, DType::F16),  // an f16 subnormal
            (-7.0e-8, DType::F16), // below the smallest f16 subnormal (~6e-8)
            (6.1e-5, DType::F16),  // just below the smallest f16 normal
            (65_000.3, DType::F16),
            (0.75, DType::F16), // exactly representable: never moves
        ];
        for (k, &(x, to)) in cases.iter().enumerate() {
            let (lo, hi) = neighbours(x, to);
            assert!(
                lo <= f64::from(x) && f64::from(x) <= hi
                    || hi <= f64::from(x) && f64::from(x) <= lo,
                "{x}: {lo} {hi}"
            );
            let mut sum = 0.0f64;
            for i in 0..draws {
                let r = sr_bits(0x1234 + k as u64, 17, i);
                let y = match to {
                    DType::BF16 => bf16_sr(x, r).to_f64(),
                    _ => f16_sr(x, r).to_f64(),
                };
                assert!(
                    y == lo || y == hi,
                    "{x} rounded to {y}, outside [{lo}, {hi}]"
                );
                sum += y;
            }
            let mean = sum / draws as f64;
            let p = if hi == lo {
                0.0
            } else {
                (f64::from(x) - lo) / (hi - lo)
            };
            let se = (hi - lo).abs() * (p * (1.0 - p) / draws as f64).sqrt();
            let err = (mean - f64::from(x)).abs();
            assert!(
                err <= 4.0 * se + f64::EPSILON * f64::from(x).abs(),
                "{x} to {to:?}: mean {mean}, error {err}, 4 SE {}",
                4.0 * se
            );
        }
    }

    #[test]
    fn stochastic_rounding_keeps_nan_inf_and_zero() {
        for r in [0u32, 0x1234_5678, u32::MAX] {
            assert!(bf16_sr(f32::NAN, r).is_nan() && f16_sr(f32::NAN, r).is_nan());
            assert_eq!(bf16_sr(f32::INFINITY, r), bf16::INFINITY);
            assert_eq!(f16_sr(f32::NEG_INFINITY, r), f16::NEG_INFINITY);
            assert_eq!(bf16_sr(-0.0, r).to_bits(), 0x8000);
            assert_eq!(f16_sr(0.0, r).to_bits(), 0);
            assert_eq!(f16_sr(-0.0, r).to_bits(), 0x8000);
        }
        // The overflow edge: above 65504 an f16 rounds up to Inf, never past it.
        assert_eq!(f16_sr(65_519.0, 0), f16::MAX);
        assert_eq!(f16_sr(65_519.0, u32::MAX), f16::INFINITY);
        assert_eq!(f16_sr(1.0e6, 0), f16::INFINITY);
    }

    #[test]
    fn ops_follow_nans_and_signed_zeros() {
        assert!(op_apply(Op::Min, 1.0, f32::NAN).is_nan());
        assert!(op_apply(Op::Max, f32::NAN, 1.0).is_nan());
        assert_eq!(op_apply(Op::Min, 0.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(op_apply(Op::Max, -0.0, 0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(op_post(Op::Avg, 4.0, 10.0), 2.5);
        assert_eq!(op_pre(Op::PreMulSum, 0.5, 3.0), 1.5);
    }
}
