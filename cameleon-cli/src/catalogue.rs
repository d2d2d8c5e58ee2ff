//! `cameleon catalogue`: every registered operator type, as text, JSON or Markdown — enough for
//! a person or an LLM to write a valid `.cm` file. JSON and Markdown are the catalogue's own
//! exports ([`Catalogue::to_json`], [`Catalogue::to_markdown`]); the terminal listing is here.

use std::fmt::Write as _;

use super::{CatalogueArgs, Io, exit};
use cameleon::catalogue::{Catalogue, ParamInfo};
use cameleon::operator::PortSpec;

pub(super) fn catalogue(a: &CatalogueArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let c = Catalogue::global();
    let text = if a.json {
        let mut s = serde_json::to_string_pretty(&c.to_json()).unwrap_or_default();
        s.push('\n');
        s
    } else if a.markdown {
        c.to_markdown()
    } else {
        catalogue_text(c)
    };
    io.stdout.write_all(text.as_bytes())?;
    Ok(exit::OK)
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
        let _ = writeln!(s, "  {}", e.summary());
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
