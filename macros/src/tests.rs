//! The attribute without a compiler: signatures to specs, every rejection's
//! message, and snapshots of two expansions (in the top-level `snapshots/`,
//! `macro_*`; update with `INSTA_UPDATE=always cargo test -p redjit-macros`, then
//! read the diff). Where each error points is checked by the trybuild cases in
//! `tests/ui/` of the redjit package.

use proc_macro2::TokenStream;
use quote::quote;
use redjit_codegen::{KernelSpec, ReduceCopySpec};

use crate::ast::{Args, Item};
use crate::{expand, valid};

fn check(args: TokenStream, item: TokenStream) -> syn::Result<ReduceCopySpec> {
    let item: Item = syn::parse2(item)?;
    let args = Args::parse(args)?;
    valid::check(&args, &item).map(|c| c.spec)
}

fn name(args: TokenStream, item: TokenStream) -> String {
    match check(args, item) {
        Ok(spec) => spec.name(),
        Err(e) => panic!("rejected: {e}"),
    }
}

fn error(args: TokenStream, item: TokenStream) -> String {
    match check(args, item) {
        Ok(spec) => panic!("accepted as {}", spec.name()),
        Err(e) => e
            .into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// The expansion as Rust source, as a reader sees it.
fn pretty(args: TokenStream, item: TokenStream) -> String {
    let out = expand::reduce_copy(args, item);
    let file: syn::File = syn::parse2(out).expect("the expansion parses as a file");
    prettyplease::unparse(&file)
}

#[test]
fn the_signature_is_the_configuration() {
    // The canonical PAT step: volatile bf16 + read-only f32 -> bf16, SR.
    assert_eq!(
        name(
            quote!(unroll = 4, rounding = stochastic, read_only(input)),
            quote!(
                fn f(recv: &[bf16], input: &[f32], send: &mut [bf16]);
            )
        ),
        "reduce_copy_u4_f32_bf16_Ta_T_sum_sr"
    );
    // Defaults: unroll 4, sum, nearest, volatile; no transport buffer -> bf16.
    assert_eq!(
        name(
            quote!(),
            quote!(
                fn f(a: &[f32], b: &[f32], c: &mut [f32]);
            )
        ),
        "reduce_copy_u4_f32_bf16_AA_A_sum_rn"
    );
    // Paths, f16, string values, slugs, two destinations, sources after a destination.
    assert_eq!(
        name(
            quote!(unroll = 8, op = "premulsum", rounding = sr, read_only(b)),
            quote!(
                pub(crate) fn f(
                    a: &[half::f16],
                    out: &mut [::half::f16],
                    b: &[f32],
                    acc: &mut [f32],
                );
            )
        ),
        "reduce_copy_u8_f32_f16_Ta_TA_premulsum_sr"
    );
    assert_eq!(
        name(
            quote!(unroll = 1, op = max, rounding = rn),
            quote!(
                fn f(a: &[bf16], out: &mut [bf16]);
            )
        ),
        "reduce_copy_u1_f32_bf16_T_T_max_rn"
    );
    let eight = quote!(
        fn f(
            a: &[f32],
            b: &[f32],
            c: &[f32],
            d: &[f32],
            e: &[f32],
            g: &[f32],
            h: &[f32],
            i: &[bf16],
            o: &mut [bf16],
        );
    );
    assert_eq!(
        name(quote!(op = avg, read_only(a, i)), eight),
        "reduce_copy_u4_f32_bf16_aAAAAAAt_T_avg_rn"
    );
}

#[test]
fn validate_rejects_with_the_runtime_messages() {
    assert_eq!(
        error(
            quote!(unroll = 3),
            quote!(
                fn f(a: &[f32], o: &mut [f32]);
            )
        ),
        "invalid unroll = 3: must be one of 1, 2, 4, 8"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[f32], b: &[bf16]);
            )
        ),
        "invalid dsts = 0 destinations: a reduce_copy has at least 1 and at most 2 destination(s) (destinations are the `&mut [T]` parameters)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(o: &mut [f32]);
            )
        ),
        "invalid srcs = 0 sources: a reduce_copy has at least 1 and at most 8 source(s) (sources are the `&[T]` parameters)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(
                    a: &[f32],
                    b: &[f32],
                    c: &[f32],
                    d: &[f32],
                    e: &[f32],
                    g: &[f32],
                    h: &[f32],
                    i: &[f32],
                    j: &[f32],
                    o: &mut [f32],
                );
            )
        ),
        "invalid srcs = 9 sources: a reduce_copy has at least 1 and at most 8 source(s) (sources are the `&[T]` parameters)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[f32], o: &mut [f32], p: &mut [f32], q: &mut [f32]);
            )
        ),
        "invalid dsts = 3 destinations: a reduce_copy has at least 1 and at most 2 destination(s) (destinations are the `&mut [T]` parameters)"
    );
    assert_eq!(
        error(
            quote!(rounding = stochastic),
            quote!(
                fn f(a: &[bf16], o: &mut [f32]);
            )
        ),
        "invalid rounding = sr: stochastic rounding needs a transport-typed destination to round to (round to nearest with rounding = nearest)"
    );
}

