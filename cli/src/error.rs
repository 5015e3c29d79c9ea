//! The CLI's error: a message and whether the user or the environment is at fault.

use std::fmt;

/// Exit code when there is no GPU (selftest: generation and compilation
/// passed, nothing ran).
pub const NO_GPU_EXIT: u8 = 3;

/// Why a command failed. `Usage` exits with 2 (bad input), `Failure` with 1.
#[derive(Debug)]
pub enum CliError {
    /// The input was wrong: a flag, a spec, a file given on the command line.
    Usage(String),
    /// The input was fine but the work failed: no GPU, no NVRTC, a driver error, I/O.
    Failure(String),
    /// `selftest` without a GPU: what could be checked passed (exit 3).
    NoGpu(String),
}

pub type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError::Usage(msg.into())
    }

    pub fn failure(msg: impl Into<String>) -> Self {
        CliError::Failure(msg.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failure(_) => 1,
            CliError::NoGpu(_) => NO_GPU_EXIT,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Failure(m) | CliError::NoGpu(m) => f.write_str(m),
        }
    }
}

impl From<redjit_codegen::SpecError> for CliError {
    fn from(e: redjit_codegen::SpecError) -> Self {
        CliError::Usage(e.to_string())
    }
}

impl From<redjit_runtime::Error> for CliError {
    fn from(e: redjit_runtime::Error) -> Self {
        match e {
            redjit_runtime::Error::Spec(e) => CliError::Usage(e.to_string()),
            other => CliError::Failure(other.to_string()),
        }
    }
}

/// Attaches what was being done to a CUDA driver error (a failure, exit 1).
pub trait DriverContext<T> {
    fn during(self, what: impl FnOnce() -> String) -> CliResult<T>;
}

impl<T> DriverContext<T> for Result<T, cudarc::driver::DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> CliResult<T> {
        self.map_err(|e| CliError::Failure(format!("CUDA driver error in {}: {e}", what())))
    }
}
