//! `cameleon catalogue`: every registered operator type, as text, JSON or Markdown — enough for
//! a person or an LLM to write a valid `.cm` file.

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::{CatalogueArgs, Io, exit};
use crate::catalogue::{Catalogue, CatalogueEntry, ParamInfo};
use crate::operator::{OpSpec, PortSpec};

pub(super) fn catalogue(a: &CatalogueArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let c = Catalogue::global();
    let text = if a.json {
        let mut s = serde_json::to_string_pretty(&catalogue_json(c)).unwrap_or_default();
        s.push('\n');
        s
    } else if a.markdown {
        catalogue_markdown(c)
    } else {
        catalogue_text(c)
    };
    io.stdout.write_all(text.as_bytes())?;
    Ok(exit::OK)
}

fn default_json(p: &ParamInfo) -> Option<Json> {
    p.default
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| json!(d)))
}

fn port_json(p: &PortSpec) -> Json {
    let mut v = json!({ "name": p.name, "type": p.ty.display_name() });
    if p.optional {
        v["optional"] = json!(true);
    }
    v
}

fn emits(spec: &OpSpec) -> Vec<Vec<&str>> {
    spec.emits
        .iter()
        .map(|set| {
            set.iter()
                .filter_map(|&i| spec.outputs.get(i as usize).map(|p| &*p.name))
                .collect()
        })
        .collect()
}

fn entry_json(e: &CatalogueEntry) -> Json {
    let spec = (e.spec)();
    let params: Vec<Json> = e
        .params
        .iter()
        .map(|p| {
            let mut v = json!({ "name": p.name, "type": p.ty, "doc": p.doc });
            match default_json(p) {
                Some(d) => v["default"] = d,
                None => v["required"] = json!(true),
            }
            v
        })
        .collect();
    let mut v = json!({
        "id": e.id,
        "aliases": e.aliases,
        "label": e.label,
        "family": e.family.as_str(),
        "policy": e.policy.as_str(),
        "doc": e.doc,
        "inputs": spec.inputs.iter().map(port_json).collect::<Vec<_>>(),
        "outputs": spec.outputs.iter().map(port_json).collect::<Vec<_>>(),
        "params": params,
    });
    if !spec.emits.is_empty() {
        v["emits"] = json!(emits(&spec));
    }
    v
}

/// The catalogue as JSON: the `.cm` format version, every operator type (ports with their
/// types, policy, params with types and defaults, docs) and every data type with its colour.
/// Port types `T0`, `T1`… are type variables of structural operators, bound by the connections.
pub fn catalogue_json(c: &Catalogue) -> Json {
    let types: Vec<Json> = crate::types::all_types()
        .into_iter()
        .map(|t| json!({ "name": t.name, "color": t.color }))
        .collect();
    json!({
        "cameleon": crate::cm::FORMAT_VERSION,
        "notes": [
            "A .cm operator is `- id: NAME` with `type: ID` (one of `operators[].id` or an alias) and `params:`.",
            "A connection goes from an output `NAME.out_port` to an input `NAME.in_port`; every input that is not optional takes exactly one connection.",
            "Port types T0, T1, … are type variables: every port of one operator with the same variable carries the same type, fixed by its connections. An `Any` input accepts every type.",
            "Operators with an `arity` param name their extra ports in_c/out_c, in_d/out_d, …"
        ],
        "operators": c.iter().map(entry_json).collect::<Vec<_>>(),
        "types": types,
    })
}

fn ports_text(ports: &[PortSpec]) -> String {
    if ports.is_empty() {
        return "—".to_owned();
    }
    ports
        .iter()
        .map(|p| {
            format!(
                "{}: {}{}",
                p.name,
                p.ty.display_name(),
                if p.optional { " (optional)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn param_text(p: &ParamInfo) -> String {
    let default = match p.default {
        Some(d) => format!("default {d}"),
        None => "required".to_owned(),
    };
    format!("{} ({}, {default}): {}", p.name, p.ty, p.doc)
}

/// The catalogue as plain text, one block per operator type.
pub fn catalogue_text(c: &Catalogue) -> String {
    let mut s = String::new();
    for e in c.iter() {
        let spec = (e.spec)();
        let aliases = if e.aliases.is_empty() {
            String::new()
        } else {
            format!(" (alias {})", e.aliases.join(", "))
        };
        let _ = writeln!(
            s,
            "{}{aliases} — {}, {} operator, fires on `{}`",
            e.id,
            e.label,
            e.family.as_str(),
            e.policy.as_str()
        );
        let _ = writeln!(s, "  {}", e.doc);
        let _ = writeln!(s, "  inputs:  {}", ports_text(&spec.inputs));
        let _ = writeln!(s, "  outputs: {}", ports_text(&spec.outputs));
        for p in e.params {
            let _ = writeln!(s, "  param {}", param_text(p));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "T0, T1, … are type variables: ports with the same variable carry the same type, fixed by the connections."
    );
    s
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The catalogue as Markdown: a summary table, then one section per operator type.
pub fn catalogue_markdown(c: &Catalogue) -> String {
    let mut s = String::from("# Caméléon operator catalogue\n\n");
    let _ = writeln!(
        s,
        "{} operator types. Write them in a `.cm` file as `- id: NAME` with `type: ID`; connect an output `NAME.out_port` to an input `NAME.in_port`. Port types `T0`, `T1`, … are type variables, fixed by the connections; an `Any` input accepts every type.\n",
        c.len()
    );
    s.push_str(
        "| id | label | family | fires on | inputs | outputs |\n|---|---|---|---|---|---|\n",
    );
    for e in c.iter() {
        let spec = (e.spec)();
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | `{}` | {} | {} |",
            e.id,
            md_escape(e.label),
            e.family.as_str(),
            e.policy.as_str(),
            md_escape(&ports_text(&spec.inputs)),
            md_escape(&ports_text(&spec.outputs)),
        );
    }
    for e in c.iter() {
        let spec = (e.spec)();
        let _ = writeln!(s, "\n## `{}` — {}\n", e.id, e.label);
        if !e.aliases.is_empty() {
            let list: Vec<String> = e.aliases.iter().map(|a| format!("`{a}`")).collect();
            let _ = writeln!(s, "Also named {}.\n", list.join(", "));
        }
        let _ = writeln!(
            s,
            "{} ({} operator, fires on `{}`).\n",
            e.doc,
            e.family.as_str(),
            e.policy.as_str()
        );
        s.push_str("| port | direction | type |\n|---|---|---|\n");
        for (dir, ports) in [("input", &spec.inputs), ("output", &spec.outputs)] {
            for p in ports.iter() {
                let _ = writeln!(
                    s,
                    "| `{}` | {dir}{} | `{}` |",
                    p.name,
                    if p.optional { " (optional)" } else { "" },
                    p.ty.display_name()
                );
            }
        }
        if !e.params.is_empty() {
            s.push_str("\n| param | type | default | description |\n|---|---|---|---|\n");
            for p in e.params {
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} | {} |",
                    p.name,
                    p.ty,
                    p.default
                        .map_or("required".to_owned(), |d| format!("`{}`", md_escape(d))),
                    md_escape(p.doc)
                );
            }
        }
    }
    s
}
