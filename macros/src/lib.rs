//! redjit-macros: `#[reduce_copy]`, a function signature that becomes a checked,
//! registered, typed reduce+copy launcher. Use it through the facade,
//! `#[redjit::reduce_copy(...)]`; its documentation and a compiled example are
//! there (the expansion names paths under `::redjit`).
//!
//! The attribute runs in three steps, each in its own file: `ast` parses the
//! arguments and the signature, `valid` turns them into a
//! `redjit_codegen::ReduceCopySpec` and checks it with `ReduceCopySpec::validate`
//! (the runtime's own check), `expand` writes the launcher.
//!
//! ```ignore
//! // In a crate that depends on `redjit` (this crate's own doctests cannot name it):
//! #[redjit::reduce_copy(unroll = 4, op = sum, rounding = nearest, read_only(input))]
//! pub fn accumulate(recv: &[redjit::half::bf16], input: &[f32], out: &mut [f32]);
//! ```

#![warn(missing_docs)]

mod ast;
mod expand;
mod valid;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Declares a reduce+copy kernel by its signature: `&[T]` parameters are the
/// sources, `&mut [T]` the destinations, `f32` is the accumulator type and
/// `bf16` / `f16` the transport type. The function becomes a launcher
/// `fn(rt, stream, buffers.., [scalar], [sr]) -> redjit::Result<()>`, its kernel
/// is checked at compile time and registered for `redjit::prepare_registered`.
///
/// Full syntax and a compiled example: the `redjit` crate's documentation of
/// `redjit::reduce_copy`.
#[proc_macro_attribute]
pub fn reduce_copy(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::reduce_copy(args.into(), item.into()).into()
}
