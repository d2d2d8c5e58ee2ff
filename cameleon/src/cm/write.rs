//! Writing the canonical form.
//!
//! The canonical form is what `cameleon fmt` writes and [`Net::to_cm`] returns:
//!
//! - keys in the order of the format (`cameleon`, `name`, `config`, `tools`, `operators`,
//!   `connections`; in `tools` `allow`, `approve`; in an operator `id`, `type`, `label`,
//!   `instance`, `x`, `y`, `params`, `timeout_ms`, `retry`, `placement`), and
//!   operators and connections in declaration order;
//! - two-space indentation, one key per line; param values that are lists or mappings in flow
//!   style (`{lt: 10}`);
//! - strings plain when YAML reads them back as the same string, else double-quoted with JSON
//!   escapes; integers without `.0` (positions are written as integers when they are whole);
//! - `type` always written (aliases replaced by the catalogue id); `config` keys, params and
//!   `placement` only when they differ from their defaults; under `tools`, `allow` always
//!   (`[]` when empty) and `approve` when not empty, both in flow style.
//!
//! Loading a canonical file and writing it again gives the same bytes.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::format::{
    CmBudget, CmConfig, CmConnection, CmFile, CmOperator, CmRetry, CmTools, FORMAT_VERSION,
};
use crate::catalogue::Catalogue;
use crate::net::{Net, NetConfig, Placement};
use crate::operator::Params;

/// The lines of a `.cm` text before its first YAML line — comments and blank lines, verbatim.
/// Comments are not part of the canonical form; this leading block (what the file is) is what
/// `cameleon fmt` and `cameleon serve`'s Save keep above it.
///
/// ```
/// use cameleon::cm::leading_comments;
///
/// assert_eq!(leading_comments("# a\n\n# b\nname: x # c\n"), "# a\n\n# b\n");
/// assert_eq!(leading_comments("name: x\n# c\n"), "");
/// ```
pub fn leading_comments(text: &str) -> &str {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#')) {
            break;
        }
        end += line.len();
    }
    &text[..end]
}

impl Net {
    /// The net in canonical `.cm` form (see [`cm`](crate::cm)). [`Net::from_cm`] reads it back
    /// to an equal net, and writing that again gives the same bytes.
    pub fn to_cm(&self) -> String {
        self.to_cm_file().to_cm_string()
    }

    /// The net as `.cm` declarations (canonical: `type` always set, default params and config
    /// left out).
    pub fn to_cm_file(&self) -> CmFile {
        let catalogue = Catalogue::global();
        let defaults = NetConfig::default();
        let c = &self.config;
        let config = CmConfig {
            mode: (c.mode != defaults.mode).then_some(c.mode),
            max_loop_iterations: (c.max_loop_iterations != defaults.max_loop_iterations)
                .then_some(c.max_loop_iterations),
            budget: c.budget.is_limited().then_some(CmBudget {
                tokens: c.budget.tokens,
                cost_usd: c.budget.cost_usd.map(|u| u.0),
            }),
        };
        let operators = self
            .ops
            .iter()
            .map(|o| {
                let type_id = o.spec.type_id.to_string();
                let params = without_defaults(catalogue, &type_id, o.params());
                let pos = o.pos.filter(|(x, y)| x.is_finite() && y.is_finite());
                CmOperator {
                    id: o.name.clone(),
                    type_: Some(type_id),
                    label: o.label.clone(),
                    instance: o.instance,
                    x: pos.map(|p| p.0),
                    y: pos.map(|p| p.1),
                    params: (!params.is_empty()).then_some(params),
                    timeout_ms: o.settings.timeout_ms,
                    retry: o.settings.retry.map(|r| CmRetry {
                        max: r.max,
                        backoff_ms: r.backoff_ms,
                    }),
                    placement: (o.placement != Placement::Local).then_some(o.placement),
                }
            })
            .collect();
        let connections = self
            .conns
            .iter()
            .map(|c| CmConnection {
                from: self.output_name(c.from),
                to: self.input_name(c.to),
            })
            .collect();
        CmFile {
            cameleon: FORMAT_VERSION,
            name: (!self.name.is_empty()).then(|| self.name.clone()),
            description: self.description.clone(),
            config: (config != CmConfig::default()).then_some(config),
            tools: self.tools.as_ref().map(|t| CmTools {
                allow: t.allow.clone(),
                approve: t.approve.clone(),
            }),
            operators,
            connections,
        }
    }
}

/// `params` less those equal to the default the catalogue declares for them.
fn without_defaults(catalogue: &Catalogue, type_id: &str, params: Params) -> Params {
    let Some(entry) = catalogue.get(type_id) else {
        return params;
    };
    params
        .into_iter()
        .filter(|(k, v)| {
            let default = entry
                .params
                .iter()
                .find(|p| p.name == k)
                .and_then(|p| p.default)
                .and_then(|d| serde_json::from_str::<Json>(d).ok());
            default.as_ref() != Some(v)
        })
        .collect()
}

