//! Code generation: the launcher, its registration, and (on error) a stub with
//! the same name so that callers see the one real error, not a cascade.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use redjit_codegen::{KernelSpec, Rounding};
use syn::spanned::Spanned as _;

use crate::ast::{Args, Item};
use crate::valid::{self, Checked, Dir};

/// parse -> validate -> expand; an error becomes `compile_error!` plus a stub.
pub fn reduce_copy(args: TokenStream, item: TokenStream) -> TokenStream {
    let item: Item = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => return e.to_compile_error(),
    };
    let args = Args::parse(args);
    let checked = args
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|args| valid::check(args, &item));
    match checked {
        Ok(checked) => launcher(&item, &checked),
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(stub(&item, args.ok().as_ref()));
            out
        }
    }
}

/// Launcher parameters that depend on the spec: the op's scalar, the SR seed.
fn extra_params(checked: &Checked) -> (TokenStream, TokenStream, TokenStream) {
    let spec = &checked.spec;
    let (scalar_param, scalar_arg) = match spec.op.info().scalar {
        Some(_) => (
            quote!(scalar: f32,),
            quote!(::core::option::Option::Some(scalar)),
        ),
        None => (quote!(), quote!(::core::option::Option::None)),
    };
    let (sr_param, sr_arg) = match spec.rounding {
        Rounding::Stochastic => (
            quote!(sr: ::redjit::Stochastic,),
            quote!(::core::option::Option::Some(sr)),
        ),
        Rounding::Nearest => (quote!(), quote!(::core::option::Option::None)),
    };
    (quote!(#scalar_param #sr_param), scalar_arg, sr_arg)
}

fn launcher(item: &Item, checked: &Checked) -> TokenStream {
    let Item {
        attrs, vis, sig, ..
    } = item;
    let ident = &sig.ident;
    let spec = &checked.spec;
    let kernel = spec.name();
    let (extra, scalar_arg, sr_arg) = extra_params(checked);

    let params = checked.buffers.iter().map(|b| {
        let (name, elem) = (&b.name, &b.elem);
        match b.dir {
            Dir::Src => quote!(#name: &impl ::redjit::SrcBuffer<#elem>),
            Dir::Dst => quote!(#name: &mut impl ::redjit::DstBuffer<#elem>),
        }
    });
    let srcs = checked
        .buffers
        .iter()
        .filter(|b| b.dir == Dir::Src)
        .map(|b| &b.name);
    let dsts = checked
        .buffers
        .iter()
        .filter(|b| b.dir == Dir::Dst)
        .map(|b| &b.name);
    // A type named `bf16` that is not half::bf16 (an alias, another crate's
    // type) would otherwise reach the launcher's run-time dtype check.
    let dtype_checks = checked.buffers.iter().map(|b| {
        let elem = &b.elem;
        let variant = variant(b.dtype);
        let message = format!(
            "#[reduce_copy]: `{}` is a buffer of {}, so its element type must be the host type redjit maps to {1} (f32, half::bf16, half::f16)",
            b.name, b.dtype
        );
        // Spanned at the type, so a failure points at it.
        quote_spanned! {elem.span()=>
            ::core::assert!(
                ::core::matches!(<#elem as ::redjit::DeviceElem>::DTYPE, ::redjit::DType::#variant),
                #message
            );
        }
    });

    let unroll = spec.unroll;
    let accum = variant(spec.accum);
    let transport = variant(spec.transport);
    let src_consts = spec.srcs.iter().map(|s| {
        let role = variant(s.role);
        let load = variant(s.load);
        quote!(::redjit::Src { role: ::redjit::Role::#role, load: ::redjit::Load::#load })
    });
    let dst_consts = spec.dsts.iter().map(|&r| {
        let role = variant(r);
        quote!(::redjit::Role::#role)
    });
    let op = variant(spec.op);
    let rounding = variant(spec.rounding);
    let fn_name = ident.to_string();
    let doc_kernel = format!(" Launches `{kernel}`, declared by `#[redjit::reduce_copy]`.");
    let doc_args = match (spec.op.info().scalar, spec.rounding) {
        (Some(meaning), Rounding::Stochastic) => {
            format!(" `scalar`: {meaning}; `sr`: the stochastic-rounding seed and base offset.")
        }
        (Some(meaning), Rounding::Nearest) => format!(" `scalar`: {meaning}."),
        (None, Rounding::Stochastic) => {
            " `sr`: the stochastic-rounding seed and base offset.".to_string()
        }
        (None, Rounding::Nearest) => String::new(),
    };

    // A blank line between the caller's docs and the generated paragraph.
    let separator = attrs
        .iter()
        .any(|a| a.path().is_ident("doc"))
        .then(|| quote!(#[doc = ""]));
    quote! {
        #(#attrs)*
        #separator
        #[doc = #doc_kernel]
        #[doc = " `rt` compiles it (once, at `redjit::prepare_registered` or on the first call) and"]
        #[doc = " `stream` (of `rt`'s context) runs it; every buffer has the same length."]
        #[doc = #doc_args]
        #[allow(clippy::too_many_arguments)]
        #vis fn #ident(
            rt: &::redjit::Runtime,
            stream: &::std::sync::Arc<::redjit::cudarc::driver::CudaStream>,
            #(#params,)*
            #extra
        ) -> ::redjit::Result<()> {
            static __REDJIT_KERNEL: ::redjit::RegisteredReduceCopy = ::redjit::RegisteredReduceCopy::new(
                ::core::concat!(::core::module_path!(), "::", #fn_name),
                #kernel,
                ::redjit::StaticReduceCopy {
                    unroll: #unroll,
                    accum: ::redjit::DType::#accum,
                    transport: ::redjit::DType::#transport,
                    srcs: &[#(#src_consts),*],
                    dsts: &[#(#dst_consts),*],
                    op: ::redjit::Op::#op,
                    rounding: ::redjit::Rounding::#rounding,
                },
            );
            #[::redjit::__private::linkme::distributed_slice(::redjit::__private::REDUCE_COPY)]
            #[linkme(crate = ::redjit::__private::linkme)]
            static __REDJIT_REGISTERED: &::redjit::RegisteredReduceCopy = &__REDJIT_KERNEL;
            const _: () = {
                #(#dtype_checks)*
            };
            __REDJIT_KERNEL.launch(
                rt,
                stream,
                &[#(#srcs),*],
                &mut [#(#dsts),*],
                ::redjit::ReduceCopyArgs { scalar: #scalar_arg, stochastic: #sr_arg },
            )
        }
    }
}

/// A registry value's variant name (`DType::BF16` -> `BF16`).
fn variant(value: impl std::fmt::Debug) -> Ident {
    format_ident!("{value:?}")
}

/// Best effort after an error: a function of the same name whose parameters take
/// anything, so that call sites raise no second error. It never runs: the
/// crate does not compile.
fn stub(item: &Item, args: Option<&Args>) -> TokenStream {
    let Item {
        attrs, vis, sig, ..
    } = item;
    let ident = &sig.ident;
    let params = sig.inputs.iter().filter_map(|arg| {
        let syn::FnArg::Typed(p) = arg else {
            return None;
        };
        let syn::Pat::Ident(name) = &*p.pat else {
            return None;
        };
        let name = &name.ident;
        Some(match &*p.ty {
            syn::Type::Reference(r) if r.mutability.is_some() => {
                quote!(#name: &mut impl ?::core::marker::Sized)
            }
            _ => quote!(#name: &impl ?::core::marker::Sized),
        })
    });
    // The op's scalar and the SR seed, if the arguments ask for them.
    let word = |w: Option<&crate::ast::Spanned<String>>| w.map(|w| w.value.to_lowercase());
    let op = args.and_then(|a| word(a.op.as_ref()));
    let rounding = args.and_then(|a| word(a.rounding.as_ref()));
    let scalar = op
        .and_then(|o| o.parse::<redjit_codegen::Op>().ok())
        .and_then(|o| o.info().scalar)
        .map(|_| quote!(scalar: f32,));
    let sr = rounding
        .filter(|r| r == "stochastic" || r == Rounding::Stochastic.slug())
        .map(|_| quote!(sr: ::redjit::Stochastic,));
    // The parameter types, named once so their imports stay used (no
    // "unused import" warning on top of the error); not where they would name
    // generic parameters the stub does not declare.
    let types = sig
        .generics
        .params
        .is_empty()
        .then(|| {
            sig.inputs.iter().filter_map(|arg| match arg {
                syn::FnArg::Typed(p) => Some(&*p.ty),
                syn::FnArg::Receiver(_) => None,
            })
        })
        .into_iter()
        .flatten();
    let docs = attrs.iter().filter(|a| a.path().is_ident("doc"));
    quote! {
        #(#docs)*
        #[allow(unused_variables, clippy::too_many_arguments)]
        #vis fn #ident(
            rt: &::redjit::Runtime,
            stream: &::std::sync::Arc<::redjit::cudarc::driver::CudaStream>,
            #(#params,)*
            #scalar
            #sr
        ) -> ::redjit::Result<()> {
            let _: ::core::marker::PhantomData<(#(#types,)*)>;
            ::core::unreachable!()
        }
    }
}
