//! The field attributes: `#[input(...)]`, `#[output(...)]`, `#[param(...)]`, `#[context]` and
//! `#[state]`, each giving a field its role.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, LitStr, Meta};

use super::doc_lines;
use super::keys::{Seen, lit_str, metas, name_value, place_of_attr, unknown_key, word};
use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

/// What a field attribute makes of a field.
pub enum Role {
    Input(PortArgs),
    Output(PortArgs),
    Param(ParamArgs),
    /// Filled from the build context.
    Context,
    /// Internal state: every field without another role.
    State,
}

/// Keys of `#[input(...)]` / `#[output(...)]`.
#[derive(Default)]
pub struct PortArgs {
    pub optional: bool,
    /// The param giving the size of a variadic group.
    pub variadic: Option<Ident>,
    pub name: Option<LitStr>,
}

/// Keys of `#[param(...)]`.
#[derive(Default)]
pub struct ParamArgs {
    pub default: Option<Expr>,
    pub name: Option<LitStr>,
}

/// A field's attributes, with ours taken out.
pub struct FieldAttrs {
    pub role: Role,
    /// The span of the role attribute (the field's own span when none).
    pub role_span: Span,
    /// The field's doc comment, one entry per line.
    pub doc: Vec<String>,
    /// The attributes that are not ours, kept on the field.
    pub kept: Vec<Attribute>,
}

impl FieldAttrs {
    pub fn parse(cx: &Ctxt, field: &syn::Field) -> Self {
        let mut role: Option<(Role, Symbol)> = None;
        let mut role_span = field.span();
        let mut kept = Vec::new();
        for attr in &field.attrs {
            let Some(sym) = symbol::FIELD_ATTRS
                .iter()
                .copied()
                .find(|s| attr.path() == *s)
            else {
                kept.push(attr.clone());
                continue;
            };
            let parsed = match sym {
                symbol::INPUT => Role::Input(parse_port(cx, attr, sym, symbol::INPUT_KEYS)),
                symbol::OUTPUT => Role::Output(parse_port(cx, attr, sym, symbol::OUTPUT_KEYS)),
                symbol::PARAM => Role::Param(parse_param(cx, attr)),
                symbol::CONTEXT => {
                    no_args(cx, attr, sym);
                    Role::Context
                }
                _ => {
                    no_args(cx, attr, sym);
                    Role::State
                }
            };
            match &role {
                Some((_, first)) => cx.error_spanned_by(
                    attr,
                    format!(
                        "this field is already `#[{first}]`: a field is one of an input, an output, a param, a context or internal state"
                    ),
                ),
                None => {
                    role_span = attr.span();
                    role = Some((parsed, sym));
                }
            }
        }
        FieldAttrs {
            role: role.map_or(Role::State, |(r, _)| r),
            role_span,
            doc: doc_lines(&field.attrs),
            kept,
        }
    }
}

fn attr_args(cx: &Ctxt, attr: &Attribute, sym: Symbol) -> Vec<Meta> {
    match &attr.meta {
        Meta::Path(_) => Vec::new(),
        Meta::List(list) => metas(cx, list.tokens.clone()),
        Meta::NameValue(nv) => {
            cx.error_spanned_by(
                nv,
                format!("write `#[{sym}]` or `#[{sym}(key = value, …)]`, not `#[{sym} = …]`"),
            );
            Vec::new()
        }
    }
}

fn no_args(cx: &Ctxt, attr: &Attribute, sym: Symbol) {
    if !matches!(attr.meta, Meta::Path(_)) {
        cx.error_spanned_by(&attr.meta, format!("`#[{sym}]` takes no arguments"));
    }
}

fn parse_port(cx: &Ctxt, attr: &Attribute, sym: Symbol, known: &[Symbol]) -> PortArgs {
    let mut out = PortArgs::default();
    let mut seen = Seen::new(place_of_attr(sym.0));
    for meta in attr_args(cx, attr, sym) {
        let path = meta.path();
        let Some(key) = known.iter().copied().find(|k| path == *k) else {
            unknown_key(cx, &place_of_attr(sym.0), path, known);
            continue;
        };
        let first = seen.first(cx, key, path);
        match key {
            symbol::OPTIONAL => {
                if !matches!(meta, Meta::Path(_)) {
                    cx.error_spanned_by(&meta, "`optional` takes no value: `#[input(optional)]`");
                }
                out.optional = true;
            }
            symbol::VARIADIC => {
                let Some(v) = name_value(cx, sym.0, &meta) else {
                    continue;
                };
                let id = word(v);
                if id.is_none() {
                    cx.error_spanned_by(
                        v,
                        "`variadic` names the `#[param]` giving the number of ports: `variadic = arity`",
                    );
                }
                if first {
                    out.variadic = id;
                }
            }
            _ => {
                let Some(v) = name_value(cx, sym.0, &meta) else {
                    continue;
                };
                let name = lit_str(cx, key, v);
                if first {
                    out.name = name;
                }
            }
        }
    }
    out
}

fn parse_param(cx: &Ctxt, attr: &Attribute) -> ParamArgs {
    let sym = symbol::PARAM;
    let mut out = ParamArgs::default();
    let mut seen = Seen::new(place_of_attr(sym.0));
    for meta in attr_args(cx, attr, sym) {
        let path = meta.path();
        let Some(key) = symbol::PARAM_KEYS.iter().copied().find(|k| path == *k) else {
            unknown_key(cx, &place_of_attr(sym.0), path, symbol::PARAM_KEYS);
            continue;
        };
        let first = seen.first(cx, key, path);
        let Some(v) = name_value(cx, sym.0, &meta) else {
            continue;
        };
        if key == symbol::DEFAULT {
            if first {
                out.default = Some(v.clone());
            }
        } else {
            let name = lit_str(cx, key, v);
            if first {
                out.name = name;
            }
        }
    }
    out
}