#[test]
fn arguments_are_checked_one_by_one() {
    let sig = || {
        quote!(
            fn f(a: &[f32], o: &mut [f32]);
        )
    };
    assert_eq!(
        error(quote!(op = mean), sig()),
        "cannot parse op \"mean\": expected one of: sum, prod, min, max, premulsum, avg"
    );
    assert_eq!(
        error(quote!(rounding = up), sig()),
        "unknown rounding `up`: expected one of: nearest (or rn), stochastic (or sr)"
    );
    assert_eq!(
        error(quote!(unrol = 4), sig()),
        "unknown argument `unrol`: expected one of: unroll, op, rounding, read_only"
    );
    assert_eq!(
        error(quote!(unroll = 4, unroll = 2), sig()),
        "duplicate argument `unroll`"
    );
    assert_eq!(
        error(quote!(unroll = four), sig()),
        "unroll takes an integer literal, one of: 1, 2, 4, 8"
    );
    assert_eq!(
        error(quote!(read_only(o)), sig()),
        "`o` is a destination (`&mut`); read_only lists sources"
    );
    assert_eq!(
        error(quote!(read_only(x)), sig()),
        "no source parameter named `x`"
    );
    assert_eq!(error(quote!(read_only(a, a)), sig()), "`a` is listed twice");
}

#[test]
fn signatures_are_checked_and_independent_mistakes_reported_together() {
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[f64], o: &mut [u8]);
            )
        ),
        "unsupported element type `f64`: expected one of: f32 (accumulator), bf16 (transport), f16 (transport) | unsupported element type `u8`: expected one of: f32 (accumulator), bf16 (transport), f16 (transport)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[bf16], b: &[f16], o: &mut [bf16]);
            )
        ),
        "a reduce_copy has one transport type: `a` is bf16, so `b` cannot be f16"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[f32], o: &mut [f32]) {}
            )
        ),
        "write the signature only, ending in `;`: #[reduce_copy] generates the body"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(a: &[f32], o: &mut [f32]) -> u32;
            )
        ),
        "write no return type: the launcher returns `redjit::Result<()>`"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                async unsafe fn f<T>(a: &[T], o: &mut [f32]);
            )
        ),
        "a #[reduce_copy] launcher is a plain `fn`, not `async` | a #[reduce_copy] launcher is a plain `fn`, not `unsafe`: the launcher is safe to call | a #[reduce_copy] signature takes no generic parameters: its element types are the kernel's configuration | unsupported element type `T`: expected one of: f32 (accumulator), bf16 (transport), f16 (transport)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(stream: &[f32], a: Vec<f32>, (b, c): &[f32], o: &mut f32);
            )
        ),
        "`stream` is a parameter of the generated launcher (rt, stream, scalar, sr); give this buffer another name | `a` is not a buffer: a source is `name: &[T]`, a destination `name: &mut [T]`, with T one of: f32 (accumulator), bf16 (transport), f16 (transport) | a buffer parameter is a plain name, e.g. `input: &[f32]` | `o` is not a slice: a source is `name: &[T]`, a destination `name: &mut [T]`, with T one of: f32 (accumulator), bf16 (transport), f16 (transport)"
    );
    assert_eq!(
        error(
            quote!(),
            quote!(
                fn f(#[nc] a: &[f32], o: &mut [f32]);
            )
        ),
        "attributes on parameters are not supported; mark read-only sources with read_only(name) in #[reduce_copy(...)]"
    );
}

#[test]
fn an_error_expands_to_one_compile_error_and_a_stub_of_the_same_name() {
    let out = pretty(
        quote!(unroll = 3, rounding = sr),
        quote!(
            pub fn step(a: &[bf16], o: &mut [bf16]);
        ),
    );
    assert_eq!(out.matches("compile_error!").count(), 1, "{out}");
    assert!(out.contains("pub fn step("), "{out}");
    assert!(out.contains("sr: ::redjit::Stochastic"), "{out}");
    assert!(
        !out.contains("distributed_slice"),
        "a rejected spec is not registered: {out}"
    );
}

/// Snapshot settings: the top-level directory, `macro_`-prefixed names.
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => "../../snapshots",
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn expansion_of_a_stochastic_quantize_step() {
    let out = pretty(
        quote!(unroll = 4, rounding = stochastic, read_only(input)),
        quote! {
            /// PAT ReduceScatterQuantize.
            pub fn quantize_step(recv: &[bf16], input: &[f32], send: &mut [bf16]);
        },
    );
    assert!(
        out.contains("\"reduce_copy_u4_f32_bf16_Ta_T_sum_sr\""),
        "{out}"
    );
    snapshot!("macro_expand_quantize_step", out);
}

#[test]
fn expansion_of_an_average_with_two_destinations() {
    let out = pretty(
        quote!(op = avg, unroll = 2),
        quote! {
            fn average(a: &[half::f16], b: &[f32], out: &mut [f32], copy: &mut [half::f16]);
        },
    );
    assert!(
        out.contains("\"reduce_copy_u2_f32_f16_TA_AT_avg_rn\""),
        "{out}"
    );
    assert!(out.contains("scalar: f32"), "{out}");
    snapshot!("macro_expand_average", out);
}
