//! The compute capability kernels are built for. Its own module so that the
//! error types can name it without the registry (which parses it).

use std::fmt;

use serde::Serialize;

/// A compute capability, `sm_XY` as the number `10 * X + Y`.
///
/// ```
/// use redjit_codegen::Arch;
///
/// let arch: Arch = "sm_90".parse().unwrap();
/// assert_eq!(arch, Arch::SM90);
/// assert_eq!(Arch::from_compute_capability(8, 6).to_string(), "sm_86");
/// assert!(Arch::SM80 < Arch::SM90);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Arch(pub u32);

impl Arch {
    /// Ampere (A100): the oldest target of the bf16/f16 conversions and of
    /// `min.NaN` / `max.NaN`.
    pub const SM80: Arch = Arch(80);
    /// Ada (L4, L40): the oldest target of the fp8 conversions
    /// (`cvt.rn.f16x2.e4m3x2`, `cvt.rn.f16x2.e5m2x2`).
    pub const SM89: Arch = Arch(89);
    /// Hopper (H100, H200).
    pub const SM90: Arch = Arch(90);

    /// The arch of a device whose compute capability is `major.minor` (as the
    /// driver reports it); negative values count as 0.
    pub fn from_compute_capability(major: i32, minor: i32) -> Arch {
        Arch((major.max(0) as u32) * 10 + minor.max(0) as u32)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}
