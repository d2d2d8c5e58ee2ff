//! Parsing of `#[operator(...)]` and of the field attributes. Problems are recorded in the
//! [`Ctxt`] and parsing goes on, so every mistake is reported at once; a key given twice is
//! reported at its second occurrence.

use proc_macro2::{Span, TokenStream};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitStr, Meta, MetaNameValue, Token};

use crate::ctxt::Ctxt;
use crate::symbol::{self, Symbol};

/// The family a declaration names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Structural,
    Behavioral,
}

/// The firing policy a declaration names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Any,
    All,
    AnyNoGuard,
    Source,
    Custom,
}

/// How parallel mode runs the operator's firings (`exec = …`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Exec {
    Inline,
    Blocking,
    Async,
}

/// `retry(max = …, backoff_ms = …)`.
#[derive(Clone, Copy)]
pub struct RetryArgs {
    pub max: u32,
    pub backoff_ms: u64,
}

const FAMILIES: &[Symbol] = &[Symbol("structural"), Symbol("behavioral")];
const EXECS: &[Symbol] = &[Symbol("inline"), Symbol("blocking"), Symbol("async")];
const POLICIES: &[Symbol] = &[
    Symbol("any"),
    Symbol("all"),
    Symbol("any_no_guard"),
    Symbol("source"),
    Symbol("custom"),
];

/// What `#[operator(...)]` says.
#[derive(Default)]
pub struct OperatorArgs {
    pub id: Option<LitStr>,
    /// Whether `id` was written at all (even with a bad value).
    pub id_given: bool,
    pub label: Option<LitStr>,
    pub family: Option<(Family, Span)>,
    /// The policy and the span of its value (`custom` is where a missing `CanFire` is reported).
    pub firing: Option<(Policy, Span)>,
    pub emits: Option<Vec<Vec<Ident>>>,
    pub aliases: Vec<LitStr>,
    /// The execution kind and the span of its value (`async` is where a missing `RunAsync` is
    /// reported).
    pub exec: Option<(Exec, Span)>,
    /// The default timeout, in milliseconds (at least 1).
    pub timeout_ms: Option<u64>,
    /// The default retries.
    pub retry: Option<RetryArgs>,
}

impl OperatorArgs {
    /// Whether the operator is declared async (`exec = async`).
    pub fn is_async(&self) -> bool {
        matches!(self.exec, Some((Exec::Async, _)))
    }
}

/// Where a key is written, as messages name it: `` `#[operator]` ``, `` `retry(…)` ``.
fn place_of_attr(attr: &str) -> String {
    format!("`#[{attr}]`")
}

/// Tracks which keys of one attribute were seen, to report a duplicate at the second one.
struct Seen {
    /// Where the keys are written (`` `#[operator]` ``).
    place: String,
    keys: Vec<Symbol>,
}

impl Seen {
    fn new(place: String) -> Self {
        Seen {
            place,
            keys: Vec::new(),
        }
    }

