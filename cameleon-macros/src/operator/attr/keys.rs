//! Reading the keys and values of our attributes, shared by `#[operator(...)]` and the field
//! attributes: a key list, a duplicate or unknown key (with a did-you-mean), and the kinds of
//! value (a string, a word, one of a few words, a whole number).

use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Token};

use crate::ctxt::Ctxt;
use crate::operator::ast::unraw;
use crate::suggest;
use crate::symbol::{self, Symbol};

/// Where a key is written, as messages name it: `` `#[operator]` ``, `` `retry(…)` ``.
pub fn place_of_attr(attr: &str) -> String {
    format!("`#[{attr}]`")
}

/// Tracks which keys of one attribute were seen, to report a duplicate at the second one.
pub struct Seen {
    /// Where the keys are written (`` `#[operator]` ``).
    place: String,
    keys: Vec<Symbol>,
}

impl Seen {
    pub fn new(place: String) -> Self {
        Seen {
            place,
            keys: Vec::new(),
        }
    }

    /// Whether `key` is new; reports it at `at` if not.
    pub fn first(&mut self, cx: &Ctxt, key: Symbol, at: &impl quote::ToTokens) -> bool {
        if self.keys.contains(&key) {
            cx.error_spanned_by(
                at,
                format!(
                    "duplicate key `{key}` in {}: it is already set earlier in this attribute; remove one of them",
                    self.place
                ),
            );
            false
        } else {
            self.keys.push(key);
            true
        }
    }
}

pub fn unknown_key(cx: &Ctxt, place: &str, path: &syn::Path, known: &[Symbol]) {
    let word = path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string());
    let hint = suggest::did_you_mean(&word, known.iter().map(|s| s.0))
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    cx.error_spanned_by(
        path,
        format!(
            "unknown key `{word}` in {place}; {hint}the keys are {}",
            symbol::list(known)
        ),
    );
}

/// One `key`, `key = value` or `key(…)`. `key = async` is read as `key = "async"`: `async` is a
/// keyword, not an expression, so `Meta` alone cannot parse it.
fn meta(input: ParseStream<'_>) -> syn::Result<Meta> {
    if input.peek(Ident) && input.peek2(Token![=]) && input.peek3(Token![async]) {
        let key: Ident = input.parse()?;
        let eq_token: Token![=] = input.parse()?;
        let kw: Token![async] = input.parse()?;
        return Ok(Meta::NameValue(MetaNameValue {
            path: key.into(),
            eq_token,
            value: Expr::Lit(ExprLit {
                attrs: Vec::new(),
                lit: Lit::Str(LitStr::new("async", kw.span)),
            }),
        }));
    }
    input.parse()
}

/// Parses a comma-separated list of metas; a syntax error is recorded and gives nothing.
pub fn metas(cx: &Ctxt, tokens: TokenStream) -> Vec<Meta> {
    let list =
        |input: ParseStream<'_>| Punctuated::<Meta, Token![,]>::parse_terminated_with(input, meta);
    match list.parse2(tokens) {
        Ok(list) => list.into_iter().collect(),
        Err(e) => {
            cx.syn_error(e);
            Vec::new()
        }
    }
}

pub fn name_value<'m>(cx: &Ctxt, attr: &str, meta: &'m Meta) -> Option<&'m Expr> {
    match meta {
        Meta::NameValue(nv) => Some(&nv.value),
        _ => {
            let key = meta.path();
            cx.error_spanned_by(
                meta,
                format!(
                    "`{}` in `#[{attr}]` takes a value: `{} = …`",
                    quote::quote!(#key),
                    quote::quote!(#key)
                ),
            );
            None
        }
    }
}

/// `e` without the invisible groups a `macro_rules!` fragment (`$id:literal`) is wrapped in.
pub fn ungroup(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => ungroup(&g.expr),
        other => other,
    }
}

pub fn lit_str(cx: &Ctxt, key: Symbol, e: &Expr) -> Option<LitStr> {
    match ungroup(e) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.clone()),
        _ => {
            cx.error_spanned_by(
                e,
                format!("`{key}` takes a string literal: `{key} = \"…\"`"),
            );
            None
        }
    }
}

/// The text of an identifier value (`family = structural`, `exec = async`) or of the same as a
/// string (`family = "structural"`), without `r#`.
fn word_text(e: &Expr) -> Option<String> {
    match ungroup(e) {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(unraw),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// An identifier value (`out_a`), or the same as a string (`"out_a"`).
pub fn word(e: &Expr) -> Option<Ident> {
    match ungroup(e) {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse::<Ident>().ok(),
        _ => None,
    }
}

pub fn choice<T: Copy>(
    cx: &Ctxt,
    key: Symbol,
    e: &Expr,
    names: &[Symbol],
    values: &[T],
) -> Option<T> {
    let found = word_text(e).and_then(|w| names.iter().position(|n| w == n.0).map(|i| values[i]));
    if found.is_none() {
        let got = quote::quote!(#e).to_string();
        let hint = suggest::did_you_mean(&got, names.iter().map(|s| s.0))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        cx.error_spanned_by(
            e,
            format!(
                "unknown {key} `{got}`{hint}: expected {}",
                symbol::list(names)
            ),
        );
    }
    found
}

/// A whole-number literal no larger than `max`; `example` shows the key written right.
pub fn whole_number(cx: &Ctxt, key: Symbol, e: &Expr, max: u128, example: &str) -> Option<u64> {
    let Expr::Lit(ExprLit {
        lit: Lit::Int(n), ..
    }) = ungroup(e)
    else {
        cx.error_spanned_by(e, format!("`{key}` takes a whole number: `{example}`"));
        return None;
    };
    match n.base10_parse::<u128>() {
        Ok(v) if v <= max => u64::try_from(v).ok(),
        _ => {
            cx.error_spanned_by(n, format!("`{key}` is at most {max}"));
            None
        }
    }
}
