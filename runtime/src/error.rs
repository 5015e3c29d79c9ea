//! The one error type of redjit-runtime. Every message names the offending value
//! and the rule it broke.
//!
//! ```
//! use redjit_runtime::{Error, ReduceCopySpec};
//!
//! let err: Error = "reduce_copy_u3_f32_bf16_TA_T_sum_rn".parse::<ReduceCopySpec>().unwrap_err().into();
//! assert!(matches!(err, Error::Spec(_)));
//! assert!(err.to_string().contains("unroll"), "{err}");
//! ```

use redjit_codegen::SpecError;

/// Everything the runtime can fail with: a rejected spec, NVRTC, the driver, a
/// bad launch, a communicator, the cache.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The spec was rejected or cannot run on this GPU (before NVRTC saw it).
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// NVRTC rejected generated source (a redjit bug), or the options (an
    /// architecture this NVRTC lacks): the log, the options and the source
    /// are all here to report it. The message leaves the source out (`redjit
    /// gen --spec <kernel>` prints a kernel's).
    #[error(
        "[Compilation Error] NVRTC failed on {name} with options {options:?}: {} ({} lines of generated source in the error's source_code)",
        log.trim(),
        source_code.lines().count()
    )]
    Compile {
        /// The kernel (or batch) name.
        name: String,
        /// The NVRTC options it was compiled with.
        options: Vec<String>,
        /// NVRTC's program log.
        log: String,
        /// The whole generated source.
        source_code: String,
    },

    /// The NVRTC library could not be loaded or queried.
    #[error(
        "NVRTC is not available: {0}. Install the CUDA toolkit's NVRTC (or `pip install nvidia-cuda-nvrtc==13.0.88`) and put its lib folder on LD_LIBRARY_PATH"
    )]
    NvrtcUnavailable(String),

    /// An NVRTC call other than a compile failed (through cudarc, `?`).
    #[error("NVRTC call failed: {0}")]
    Nvrtc(String),

    /// No usable GPU: no driver library, no device, or the context failed.
    #[error("no CUDA GPU: {0}")]
    NoGpu(String),

    /// A CUDA driver call failed (device faults surface here).
    #[error("CUDA driver error in {during}: {source}")]
    Driver {
        /// What redjit was doing (`"launching <kernel>"`, `"loading module"`, ...).
        during: String,
        /// The driver's error code.
        #[source]
        source: cudarc::driver::DriverError,
    },

    /// A call with arguments the kernel cannot run on.
    #[error("invalid launch of {kernel}: {what} = {value}: {rule}")]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// The argument at fault (`"threads"`, `"dtype"`, `"length"`, ...).
        what: &'static str,
        /// Its value, as text.
        value: String,
        /// The rule it breaks.
        rule: String,
    },

    /// A communicator (all-reduce) setup or call that cannot work as asked.
    #[error("communicator: {what}: {rule}")]
    Comm {
        /// The setting or call at fault.
        what: String,
        /// The rule it breaks.
        rule: String,
    },

    /// A communicator whose barrier timed out (or whose setup failed half-way):
    /// every call is refused until it is rebuilt.
    #[error("communicator is broken: {reason}; rebuild it")]
    Broken {
        /// What broke it (the timed-out barrier, the failed step).
        reason: String,
    },

    /// The NCCL library could not be found, opened, or lacks a call the NCCL
    /// backend makes (see [`crate::all_reduce::nccl`]).
    #[error(
        "NCCL is not available: {reason}; tried: {}. Set REDJIT_NCCL_LIB to the library (or its folder), e.g. PyTorch's site-packages/nvidia/nccl/lib/libnccl.so.2, or put that folder on LD_LIBRARY_PATH",
        tried.join("; ")
    )]
    NcclUnavailable {
        /// Every path or name tried, each with why it failed.
        tried: Vec<String>,
        /// What is missing.
        reason: String,
    },

    /// An NCCL call failed.
    #[error("NCCL error in {during}: {name} ({code}): {message}")]
    Nccl {
        /// What redjit was doing (`"ncclAllReduce on rank 1"`, ...).
        during: String,
        /// The `ncclResult_t` value.
        code: u32,
        /// Its name (`ncclInvalidUsage`, ...).
        name: String,
        /// NCCL's error string and, where it has one, its last error message.
        message: String,
    },

    /// The compile cache's directory could not be used at all.
    #[error("compile cache at {path}: {message}")]
    Cache {
        /// The cache directory.
        path: String,
        /// What went wrong there.
        message: String,
    },
}

