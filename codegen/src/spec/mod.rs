//! Kernel specs: plain Rust values that describe one kernel configuration.

pub mod all_reduce;
pub mod nms;
pub mod norm;
pub mod reduce;
pub mod reduce_copy;
pub mod softmax_all;

use crate::error::SpecError;
use crate::registry::{Arch, Family};
use crate::render::KernelSource;

/// What every kernel family's spec offers the runtime, the macro and the CLI.
pub trait KernelSpec {
    /// The family this spec belongs to.
    fn family(&self) -> Family;

    /// The single place where a configuration is accepted or rejected.
    fn validate(&self) -> Result<(), SpecError>;

    /// The deterministic, readable kernel name (also the CUDA symbol).
    fn name(&self) -> String;

    /// Oldest GPU the generated code runs on.
    fn min_arch(&self) -> Arch;

    /// Shared device code the kernel needs (family preludes, then the dtype files
    /// of its buffers), in the order it must appear. By default the family's.
    fn preludes(&self) -> Vec<&'static str> {
        self.family().info().preludes.to_vec()
    }

    /// Validates, then renders the family template alone: the kernel and its
    /// helpers (in a namespace of the kernel's own), without the preludes, so
    /// that several kernels can share one translation unit.
    fn render_body(&self) -> Result<String, SpecError>;

    /// Validates, then renders the whole CUDA source of this one kernel.
    fn render(&self) -> Result<KernelSource, SpecError> {
        crate::render::render_batch(&[&self])
    }

    /// Validates, then checks that `arch` can run this kernel; a typed error before
    /// NVRTC ever sees the source, never a missing symbol at load.
    fn check_arch(&self, arch: Arch) -> Result<(), SpecError> {
        self.validate()?;
        let needs = self.min_arch();
        if arch < needs {
            return Err(SpecError::Unsupported {
                what: self.name(),
                arch,
                needs,
            });
        }
        Ok(())
    }
}

/// A reference to a spec is a spec (so `prepare(&[&spec])` works).
impl<S: KernelSpec + ?Sized> KernelSpec for &S {
    fn family(&self) -> Family {
        (**self).family()
    }
    fn validate(&self) -> Result<(), SpecError> {
        (**self).validate()
    }
    fn name(&self) -> String {
        (**self).name()
    }
    fn min_arch(&self) -> Arch {
        (**self).min_arch()
    }
    fn preludes(&self) -> Vec<&'static str> {
        (**self).preludes()
    }
    fn render_body(&self) -> Result<String, SpecError> {
        (**self).render_body()
    }
    fn render(&self) -> Result<KernelSource, SpecError> {
        (**self).render()
    }
    fn check_arch(&self, arch: Arch) -> Result<(), SpecError> {
        (**self).check_arch(arch)
    }
}
