//! Meaning: the signature's buffers become a `ReduceCopySpec`, which
//! `ReduceCopySpec::validate` (the check the runtime and the CLI run) accepts or
//! rejects. Every error points at the token it is about.

use proc_macro2::Span;
use redjit_codegen::{DType, KernelSpec, Load, Op, ReduceCopySpec, Role, Rounding, SpecError, Src};
use syn::spanned::Spanned as _;
use syn::{FnArg, Ident, Pat, Type};

use crate::ast::{Args, Item};

/// Names the generated launcher gives its own parameters; a buffer may not use them.
pub const RESERVED: &[&str] = &["rt", "stream", "scalar", "sr"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// `&[T]`: read.
    Src,
    /// `&mut [T]`: written.
    Dst,
}

/// One buffer parameter, in signature order.
pub struct Buffer {
    pub name: Ident,
    pub dir: Dir,
    /// The element type as written (`bf16`, `half::bf16`).
    pub elem: Type,
    pub dtype: DType,
}

/// A signature that passed every check, and the spec it declares.
pub struct Checked {
    pub spec: ReduceCopySpec,
    pub buffers: Vec<Buffer>,
}

/// Collects errors so that independent mistakes are reported together.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        let e = syn::Error::new(span, message);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

/// "f32 (accumulator), bf16 (transport), f16 (transport)", from the registry.
fn element_types() -> String {
    DType::ALL
        .iter()
        .filter(|d| d.info().accum || d.info().transport)
        .map(|d| {
            let role = if d.info().accum {
                "accumulator"
            } else {
                "transport"
            };
            format!("{} ({role})", d.slug())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The signature's buffers; `Err` on anything that is not a plain `fn` of
/// `name: &[T]` / `name: &mut [T]` parameters.
pub fn buffers(item: &Item) -> syn::Result<Vec<Buffer>> {
    let sig = &item.sig;
    let mut errors = Errors::default();
    if let Some(body) = &item.body {
        errors.push(
            body.brace_token.span.join(),
            "write the signature only, ending in `;`: #[reduce_copy] generates the body",
        );
    }
    let plain_fn = "a #[reduce_copy] launcher is a plain `fn`";
    if let Some(t) = &sig.constness {
        errors.push(t.span, format!("{plain_fn}, not `const`"));
    }
    if let Some(t) = &sig.asyncness {
        errors.push(t.span, format!("{plain_fn}, not `async`"));
    }
    if let syn::Safety::Unsafe(t) = &sig.safety {
        errors.push(
            t.span,
            format!("{plain_fn}, not `unsafe`: the launcher is safe to call"),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.push(abi.span(), format!("{plain_fn}, with no ABI"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(
            sig.generics.span(),
            "a #[reduce_copy] signature takes no generic parameters: its element types are the kernel's configuration",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.push(
            v.dots.spans[0],
            "a #[reduce_copy] signature is not variadic",
        );
    }
    if let syn::ReturnType::Type(arrow, _) = &sig.output {
        errors.push(
            arrow.spans[0],
            "write no return type: the launcher returns `redjit::Result<()>`",
        );
    }
    let shape = format!(
        "a source is `name: &[T]`, a destination `name: &mut [T]`, with T one of: {}",
        element_types()
    );
    let mut out = Vec::new();
    for arg in &sig.inputs {
        let pat = match arg {
            FnArg::Receiver(r) => {
                errors.push(
                    r.self_token.span,
                    "a #[reduce_copy] launcher is a free function; `self` is not a buffer",
                );
                continue;
            }
            FnArg::Typed(p) => p,
        };
        if let Some(attr) = pat.attrs.first() {
            errors.push(
                attr.pound_token.span,
                "attributes on parameters are not supported; mark read-only sources with read_only(name) in #[reduce_copy(...)]",
            );
        }
        let name = match &*pat.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none() => {
                p.ident.clone()
            }
            other => {
                errors.push(
                    other.span(),
                    "a buffer parameter is a plain name, e.g. `input: &[f32]`",
                );
                continue;
            }
        };
        if RESERVED.contains(&name.to_string().as_str()) {
            errors.push(
                name.span(),
                format!(
                    "`{name}` is a parameter of the generated launcher ({}); give this buffer another name",
                    RESERVED.join(", ")
                ),
            );
            continue;
        }
        let Type::Reference(r) = &*pat.ty else {
            errors.push(pat.ty.span(), format!("`{name}` is not a buffer: {shape}"));
            continue;
        };
        let dir = if r.mutability.is_some() {
            Dir::Dst
        } else {
            Dir::Src
        };
        let Type::Slice(slice) = &*r.elem else {
            errors.push(r.elem.span(), format!("`{name}` is not a slice: {shape}"));
            continue;
        };
        let elem = &*slice.elem;
        let slug = match elem {
            Type::Path(p) if p.qself.is_none() => p
                .path
                .segments
                .last()
                .filter(|s| s.arguments.is_empty())
                .map(|s| s.ident.to_string()),
            _ => None,
        };
        let dtype = slug
            .as_deref()
            .and_then(|s| DType::ALL.iter().copied().find(|d| d.slug() == s))
            .filter(|d| d.info().accum || d.info().transport);
        let Some(dtype) = dtype else {
            errors.push(
                elem.span(),
                format!(
                    "unsupported element type `{}`: expected one of: {}",
                    quote::quote!(#elem).to_string().replace(' ', ""),
                    element_types()
                ),
            );
            continue;
        };
        out.push(Buffer {
            name,
            dir,
            elem: elem.clone(),
            dtype,
        });
    }
    errors.finish()?;
    Ok(out)
}

/// The spec the arguments and buffers declare, validated.
pub fn check(args: &Args, item: &Item) -> syn::Result<Checked> {
    let buffers = buffers(item)?;
    let default = ReduceCopySpec::default();
    let mut errors = Errors::default();

    // The accumulator and transport types: each buffer's element type says
    // its role; all buffers of a role share one type.
    let mut accum: Option<&Buffer> = None;
    let mut transport: Option<&Buffer> = None;
    let mut roles = Vec::new();
    for b in &buffers {
        let (role, slot) = if b.dtype.info().accum {
            (Role::Accum, &mut accum)
        } else {
            (Role::Transport, &mut transport)
        };
        match slot {
            Some(first) if first.dtype != b.dtype => errors.push(
                b.elem.span(),
                format!(
                    "a reduce_copy has one {role} type: `{}` is {}, so `{}` cannot be {}",
                    first.name, first.dtype, b.name, b.dtype
                ),
            ),
            Some(_) => {}
            None => *slot = Some(b),
        }
        roles.push(role);
    }

    let op = match &args.op {
        None => default.op,
        Some(w) => w.value.parse::<Op>().unwrap_or_else(|e: SpecError| {
            errors.push(w.span, e);
            default.op
        }),
    };
    let rounding = match &args.rounding {
        None => default.rounding,
        Some(w) => parse_rounding(&w.value).unwrap_or_else(|message| {
            errors.push(w.span, message);
            default.rounding
        }),
    };
    let read_only = args.read_only.as_deref().unwrap_or_default();
    for name in read_only {
        match buffers.iter().find(|b| b.name == *name) {
            Some(b) if b.dir == Dir::Dst => errors.push(
                name.span(),
                format!("`{name}` is a destination (`&mut`); read_only lists sources"),
            ),
            Some(_) => {}
            None => errors.push(name.span(), format!("no source parameter named `{name}`")),
        }
    }
    errors.finish()?;

    let srcs: Vec<Src> = buffers
        .iter()
        .zip(&roles)
        .filter(|(b, _)| b.dir == Dir::Src)
        .map(|(b, &role)| Src {
            role,
            load: if read_only.contains(&b.name) {
                Load::ReadOnly
            } else {
                Load::Volatile
            },
        })
        .collect();
    let dsts: Vec<Role> = buffers
        .iter()
        .zip(&roles)
        .filter(|(b, _)| b.dir == Dir::Dst)
        .map(|(_, &role)| role)
        .collect();
    let spec = ReduceCopySpec {
        unroll: args.unroll.as_ref().map_or(default.unroll, |u| u.value),
        accum: accum.map_or(default.accum, |b| b.dtype),
        transport: transport.map_or(default.transport, |b| b.dtype),
        srcs,
        dsts,
        op,
        rounding,
        misalignment: None,
    };
    if let Err(e) = spec.validate() {
        return Err(syn::Error::new(
            blame(&e, args, item, &buffers),
            explain(&e),
        ));
    }
    Ok(Checked { spec, buffers })
}

/// `nearest` / `rn`, `stochastic` / `sr`: the registry's slug or its variant's name.
fn parse_rounding(word: &str) -> Result<Rounding, String> {
    let long = |r: Rounding| format!("{r:?}").to_lowercase();
    Rounding::ALL
        .iter()
        .copied()
        .find(|&r| r.slug() == word || long(r) == word)
        .ok_or_else(|| {
            let allowed: Vec<String> = Rounding::ALL
                .iter()
                .map(|&r| format!("{} (or {})", long(r), r.slug()))
                .collect();
            format!(
                "unknown rounding `{word}`: expected one of: {}",
                allowed.join(", ")
            )
        })
}

/// The token a `validate` error is about.
fn blame(e: &SpecError, args: &Args, item: &Item, buffers: &[Buffer]) -> Span {
    let nth = |dir: Dir, n: usize| {
        buffers
            .iter()
            .filter(|b| b.dir == dir)
            .nth(n)
            .map_or_else(|| item.params_span(), |b| b.name.span())
    };
    let first_of = |accum: bool| {
        buffers
            .iter()
            .find(|b| b.dtype.info().accum == accum)
            .map_or_else(|| item.params_span(), |b| b.elem.span())
    };
    let attr = Span::call_site();
    match e {
        SpecError::Invalid { field, .. } => match *field {
            "unroll" => args.unroll.as_ref().map_or(attr, |u| u.span),
            "rounding" => args.rounding.as_ref().map_or(attr, |r| r.span),
            "op" => args.op.as_ref().map_or(attr, |o| o.span),
            "accum" => first_of(true),
            "transport" => first_of(false),
            "srcs" => nth(Dir::Src, redjit_codegen::spec::reduce_copy::MAX_SRCS),
            "dsts" => nth(Dir::Dst, redjit_codegen::spec::reduce_copy::MAX_DSTS),
            _ => attr,
        },
        _ => attr,
    }
}

/// `validate`'s message, with where that value comes from in a signature.
fn explain(e: &SpecError) -> String {
    let hint = match e {
        SpecError::Invalid { field, .. } => match *field {
            "srcs" => Some("sources are the `&[T]` parameters"),
            "dsts" => Some("destinations are the `&mut [T]` parameters"),
            "rounding" => Some("round to nearest with rounding = nearest"),
            _ => None,
        },
        _ => None,
    };
    match hint {
        Some(h) => format!("{e} ({h})"),
        None => e.to_string(),
    }
}
