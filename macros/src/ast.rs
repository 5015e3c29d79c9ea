//! Parsing: the attribute's arguments and the annotated signature, as written.
//! Meaning (types, roles, the spec) is `valid`'s job.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Block, Ident, LitInt, LitStr, Signature, Token, Visibility};

/// The attribute's arguments; `None` where the default applies.
#[derive(Default)]
pub struct Args {
    pub unroll: Option<Spanned<u32>>,
    pub op: Option<Spanned<String>>,
    pub rounding: Option<Spanned<String>>,
    pub read_only: Option<Vec<Ident>>,
}

/// A value and the tokens it came from, for errors that point at them.
#[derive(Clone)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

/// Every argument the attribute takes, for "expected one of" messages.
pub const ARGUMENTS: &[&str] = &["unroll", "op", "rounding", "read_only"];

impl Args {
    pub fn parse(tokens: TokenStream) -> syn::Result<Args> {
        let mut args = Args::default();
        let parser = syn::meta::parser(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(Ident::to_string)
                .unwrap_or_default();
            // One setter per argument; each rejects a second occurrence.
            let duplicate = || meta.error(format!("duplicate argument `{key}`"));
            match key.as_str() {
                "unroll" => {
                    if args.unroll.is_some() {
                        return Err(duplicate());
                    }
                    args.unroll = Some(parse_unroll(meta.value()?)?);
                }
                "op" => {
                    if args.op.is_some() {
                        return Err(duplicate());
                    }
                    args.op = Some(parse_word(meta.value()?, "op")?);
                }
                "rounding" => {
                    if args.rounding.is_some() {
                        return Err(duplicate());
                    }
                    args.rounding = Some(parse_word(meta.value()?, "rounding")?);
                }
                "read_only" => {
                    if args.read_only.is_some() {
                        return Err(duplicate());
                    }
                    let mut names: Vec<Ident> = Vec::new();
                    meta.parse_nested_meta(|inner| match inner.path.get_ident() {
                        Some(name) if inner.input.is_empty() || inner.input.peek(Token![,]) => {
                            if names.contains(name) {
                                return Err(inner.error(format!("`{name}` is listed twice")));
                            }
                            names.push(name.clone());
                            Ok(())
                        }
                        _ => Err(inner.error(
                            "read_only lists source parameter names, e.g. read_only(input)",
                        )),
                    })?;
                    args.read_only = Some(names);
                }
                _ => {
                    return Err(meta.error(format!(
                        "unknown argument `{}`: expected one of: {}",
                        path_text(&meta.path),
                        ARGUMENTS.join(", ")
                    )));
                }
            }
            Ok(())
        });
        syn::parse::Parser::parse2(parser, tokens)?;
        Ok(args)
    }
}

fn path_text(path: &syn::Path) -> String {
    quote::quote!(#path).to_string().replace(' ', "")
}

fn parse_unroll(input: ParseStream) -> syn::Result<Spanned<u32>> {
    let allowed = || {
        redjit_codegen::spec::reduce_copy::UNROLLS
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lit: LitInt = input.parse().map_err(|e| {
        syn::Error::new(
            e.span(),
            format!("unroll takes an integer literal, one of: {}", allowed()),
        )
    })?;
    let value = lit.base10_parse::<u32>().map_err(|_| {
        syn::Error::new(lit.span(), format!("unroll must be one of: {}", allowed()))
    })?;
    Ok(Spanned {
        value,
        span: lit.span(),
    })
}

/// A registry value, written as a word (`op = sum`) or a string (`op = "sum"`).
fn parse_word(input: ParseStream, what: &str) -> syn::Result<Spanned<String>> {
    if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        return Ok(Spanned {
            value: lit.value(),
            span: lit.span(),
        });
    }
    let ident: Ident = input.parse().map_err(|e| {
        syn::Error::new(e.span(), format!("{what} takes a word, e.g. {what} = sum"))
    })?;
    Ok(Spanned {
        value: ident.to_string(),
        span: ident.span(),
    })
}

/// The annotated item: a function signature ending in `;` (the macro writes the
/// body). A body, if one was written, is kept only to be reported.
pub struct Item {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    pub body: Option<Block>,
}

impl Parse for Item {
    fn parse(input: ParseStream) -> syn::Result<Item> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let body = if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            None
        } else {
            Some(input.parse::<Block>()?)
        };
        Ok(Item {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl Item {
    /// The span of the parameter list, for "no source" / "no destination".
    pub fn params_span(&self) -> Span {
        self.sig.paren_token.span.join()
    }
}