    /// Whether `key` is new; reports it at `at` if not.
    fn first(&mut self, cx: &Ctxt, key: Symbol, at: &impl quote::ToTokens) -> bool {
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

fn unknown_key(cx: &Ctxt, place: &str, path: &syn::Path, known: &[Symbol]) {
    let word = path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| quote::quote!(#path).to_string());
    let hint = symbol::did_you_mean(&word, known.iter().map(|s| s.0))
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
fn metas(cx: &Ctxt, tokens: TokenStream) -> Vec<Meta> {
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

fn name_value<'m>(cx: &Ctxt, attr: &str, meta: &'m Meta) -> Option<&'m Expr> {
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
fn ungroup(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => ungroup(&g.expr),
        other => other,
    }
}

fn lit_str(cx: &Ctxt, key: Symbol, e: &Expr) -> Option<LitStr> {
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
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(super::ast::unraw),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// An identifier value (`out_a`), or the same as a string (`"out_a"`).
fn word(e: &Expr) -> Option<Ident> {
    match ungroup(e) {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().cloned(),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse::<Ident>().ok(),
        _ => None,
    }
}

fn choice<T: Copy>(cx: &Ctxt, key: Symbol, e: &Expr, names: &[Symbol], values: &[T]) -> Option<T> {
    let found = word_text(e).and_then(|w| names.iter().position(|n| w == n.0).map(|i| values[i]));
    if found.is_none() {
        let got = quote::quote!(#e).to_string();
        let hint = symbol::did_you_mean(&got, names.iter().map(|s| s.0))
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

impl OperatorArgs {
    /// Parses the arguments of `#[operator(...)]`.
    pub fn parse(cx: &Ctxt, args: TokenStream) -> Self {
        let mut out = OperatorArgs::default();
        let place = place_of_attr("operator");
        let mut seen = Seen::new(place.clone());
        for meta in metas(cx, args) {
            let path = meta.path();
            let Some(key) = symbol::OPERATOR_KEYS.iter().copied().find(|k| path == *k) else {
                unknown_key(cx, &place, path, symbol::OPERATOR_KEYS);
                continue;
            };
            let first = seen.first(cx, key, path);
            if key == symbol::RETRY {
                let v = parse_retry(cx, &meta);
                if first {
                    out.retry = v;
                }
                continue;
            }
            let Some(value) = name_value(cx, "operator", &meta) else {
                continue;
            };
            // A duplicate is still parsed, so a mistake in its value is reported too.
            match key {
                symbol::ID => {
                    out.id_given = true;
                    let v = lit_str(cx, key, value);
                    if first {
                        out.id = v;
                    }
                }
                symbol::LABEL => {
                    let v = lit_str(cx, key, value);
                    if first {
                        out.label = v;
                    }
                }
                symbol::FAMILY => {
                    let v = choice(
                        cx,
                        key,
                        value,
                        FAMILIES,
                        &[Family::Structural, Family::Behavioral],
                    );
                    if first {
                        out.family = v.map(|f| (f, value.span()));
                    }
                }
                symbol::FIRING => {
                    let v = choice(
                        cx,
                        key,
                        value,
                        POLICIES,
                        &[
                            Policy::Any,
                            Policy::All,
                            Policy::AnyNoGuard,
                            Policy::Source,
                            Policy::Custom,
                        ],
                    );
                    if first {
                        out.firing = v.map(|p| (p, value.span()));
                    }
                }
                symbol::EMITS => {
                    let v = parse_emits(cx, value);
                    if first {
                        out.emits = v;
                    }
                }
                symbol::ALIASES => {
                    let v = parse_aliases(cx, value);
                    if first {
                        out.aliases = v;
                    }
                }
                symbol::EXEC => {
                    let v = choice(
                        cx,
                        key,
                        value,
                        EXECS,
                        &[Exec::Inline, Exec::Blocking, Exec::Async],
                    );
                    if first {
                        out.exec = v.map(|x| (x, value.span()));
                    }
                }
                symbol::TIMEOUT_MS => {
                    let v = whole_number(cx, key, value, u64::MAX.into(), "timeout_ms = 5000");
                    let v = v.filter(|&ms| {
                        if ms == 0 {
                            cx.error_spanned_by(
                                value,
                                "a timeout of 0 ms fails every firing: give at least 1 ms (`timeout_ms = 5000`), or remove `timeout_ms`",
                            );
                        }
                        ms > 0
                    });
                    if first {
                        out.timeout_ms = v;
                    }
                }
                _ => unreachable!("every key of OPERATOR_KEYS is handled"),
            }
        }
        out
    }
}

/// A whole-number literal no larger than `max`; `example` shows the key written right.
fn whole_number(cx: &Ctxt, key: Symbol, e: &Expr, max: u128, example: &str) -> Option<u64> {
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

/// `retry(max = 3, backoff_ms = 200)`: the retries of a failed firing. `max` is required,
/// `backoff_ms` defaults to 0 (as in `.cm`).
fn parse_retry(cx: &Ctxt, meta: &Meta) -> Option<RetryArgs> {
    const SHAPE: &str =
        "`retry` takes its settings in parentheses: `retry(max = 3, backoff_ms = 200)`";
    let Meta::List(list) = meta else {
        cx.error_spanned_by(meta, SHAPE);
        return None;
    };
    let place = "`retry(…)`".to_owned();
    let mut seen = Seen::new(place.clone());
    let (mut max, mut backoff_ms, mut max_given) = (None, 0, false);
    for m in metas(cx, list.tokens.clone()) {
        let path = m.path();
        let Some(key) = symbol::RETRY_KEYS.iter().copied().find(|k| path == *k) else {
            unknown_key(cx, &place, path, symbol::RETRY_KEYS);
            continue;
        };
        let first = seen.first(cx, key, path);
        let Meta::NameValue(nv) = &m else {
            cx.error_spanned_by(
                &m,
                format!("`{key}` in `retry(…)` takes a value: `{key} = …`"),
            );
            continue;
        };
        if key == symbol::MAX {
            max_given = true;
            let v = whole_number(cx, key, &nv.value, u32::MAX.into(), "max = 3");
            if first {
                max = v.and_then(|v| u32::try_from(v).ok());
            }
        } else {
            let v = whole_number(cx, key, &nv.value, u64::MAX.into(), "backoff_ms = 200");
            if first && let Some(v) = v {
                backoff_ms = v;
            }
        }
    }
    if !max_given {
        cx.error_spanned_by(
            &list.path,
            "`retry` needs `max`, how many times a failed firing is tried again: `retry(max = 3)` or `retry(max = 3, backoff_ms = 200)`",
        );
    }
    max.map(|max| RetryArgs { max, backoff_ms })
}

/// `emits = [[out_a], [out_b, out_c], []]`: the emission sets, by output port name.
fn parse_emits(cx: &Ctxt, e: &Expr) -> Option<Vec<Vec<Ident>>> {
    const SHAPE: &str = "`emits` is a list of emission sets, each a list of output ports: `emits = [[out_true], [out_false]]`";
    let Expr::Array(sets) = ungroup(e) else {
        cx.error_spanned_by(e, SHAPE);
        return None;
    };
    let mut out = Vec::new();
    for set in &sets.elems {
        let Expr::Array(ports) = set else {
            cx.error_spanned_by(set, SHAPE);
            continue;
        };
        let mut names = Vec::new();
        for p in &ports.elems {
            match word(p) {
                Some(id) => names.push(id),
                None => cx.error_spanned_by(
                    p,
                    "an emission set lists output port names: `[out_a, out_b]`",
                ),
            }
        }
        out.push(names);
    }
    Some(out)
}

/// `aliases = ["switch"]` or `aliases = "switch"`.
fn parse_aliases(cx: &Ctxt, e: &Expr) -> Vec<LitStr> {
    match ungroup(e) {
        Expr::Array(a) => a
            .elems
            .iter()
            .filter_map(|x| lit_str(cx, symbol::ALIASES, x))
            .collect(),
        other => lit_str(cx, symbol::ALIASES, other).into_iter().collect(),
    }
}

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

/// The lines of the doc comment among `attrs`, each without its first space.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|s| {
            s.split('\n')
                .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}
