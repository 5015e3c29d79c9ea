//! redjit's errors as candle's.

/// A redjit error as a candle error, its message kept.
pub(crate) fn wrap(e: redjit_runtime::Error) -> candle_core::Error {
    candle_core::Error::wrap(e)
}
