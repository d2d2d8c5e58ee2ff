//! The names of the attributes and keys `#[operator]` and `#[tool]` understand.

use std::fmt::{self, Display};

use syn::{Ident, Path};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol(pub &'static str);

// #[operator(...)] keys
pub const ID: Symbol = Symbol("id");
pub const LABEL: Symbol = Symbol("label");
pub const FAMILY: Symbol = Symbol("family");
pub const FIRING: Symbol = Symbol("firing");
pub const EMITS: Symbol = Symbol("emits");
pub const ALIASES: Symbol = Symbol("aliases");
pub const EXEC: Symbol = Symbol("exec");
pub const TIMEOUT_MS: Symbol = Symbol("timeout_ms");
pub const RETRY: Symbol = Symbol("retry");
pub const OPERATOR_KEYS: &[Symbol] = &[
    ID, LABEL, FAMILY, FIRING, EMITS, ALIASES, EXEC, TIMEOUT_MS, RETRY,
];

// #[tool(...)] keys (`name` and `timeout_ms` are shared with the others)
pub const EFFECTS: Symbol = Symbol("effects");
pub const IDEMPOTENT: Symbol = Symbol("idempotent");
pub const TOOL_KEYS: &[Symbol] = &[NAME, TIMEOUT_MS, EFFECTS, IDEMPOTENT];

// `effects = …` values
pub const EFFECT_NAMES: &[Symbol] = &[
    Symbol("none"),
    Symbol("read"),
    Symbol("write"),
    Symbol("external"),
];

// `retry(...)` keys
pub const MAX: Symbol = Symbol("max");
pub const BACKOFF_MS: Symbol = Symbol("backoff_ms");
pub const RETRY_KEYS: &[Symbol] = &[MAX, BACKOFF_MS];

// field attributes
pub const INPUT: Symbol = Symbol("input");
pub const OUTPUT: Symbol = Symbol("output");
pub const PARAM: Symbol = Symbol("param");
pub const CONTEXT: Symbol = Symbol("context");
pub const STATE: Symbol = Symbol("state");
pub const FIELD_ATTRS: &[Symbol] = &[INPUT, OUTPUT, PARAM, CONTEXT, STATE];

// field attribute keys
pub const OPTIONAL: Symbol = Symbol("optional");
pub const VARIADIC: Symbol = Symbol("variadic");
pub const NAME: Symbol = Symbol("name");
pub const DEFAULT: Symbol = Symbol("default");
pub const INPUT_KEYS: &[Symbol] = &[OPTIONAL, VARIADIC, NAME];
pub const OUTPUT_KEYS: &[Symbol] = &[VARIADIC, NAME];
pub const PARAM_KEYS: &[Symbol] = &[DEFAULT, NAME];

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// `a`, `b` or `c` as "`a`, `b` or `c`".
pub fn list(symbols: &[Symbol]) -> String {
    let names: Vec<String> = symbols.iter().map(|s| format!("`{s}`")).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}
