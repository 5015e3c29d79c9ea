//! OCP FP8 (OFP8): the element types are the `float8` crate's (`F8E4M3`,
//! `F8E5M2`, device elements through cudarc's `f8` feature, as candle's are),
//! and the conversions that must match the GPU's, written from the format's
//! definition (no table): E4M3 has bias 7, no infinities, one NaN
//! pattern per sign (S.1111.111) and largest finite 448; E5M2 has bias 15 and
//! IEEE-754 semantics (S.11111.00 is infinity, S.11111.xx with xx != 0 NaN),
//! largest finite 57344. Both have subnormals (exponent field 0).
//!
//! ```
//! use redjit_runtime::fp8::{e4m3_rn, e5m2_rn};
//! use redjit_runtime::{F8E4M3, F8E5M2};
//!
//! assert_eq!(F8E4M3::from_bits(0x7e).to_f32(), 448.0);
//! assert!(F8E4M3::from_bits(0x7f).to_f32().is_nan());
//! assert_eq!(F8E5M2::from_bits(0x7c).to_f32(), f32::INFINITY);
//! assert_eq!(F8E5M2::from_bits(0x7b).to_f32(), 57344.0);
//! // Encoding rounds to nearest even; E4M3 saturates (as cvt's .satfinite).
//! assert_eq!(e4m3_rn(1000.0), F8E4M3::from_bits(0x7e));
//! assert_eq!(e5m2_rn(1e6), F8E5M2::from_bits(0x7c));
//! ```

pub use float8::{F8E4M3, F8E5M2};

/// One FP8 format: exponent and mantissa widths, bias, and its special values.
#[derive(Debug, Clone, Copy)]
struct Format {
    mant: u32,
    bias: i32,
    /// E5M2: the all-ones exponent holds infinities and NaNs (IEEE); E4M3:
    /// only S.1111.111 is NaN and the rest of that exponent is finite.
    ieee: bool,
    /// The largest finite magnitude's code (sign bit clear).
    max_code: u8,
}

const E4M3: Format = Format {
    mant: 3,
    bias: 7,
    ieee: false,
    max_code: 0x7e,
};
const E5M2: Format = Format {
    mant: 2,
    bias: 15,
    ieee: true,
    max_code: 0x7b,
};

impl Format {
    fn exp_max(self) -> u32 {
        (1 << (7 - self.mant)) - 1
    }

    /// Decodes through the f32 bit pattern (exact: every FP8 value is an f32):
    /// the tests hold float8's decoding to it.
    #[cfg(test)]
    fn decode(self, b: u8) -> f32 {
        let sign = u32::from(b >> 7) << 31;
        let e = (u32::from(b) >> self.mant) & self.exp_max();
        let m = u32::from(b) & ((1 << self.mant) - 1);
        if e == self.exp_max() && (self.ieee || m == (1 << self.mant) - 1) {
            return if self.ieee && m == 0 {
                f32::from_bits(sign | 0x7f80_0000)
            } else {
                f32::from_bits(sign | 0x7fc0_0000)
            };
        }
        let bits = if e == 0 {
            if m == 0 {
                0
            } else {
                // Subnormal: m 2^(1 - bias - mant), normalised for f32: the
                // leading one of m at bit p gives 2^(p + 1 - bias - mant).
                let p = 31 - m.leading_zeros();
                let exp = (p as i32 + 1 - self.bias - self.mant as i32 + 127) as u32;
                (exp << 23) | ((m & !(1 << p)) << (23 - p))
            }
        } else {
            let exp = (e as i32 - self.bias + 127) as u32;
            (exp << 23) | (m << (23 - self.mant))
        };
        f32::from_bits(sign | bits)
    }

    /// Rounds to nearest, ties to even. Past the largest finite value: E5M2
    /// rounds to infinity as IEEE does (from halfway to the next power of two
    /// on), E4M3 saturates to +-448 (as `cvt.rn.satfinite`); NaN is S.1111.111
    /// (E4M3) or S.11111.11 (E5M2).
    fn encode(self, x: f32) -> u8 {
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        if x.is_nan() {
            return 0x7f;
        }
        let a = f64::from(x.abs());
        if a == 0.0 {
            return sign;
        }
        let overflow = if self.ieee {
            sign | (self.max_code + 1)
        } else {
            sign | self.max_code
        };
        if a.is_infinite() {
            return overflow;
        }
        // The binade of a, no lower than the smallest normal's (subnormals share
        // its quantum).
        let min_exp = 1 - self.bias;
        let exp = ((a.to_bits() >> 52) as i32 - 1023).max(min_exp);
        let quantum = (f64::from(exp - self.mant as i32)).exp2();
        // Exact: a is an f32 and quantum a power of two.
        let q = a / quantum;
        let r = q.round_ties_even() as u32;
        // r in [0, 2^(mant + 1)]: a carry to 2^(mant + 1) moves to the next binade.
        let code = if r >= 1 << self.mant {
            let (exp, m) = if r == 1 << (self.mant + 1) {
                (exp + 1, 0)
            } else {
                (exp, r - (1 << self.mant))
            };
            let field = exp + self.bias;
            if field > self.exp_max() as i32 {
                return overflow;
            }
            ((field as u32) << self.mant) | m
        } else {
            r
        };
        if code > u32::from(self.max_code) {
            return overflow;
        }
        sign | code as u8
    }
}

/// `x` as E4M3 the way the GPU's `cvt.rn.satfinite` makes it: rounded to
/// nearest even, saturating to +-448; NaN gives 0x7f.
pub fn e4m3_rn(x: f32) -> F8E4M3 {
    F8E4M3::from_bits(E4M3.encode(x))
}

