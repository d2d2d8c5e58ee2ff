//! `#[operator(...)]`: the id, label, family, firing policy, emission sets, aliases, execution,
//! timeout and retries of the operator.

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Expr, Ident, LitStr, Meta};

use super::keys::{
    Seen, choice, lit_str, metas, name_value, place_of_attr, ungroup, unknown_key, whole_number,
    word,
};
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
