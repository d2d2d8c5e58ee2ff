//! The rules `pipeline!` checks itself, before rustc type-checks what it generates. Each rule is
//! a small function; every violation is recorded, so the user sees them all at once.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::{Expr, Ident};

use super::ast::{Connection, Endpoint, Instance, Pipeline, Setting};
use crate::ctxt::Ctxt;
use crate::suggest::did_you_mean;

/// The settings a pipeline may give.
pub const NAME: &str = "name";
pub const MODE: &str = "mode";
pub const MAX_LOOP_ITERATIONS: &str = "max_loop_iterations";
const SETTINGS: &[&str] = &[NAME, MODE, MAX_LOOP_ITERATIONS];

/// A checked pipeline: what the expansion generates code for.
pub struct Checked<'a> {
    pub name: Option<&'a Expr>,
    pub mode: Option<Mode>,
    pub max_loop_iterations: Option<&'a Expr>,
    /// Instances with a unique name (a duplicate is reported and left out).
    pub instances: Vec<&'a Instance>,
    /// Connections whose two instances exist, with the instances' indices in `instances`.
    pub connections: Vec<(&'a Connection, usize, usize)>,
}

/// `mode = sequential | parallel`.
#[derive(Clone, Copy)]
pub enum Mode {
    Sequential,
    Parallel,
}

pub fn check<'a>(p: &'a Pipeline, cx: &Ctxt) -> Checked<'a> {
    let settings = check_settings(&p.settings, cx);
    let instances = check_instance_names(&p.instances, cx);
    let connections = check_endpoints(&p.connections, &instances, cx);
    check_single_incoming(&connections, cx);
    Checked {
        name: settings.get(NAME).map(|s| &s.value),
        mode: settings.get(MODE).and_then(|s| check_mode(&s.value, cx)),
        max_loop_iterations: settings.get(MAX_LOOP_ITERATIONS).map(|s| &s.value),
        instances,
        connections,
    }
}

/// Rule: settings are `name`, `mode` and `max_loop_iterations`, each given at most once (a
/// duplicate is reported at the second); `name` is required.
fn check_settings<'a>(settings: &'a [Setting], cx: &Ctxt) -> HashMap<String, &'a Setting> {
    let mut seen: HashMap<String, &Setting> = HashMap::new();
    for s in settings {
        let key = s.key.to_string();
        if !SETTINGS.contains(&key.as_str()) {
            let hint = did_you_mean(&key, SETTINGS.iter().copied())
                .map(|k| format!("; did you mean `{k}`?"))
                .unwrap_or_default();
            cx.error_spanned_by(
                &s.key,
                format!(
                    "unknown setting `{key}`: a pipeline's settings are `name`, `mode` and `max_loop_iterations`{hint}"
                ),
            );
        } else if let std::collections::hash_map::Entry::Vacant(v) = seen.entry(key.clone()) {
            v.insert(s);
        } else {
            cx.error_spanned_by(&s.key, format!("`{key}` is already set above"));
        }
    }
    if !seen.contains_key(NAME) {
        cx.error_at(
            Span::call_site(),
            "a pipeline needs a name: start it with `name = \"…\";`",
        );
    }
    seen
}

/// Rule: `mode` is `sequential` or `parallel`.
fn check_mode(value: &Expr, cx: &Ctxt) -> Option<Mode> {
    let ident = match value {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    };
    match ident.map(Ident::to_string).as_deref() {
        Some("sequential") => Some(Mode::Sequential),
        Some("parallel") => Some(Mode::Parallel),
        _ => {
            cx.error_spanned_by(value, "`mode` is `sequential` or `parallel`");
            None
        }
    }
}

/// Rule: instance names are unique; a duplicate is reported at the second declaration (and left
/// out, so its connections are checked against the first).
fn check_instance_names<'a>(instances: &'a [Instance], cx: &Ctxt) -> Vec<&'a Instance> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut kept = Vec::new();
    for (n, inst) in instances.iter().enumerate() {
        let name = inst.name_str();
        if let Some(first) = seen.get(&name) {
            cx.error_spanned_by(
                &inst.name,
                format!(
                    "duplicate instance name `{name}`: instance #{} is already named `{name}`; give each instance its own name",
                    first + 1
                ),
            );
        } else {
            seen.insert(name, n);
            kept.push(inst);
        }
    }
    kept
}

/// Rule: each end of a connection names a declared instance (with a "did you mean" for a close
/// name). A connection with an unknown end is left out of the type checks.
fn check_endpoints<'a>(
    connections: &'a [Connection],
    instances: &[&Instance],
    cx: &Ctxt,
) -> Vec<(&'a Connection, usize, usize)> {
    let index: HashMap<String, usize> = instances
        .iter()
        .enumerate()
        .map(|(i, inst)| (inst.name_str(), i))
        .collect();
    let names: Vec<String> = instances.iter().map(|i| i.name_str()).collect();
    let resolve = |e: &Endpoint, cx: &Ctxt| {
        let name = e.instance_name();
        let found = index.get(&name).copied();
        if found.is_none() {
            let hint = match did_you_mean(&name, names.iter().map(String::as_str)) {
                Some(s) => format!("did you mean `{s}`?"),
                None if names.is_empty() => {
                    "declare it first: `let name = Operator { … };`".to_owned()
                }
                None => format!(
                    "declare it with `let {name} = …;`, or use one of {}",
                    list(&names)
                ),
            };
            cx.error_spanned_by(&e.instance, format!("unknown instance `{name}`; {hint}"));
        }
        found
    };
    let mut out = Vec::new();
    for c in connections {
        let from = resolve(&c.from, cx);
        let to = resolve(&c.to, cx);
        if let (Some(from), Some(to)) = (from, to) {
            out.push((c, from, to));
        }
    }
    out
}

/// Rule: an input has exactly one incoming connection (`docs/semantics.md` §1); the second is
/// reported.
fn check_single_incoming(connections: &[(&Connection, usize, usize)], cx: &Ctxt) {
    let mut seen: HashMap<String, &Connection> = HashMap::new();
    for (c, _, _) in connections {
        let key = c.to.text();
        match seen.get(&key) {
            Some(first) => {
                cx.error_at(
                    c.to.port.span(),
                    format!(
                        "input `{key}` already has a connection (from `{}`); an input takes exactly one connection: join them with a merge (`let m = Merge::default();`, then `… -> m.in_a; … -> m.in_b; m.out_data -> {key};`)",
                        first.from.text()
                    ),
                );
            }
            None => {
                seen.insert(key, c);
            }
        }
    }
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