/// `x` as E5M2 the way the GPU's `cvt.rn` makes it: rounded to nearest even,
/// overflowing to +-infinity; NaN gives 0x7f.
pub fn e5m2_rn(x: f32) -> F8E5M2 {
    F8E5M2::from_bits(E5M2.encode(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format's definition as arithmetic: (-1)^s 2^(e - bias) (1 + m / 2^M),
    /// or 2^(1 - bias) (m / 2^M) for e = 0.
    fn formula(b: u8, mant: u32, bias: i32, ieee: bool) -> f64 {
        let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let emax = (1u32 << (7 - mant)) - 1;
        let e = (u32::from(b) >> mant) & emax;
        let m = u32::from(b) & ((1 << mant) - 1);
        let frac = f64::from(m) / f64::from(1u32 << mant);
        if e == emax {
            if ieee {
                return if m == 0 { s * f64::INFINITY } else { f64::NAN };
            }
            if m == (1 << mant) - 1 {
                return f64::NAN;
            }
        }
        if e == 0 {
            s * 2f64.powi(1 - bias) * frac
        } else {
            s * 2f64.powi(e as i32 - bias) * (1.0 + frac)
        }
    }

    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
    }

    #[test]
    fn every_code_decodes_as_the_formula_says() {
        for b in 0..=255u8 {
            // float8's decoding (the host types') and ours (the encoder's).
            assert!(same(f64::from(E4M3.decode(b)), formula(b, 3, 7, false)));
            assert!(same(f64::from(E5M2.decode(b)), formula(b, 2, 15, true)));
            let (e4, e5) = (F8E4M3::from_bits(b).to_f32(), F8E5M2::from_bits(b).to_f32());
            assert!(
                same(f64::from(e4), formula(b, 3, 7, false)),
                "e4m3 {b:#04x}: {e4}"
            );
            assert!(
                same(f64::from(e5), formula(b, 2, 15, true)),
                "e5m2 {b:#04x}: {e5}"
            );
        }
    }

    #[test]
    fn named_values() {
        assert_eq!(F8E4M3::from_bits(0x7e).to_f32(), 448.0);
        assert_eq!(F8E4M3::from_bits(0xfe).to_f32(), -448.0);
        assert!(
            F8E4M3::from_bits(0x7f).to_f32().is_nan() && F8E4M3::from_bits(0xff).to_f32().is_nan()
        );
        // E4M3's all-ones exponent is finite but for the NaN: 0x78 = 256.
        assert_eq!(F8E4M3::from_bits(0x78).to_f32(), 256.0);
        assert_eq!(F8E4M3::from_bits(0x38).to_f32(), 1.0);
        assert_eq!(F8E4M3::from_bits(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(F8E4M3::from_bits(0x08).to_f32(), 2f32.powi(-6));
        assert_eq!(
            F8E4M3::from_bits(0x80).to_f32().to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(F8E5M2::from_bits(0x7c).to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2::from_bits(0xfc).to_f32(), f32::NEG_INFINITY);
        assert_eq!(F8E5M2::from_bits(0x7b).to_f32(), 57344.0);
        assert!((0x7d..=0x7f).all(|b| F8E5M2::from_bits(b).to_f32().is_nan()));
        assert_eq!(F8E5M2::from_bits(0x3c).to_f32(), 1.0);
        assert_eq!(F8E5M2::from_bits(0x01).to_f32(), 2f32.powi(-16));
        assert_eq!(F8E5M2::from_bits(0x04).to_f32(), 2f32.powi(-14));
    }

    #[test]
    fn encoding_round_trips_and_rounds_to_nearest_even() {
        for b in 0..=255u8 {
            let x = F8E4M3::from_bits(b).to_f32();
            if !x.is_nan() {
                assert_eq!(e4m3_rn(x), F8E4M3::from_bits(b), "e4m3 {b:#04x}");
            }
            let y = F8E5M2::from_bits(b).to_f32();
            if !y.is_nan() {
                assert_eq!(e5m2_rn(y), F8E5M2::from_bits(b), "e5m2 {b:#04x}");
            }
        }
        // Halfway cases go to the even mantissa: 1 + 1/16 is between 1 (0x38)
        // and 1.125 (0x39) in E4M3; 1 + 3/16 between 1.125 and 1.25 (0x3a).
        assert_eq!(e4m3_rn(1.0625), F8E4M3::from_bits(0x38));
        assert_eq!(e4m3_rn(1.1875), F8E4M3::from_bits(0x3a));
        assert_eq!(e4m3_rn(1.07), F8E4M3::from_bits(0x39));
        // Subnormals and the carry into the normals.
        assert_eq!(e4m3_rn(2f32.powi(-10)), F8E4M3::from_bits(0x00));
        assert_eq!(e4m3_rn(1.5 * 2f32.powi(-9)), F8E4M3::from_bits(0x02));
        assert_eq!(e4m3_rn(7.5 * 2f32.powi(-9)), F8E4M3::from_bits(0x08));
        // Past the largest finite value.
        assert_eq!(e4m3_rn(470.0), F8E4M3::from_bits(0x7e));
        assert_eq!(e4m3_rn(-1e30), F8E4M3::from_bits(0xfe));
        assert_eq!(e4m3_rn(f32::INFINITY), F8E4M3::from_bits(0x7e));
        assert_eq!(e5m2_rn(61439.0), F8E5M2::from_bits(0x7b));
        assert_eq!(e5m2_rn(61440.0), F8E5M2::from_bits(0x7c));
        assert_eq!(e5m2_rn(f32::NEG_INFINITY), F8E5M2::from_bits(0xfc));
        assert!(e4m3_rn(f32::NAN).to_f32().is_nan());
        assert!(e5m2_rn(f32::NAN).to_f32().is_nan());
    }
}
