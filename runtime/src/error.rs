//! The one error type of redjit-runtime. Every message names the offending value
//! and the rule it broke.

use redjit_codegen::SpecError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The spec was rejected or cannot run on this GPU (before NVRTC saw it).
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// NVRTC rejected generated source: a redjit bug; the log, the options and
    /// the source are all here to report it.
    #[error(
        "[Compilation Error] NVRTC failed on {name} with options {options:?}:\n{log}\n[Source]\n{source_code}"
    )]
    Compile {
        name: String,
        options: Vec<String>,
        log: String,
        source_code: String,
    },

    /// The NVRTC library could not be loaded or queried.
    #[error(
        "NVRTC is not available: {0}. Install the CUDA toolkit's NVRTC (or `pip install nvidia-cuda-nvrtc==13.0.88`) and put its lib folder on LD_LIBRARY_PATH"
    )]
    NvrtcUnavailable(String),

    /// No usable GPU: no driver library, no device, or the context failed.
    #[error("no CUDA GPU: {0}")]
    NoGpu(String),

    /// A CUDA driver call failed (device faults surface here).
    #[error("CUDA driver error in {during}: {source}")]
    Driver {
        during: String,
        #[source]
        source: cudarc::driver::DriverError,
    },

    /// A call with arguments the kernel cannot run on.
    #[error("invalid launch of {kernel}: {what} = {value}: {rule}")]
    Launch {
        kernel: String,
        what: &'static str,
        value: String,
        rule: String,
    },

    /// A communicator (all-reduce) setup or call that cannot work as asked.
    #[error("communicator: {what}: {rule}")]
    Comm { what: String, rule: String },

    /// A communicator whose barrier timed out (or whose setup failed half-way):
    /// every call is refused until it is rebuilt.
    #[error("communicator is broken: {reason}; rebuild it")]
    Broken { reason: String },

    /// The compile cache's directory could not be used at all.
    #[error("compile cache at {path}: {message}")]
    Cache { path: String, message: String },
}

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
