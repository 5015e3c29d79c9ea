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
            redjit_runtime::Error::Compile {
                name,
                log,
                source_code,
                ..
            } => CliError::Failure(compile_failure(&name, &log, &source_code)),
            other => CliError::Failure(other.to_string()),
        }
    }
}

/// A refused compile as one cause line, NVRTC's log after it, and the
/// generated source written to a file the message names (never printed).
fn compile_failure(name: &str, log: &str, source: &str) -> String {
    let stem: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(100)
        .collect();
    let path = std::env::temp_dir().join(format!("redjit-{stem}.cu"));
    let saved = match std::fs::write(&path, source) {
        Ok(()) => format!("the source is in {}", path.display()),
        Err(e) => format!("its source could not be written to {}: {e}", path.display()),
    };
    format!("NVRTC refused {name} ({saved}); its log:\n{}", log.trim())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_compile_names_the_file_its_source_is_in() {
        let e = CliError::from(redjit_runtime::Error::Compile {
            name: "norm_test_kernel".into(),
            options: vec!["--std=c++17".into()],
            log: "x.cu(3): error: expected a \";\"\n".into(),
            source_code: "extern \"C\" __global__ void k() {}\n".repeat(500),
        });
        assert_eq!(e.exit_code(), 1);
        let msg = e.to_string();
        let first = msg.lines().next().unwrap();
        assert!(
            first.starts_with("NVRTC refused norm_test_kernel (the source is in "),
            "{msg}"
        );
        assert!(msg.ends_with("expected a \";\""), "{msg}");
        assert!(!msg.contains("__global__"), "the source is not printed");
        let path = std::env::temp_dir().join("redjit-norm_test_kernel.cu");
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 500);
        let _ = std::fs::remove_file(path);
    }
}