impl Error {
    /// The refusals of one kernel's launch checks: `err(what, value, rule)` is
    /// an [`Error::Launch`] naming `kernel()`, which only a refusal evaluates (a
    /// kernel name is a formatted string; a valid launch builds none).
    pub(crate) fn launch_of<'a>(
        kernel: impl Fn() -> String + 'a,
    ) -> impl Fn(&'static str, String, String) -> Error + 'a {
        move |what, value, rule| Error::Launch {
            kernel: kernel(),
            what,
            value,
            rule,
        }
    }
}

/// A driver error from the caller's own cudarc calls (`?` in a function that
/// returns this crate's [`Result`]); redjit's own calls say what they were
/// doing instead.
impl From<cudarc::driver::DriverError> for Error {
    fn from(source: cudarc::driver::DriverError) -> Error {
        Error::Driver {
            during: "a CUDA driver call".into(),
            source,
        }
    }
}

/// `?` on cudarc's NVRTC calls (a program the caller compiles through cudarc,
/// beside redjit's kernels): a refused compile keeps its log and options.
impl From<cudarc::nvrtc::CompileError> for Error {
    fn from(e: cudarc::nvrtc::CompileError) -> Error {
        match e {
            cudarc::nvrtc::CompileError::CompileError { options, log, .. } => Error::Compile {
                name: "a program compiled through cudarc's NVRTC".into(),
                options,
                log: log.to_string_lossy().into_owned(),
                source_code: String::new(),
            },
            other => Error::Nvrtc(format!("{other}")),
        }
    }
}

impl From<cudarc::nvrtc::result::NvrtcError> for Error {
    fn from(e: cudarc::nvrtc::result::NvrtcError) -> Error {
        Error::Nvrtc(format!("{e:?}"))
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches what was being done to a driver error.
pub(crate) trait DriverContext<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DriverContext<T> for Result<T, cudarc::driver::DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Driver {
            during: what(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::{DriverError, sys::CUresult};

    #[test]
    fn a_callers_driver_error_converts_with_question_mark() {
        fn caller() -> Result<()> {
            Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE))?;
            Ok(())
        }
        // (Displaying a driver error asks the driver for its text: not here.)
        match caller().unwrap_err() {
            Error::Driver { during, source } => {
                assert_eq!(during, "a CUDA driver call");
                assert_eq!(source.0, CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            e => panic!("not a driver error: {e:?}"),
        }
    }

    #[test]
    fn a_callers_nvrtc_errors_convert_with_question_mark() {
        use cudarc::nvrtc::result::NvrtcError;
        use cudarc::nvrtc::sys::nvrtcResult;
        fn compile() -> Result<()> {
            Err(cudarc::nvrtc::CompileError::CompileError {
                nvrtc: NvrtcError(nvrtcResult::NVRTC_ERROR_COMPILATION),
                options: vec!["--std=c++17".into()],
                log: std::ffi::CString::new("error: expected a ;").unwrap(),
            })?;
            Ok(())
        }
        match compile().unwrap_err() {
            Error::Compile { options, log, .. } => {
                assert_eq!(options, ["--std=c++17"]);
                assert_eq!(log, "error: expected a ;");
            }
            e => panic!("not a compile error: {e:?}"),
        }
        fn call() -> Result<()> {
            Err(NvrtcError(nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY))?;
            Ok(())
        }
        assert!(matches!(call().unwrap_err(), Error::Nvrtc(m) if m.contains("OUT_OF_MEMORY")));
    }
}