impl CmFile {
    /// These declarations in canonical `.cm` text.
    pub fn to_cm_string(&self) -> String {
        let mut out = String::new();
        // `cameleon` is written even when absent from the source: the canonical form is explicit.
        let _ = writeln!(out, "cameleon: {}", self.cameleon);
        if let Some(name) = &self.name {
            let _ = writeln!(out, "name: {}", scalar(name));
        }
        if let Some(d) = &self.description {
            let _ = writeln!(out, "description: {}", scalar(d));
        }
        if let Some(c) = &self.config
            && (c.mode.is_some() || c.max_loop_iterations.is_some() || c.budget.is_some())
        {
            out.push_str("config:\n");
            if let Some(m) = c.mode {
                let _ = writeln!(out, "  mode: {m}");
            }
            if let Some(n) = c.max_loop_iterations {
                let _ = writeln!(out, "  max_loop_iterations: {n}");
            }
            if let Some(b) = &c.budget {
                let mut parts = Vec::new();
                if let Some(t) = b.tokens {
                    parts.push(format!("tokens: {t}"));
                }
                if let Some(u) = b.cost_usd {
                    // `{:?}` keeps a decimal point (`1.0`), so the value reads back as a number.
                    parts.push(format!("cost_usd: {u:?}"));
                }
                let _ = writeln!(out, "  budget: {{{}}}", parts.join(", "));
            }
        }
        if let Some(t) = &self.tools {
            out.push_str("tools:\n");
            let _ = writeln!(out, "  allow: {}", name_list(&t.allow));
            if !t.approve.is_empty() {
                let _ = writeln!(out, "  approve: {}", name_list(&t.approve));
            }
        }
        if self.operators.is_empty() {
            out.push_str("operators: []\n");
        } else {
            out.push_str("operators:\n");
        }
        for o in &self.operators {
            let _ = writeln!(out, "  - id: {}", scalar(&o.id));
            if let Some(t) = &o.type_ {
                let _ = writeln!(out, "    type: {}", scalar(t));
            }
            if let Some(l) = &o.label {
                let _ = writeln!(out, "    label: {}", scalar(l));
            }
            if let Some(n) = o.instance {
                let _ = writeln!(out, "    instance: {n}");
            }
            if let Some(x) = o.x {
                let _ = writeln!(out, "    x: {}", coordinate(x));
            }
            if let Some(y) = o.y {
                let _ = writeln!(out, "    y: {}", coordinate(y));
            }
            if let Some(p) = &o.params {
                if p.is_empty() {
                    out.push_str("    params: {}\n");
                } else {
                    out.push_str("    params:\n");
                    for (k, v) in p {
                        let _ = writeln!(out, "      {}: {}", scalar(k), flow(v));
                    }
                }
            }
            if let Some(ms) = o.timeout_ms {
                let _ = writeln!(out, "    timeout_ms: {ms}");
            }
            if let Some(r) = o.retry {
                let _ = writeln!(
                    out,
                    "    retry: {{max: {}, backoff_ms: {}}}",
                    r.max, r.backoff_ms
                );
            }
            if let Some(p) = o.placement {
                let _ = writeln!(out, "    placement: {p}");
            }
        }
        if self.connections.is_empty() {
            out.push_str("connections: []\n");
        } else {
            out.push_str("connections:\n");
        }
        for c in &self.connections {
            let _ = writeln!(out, "  - from: {}", scalar(&c.from));
            let _ = writeln!(out, "    to: {}", scalar(&c.to));
        }
        out
    }
}

/// Names in flow style: `[calc, read_file]`.
fn name_list(names: &[String]) -> String {
    let items: Vec<String> = names.iter().map(|n| scalar(n)).collect();
    format!("[{}]", items.join(", "))
}

/// A position: whole numbers without `.0`.
fn coordinate(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        format!("{}", v as i64)
    } else {
        number(v)
    }
}

/// The shortest text that reads back as the same `f64`.
fn number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| "0".to_owned(), |n| n.to_string())
}

/// A JSON value in YAML flow style.
fn flow(v: &Json) -> String {
    match v {
        Json::Null => "null".to_owned(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => scalar(s),
        Json::Array(a) => {
            let items: Vec<String> = a.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), flow(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// A string as a YAML scalar: plain when that reads back as the same string in block and flow
/// context under YAML 1.1 and 1.2, else double-quoted.
pub(crate) fn scalar(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else {
        quoted(s)
    }
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_alphanumeric() || first == '_' || first == '/') {
        return false;
    }
    if s.ends_with(' ') || s.contains("  ") {
        return false;
    }
    let ok_char = |c: char| {
        c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ' ' | '(' | ')' | '+' | '=')
    };
    if !s.chars().all(ok_char) {
        return false;
    }
    // Words YAML 1.2 or common YAML 1.1 readers take for null or booleans (`y`/`n` are in
    // the 1.1 spec but not in its implementations, and read as strings here).
    const RESERVED: &[&str] = &["null", "true", "false", "yes", "no", "on", "off"];
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s)) {
        return false;
    }
    // Anything that might read as a number (decimal, hex, octal, binary, exponent, `1_000`).
    if first.is_ascii_digit()
        && s.chars().all(|c| {
            c.is_ascii_hexdigit() || matches!(c, 'x' | 'X' | 'o' | 'O' | '_' | '.' | '+' | '-')
        })
    {
        return false;
    }
    true
}

/// A double-quoted YAML string with JSON-style escapes; line breaks and invisible characters
/// are escaped so the text stays on one line and reads back exactly.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{85}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_strings_are_quoted_and_others_plain() {
        for s in [
            "", "true", "No", "off", "null", "~", "12", "0x1F", "1e3", "1_000", "-x", " a", "a: b",
            "a #b", "[x]", "é\n",
        ] {
            assert!(scalar(s).starts_with('"'), "{s:?} should be quoted");
        }
        for s in [
            "hello",
            "n",
            "y",
            "loader.out_data",
            "hello world",
            "12 apples",
            "data/file.txt",
            "Étape",
        ] {
            assert_eq!(scalar(s), s);
        }
    }

    #[test]
    fn positions_are_integers_when_whole() {
        assert_eq!(coordinate(90.0), "90");
        assert_eq!(coordinate(-3.0), "-3");
        assert_eq!(coordinate(1.5), "1.5");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            quoted("a\"b\\c\u{1}\u{2028}"),
            "\"a\\\"b\\\\c\\u0001\\u2028\""
        );
    }
}
