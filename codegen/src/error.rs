//! The one error type of redjit-codegen.

use crate::arch::Arch;

/// Why a spec was rejected, or could not be rendered.
///
/// ```
/// use redjit_codegen::{KernelSpec, ReduceCopySpec, SpecError};
///
/// let spec = ReduceCopySpec { unroll: 3, ..ReduceCopySpec::default() };
/// let err = spec.validate().unwrap_err();
/// assert!(matches!(err, SpecError::Invalid { field: "unroll", .. }));
/// assert!(err.to_string().starts_with("invalid unroll = 3"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A field holds a value the kernel family does not accept.
    #[error("invalid {field} = {value}: {rule}")]
    Invalid {
        /// The spec field (or macro argument) holding the value.
        field: &'static str,
        /// The rejected value, as text.
        value: String,
        /// The rule it breaks, e.g. "expected one of: 1, 2, 4, 8".
        rule: String,
    },
    /// A kernel name (or a flag) could not be parsed back into a spec.
    #[error("cannot parse {what} {input:?}: {rule}")]
    Parse {
        /// What was being parsed ("kernel name", "dtype", "arch", ...).
        what: &'static str,
        /// The text that did not parse.
        input: String,
        /// What was expected instead.
        rule: String,
    },
    /// The configuration is valid but needs a newer GPU than the target.
    #[error("{what} is not supported on {arch}: it needs {needs} or newer")]
    Unsupported {
        /// The kernel (its name) or feature that cannot run.
        what: String,
        /// The target it was asked for.
        arch: Arch,
        /// The oldest architecture that runs it.
        needs: Arch,
    },
    /// A tuning table could not be read, or a row of it names a strategy
    /// that makes no valid kernel.
    #[error("{file}:{line}: {rule}")]
    Table {
        /// The table (a shipped table's name, or the file's path).
        file: String,
        /// The 1-based line of the offending row (0: the table as a whole).
        line: usize,
        /// What is wrong, naming the value and the rule.
        rule: String,
    },
    /// The template engine failed; a bug in redjit, not in the caller's spec.
    #[error("rendering template {template} failed: {message}")]
    Render {
        /// The template (file name under `templates/`) that failed.
        template: String,
        /// tera's message, with its causes.
        message: String,
    },
}

impl SpecError {
    pub(crate) fn invalid(
        field: &'static str,
        value: impl ToString,
        rule: impl Into<String>,
    ) -> Self {
        SpecError::Invalid {
            field,
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

/// Most characters of a caller's text an error repeats.
const ECHO_MAX: usize = 120;

/// `input` as an error repeats it: whole up to `ECHO_MAX` characters, else
/// its start and its length.
pub fn echo(input: &str) -> String {
    match input.char_indices().nth(ECHO_MAX) {
        None => input.to_string(),
        Some((end, _)) => format!("{}... ({} bytes in all)", &input[..end], input.len()),
    }
}
