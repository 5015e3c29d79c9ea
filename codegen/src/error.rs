//! The one error type of redjit-codegen.

use crate::registry::Arch;

/// Why a spec was rejected, or could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A field holds a value the kernel family does not accept.
    #[error("invalid {field} = {value}: {rule}")]
    Invalid {
        field: &'static str,
        value: String,
        rule: String,
    },
    /// A kernel name (or a flag) could not be parsed back into a spec.
    #[error("cannot parse {what} {input:?}: {rule}")]
    Parse {
        what: &'static str,
        input: String,
        rule: String,
    },
    /// The configuration is valid but needs a newer GPU than the target.
    #[error("{what} is not supported on {arch}: it needs {needs} or newer")]
    Unsupported {
        what: String,
        arch: Arch,
        needs: Arch,
    },
    /// The template engine failed; a bug in redjit, not in the caller's spec.
    #[error("rendering template {template} failed: {message}")]
    Render { template: String, message: String },
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
