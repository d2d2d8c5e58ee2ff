//! What a satellite hosts: only what it was told (docs/wire.md, "What a satellite hosts").
//! Its hosting list is its policy: a request cannot make it run an operator type or a tool it
//! was not told to host, and the file readers and file tools need an explicit base folder.

use std::path::PathBuf;

use cameleon::catalogue::Catalogue;
use cameleon::tools::ToolRegistry;

use cameleon::operator::capability::Effect;

use crate::NatsError;

/// The operator types a satellite hosts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OpsToHost {
    /// These (none by default).
    #[default]
    None,
    /// These types, by catalogue id.
    Listed(Vec<String>),
    /// Every type linked into the program — those that read files only with a base folder.
    All,
}

/// The operator types that read files: their paths resolve against the satellite's base folder
/// (`file_loader`, `json_file`, `text_file` read one; `subnet` and `map` load a `.cm` file).
pub const FILE_READING_OPS: &[&str] = &["file_loader", "json_file", "map", "subnet", "text_file"];

/// The effects of a tool of this program, as its manifest declares them (`#[tool]`'s
/// `effects`); a name the program lacks counts as `external`, the safe side.
pub fn tool_effects(name: &str) -> Effect {
    ToolRegistry::global()
        .get(name)
        .map_or(Effect::External, |t| t.manifest().effects)
}

/// Whether hosting `ty` needs a base folder.
fn op_reads_files(ty: &str) -> bool {
    FILE_READING_OPS.contains(&ty)
}

/// Whether hosting tool `name` of `registry` needs a base folder.
fn tool_touches_files(name: &str, registry: &ToolRegistry) -> bool {
    let effects = registry
        .get(name)
        .map_or(Effect::External, |t| t.manifest().effects);
    matches!(effects, Effect::Read | Effect::Write)
}

/// What this program could host: every operator type (ids and aliases) and every tool, sorted.
pub fn could_host() -> (Vec<String>, Vec<String>) {
    let ops = Catalogue::global().ids().map(str::to_owned).collect();
    let tools = ToolRegistry::global().names().map(str::to_owned).collect();
    (ops, tools)
}

/// The operator types and tools a satellite set up with `ops`, `tools` and `base` hosts, each
/// sorted, its tools those of `registry` (the program's, and the nets its capabilities offer as
/// tools). `Err`: nothing to host (the message lists what could be), a name the program lacks,
/// or a file reader or file tool without a base folder.
pub(crate) fn resolve(
    ops: &OpsToHost,
    tools: &[String],
    base: Option<&PathBuf>,
    registry: &ToolRegistry,
) -> Result<(Vec<String>, Vec<String>), NatsError> {
    let (all_ops, _) = could_host();
    let all_tools: Vec<String> = registry.names().map(str::to_owned).collect();
    let mut hosted_ops: Vec<String> = match ops {
        OpsToHost::None => Vec::new(),
        OpsToHost::All => all_ops
            .iter()
            .filter(|t| base.is_some() || !op_reads_files(t))
            .cloned()
            .collect(),
        OpsToHost::Listed(list) => {
            for t in list {
                if !all_ops.contains(t) {
                    return Err(unknown("operator type", t, &all_ops));
                }
            }
            list.clone()
        }
    };
    for t in tools {
        if !all_tools.contains(t) {
            return Err(unknown("tool", t, &all_tools));
        }
    }
    let mut hosted_tools = tools.to_vec();
    hosted_ops.sort();
    hosted_ops.dedup();
    hosted_tools.sort();
    hosted_tools.dedup();
    if hosted_ops.is_empty() && hosted_tools.is_empty() {
        return Err(NatsError::Config(nothing_to_host(&all_ops, &all_tools)));
    }
    if base.is_none() {
        let readers: Vec<&str> = hosted_ops
            .iter()
            .filter(|t| op_reads_files(t))
            .map(String::as_str)
            .chain(
                hosted_tools
                    .iter()
                    .filter(|t| tool_touches_files(t, registry))
                    .map(String::as_str),
            )
            .collect();
        if !readers.is_empty() {
            return Err(NatsError::Config(format!(
                "{} read or write files: give the folder they are confined to with `--base DIR` (a satellite never picks one itself)",
                quoted(&readers)
            )));
        }
    }
    Ok((hosted_ops, hosted_tools))
}

fn unknown(what: &str, name: &str, all: &[String]) -> NatsError {
    let hint = match closest(name, all) {
        Some(s) => format!("did you mean `{s}`? "),
        None => String::new(),
    };
    // A tool may also be a net its capabilities offer as a tool (docs/wire.md).
    let or_net = if what == "tool" {
        ", or offer a net under this name in the `nets:` of `--base DIR`'s `cameleon.yaml`"
    } else {
        ""
    };
    NatsError::Config(format!(
        "this program has no {what} `{name}` to host ({hint}link the crate that declares it{or_net}; `cameleon satellite` with nothing to host lists what it has)"
    ))
}

/// The name of `all` closest to `name`, if it is close (at most a third of its letters apart).
fn closest<'a>(name: &str, all: &'a [String]) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let here = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb))
                    .min(row[j] + 1)
                    .min(here + 1);
                prev = here;
            }
        }
        row[b.len()]
    }
    all.iter()
        .map(|n| (distance(name, n), n.as_str()))
        .filter(|(d, _)| *d <= (name.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// The message of a satellite told to host nothing: what it could host.
pub fn nothing_to_host(ops: &[String], tools: &[String]) -> String {
    format!(
        "nothing to host: a satellite serves only what it is told. Name operator types with `--ops TYPE,…` (or `--all-ops`) and tools with `--tools NAME,…`; file readers ({}) and file tools ({}) also need `--base DIR`.\n  operator types this program has: {}\n  tools this program has: {}",
        FILE_READING_OPS.join(", "),
        tools
            .iter()
            .filter(|t| tool_touches_files(t, ToolRegistry::global()))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        ops.join(", "),
        tools.join(", ")
    )
}

fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    q.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolves against the program's tools.
    fn resolve(
        ops: &OpsToHost,
        tools: &[String],
        base: Option<&PathBuf>,
    ) -> Result<(Vec<String>, Vec<String>), NatsError> {
        super::resolve(ops, tools, base, ToolRegistry::global())
    }

    #[test]
    fn nothing_told_is_nothing_hosted_and_the_error_lists_what_could_be() {
        let Err(NatsError::Config(m)) = resolve(&OpsToHost::None, &[], None) else {
            panic!("hosting nothing must be refused");
        };
        assert!(m.starts_with("nothing to host"), "{m}");
        assert!(m.contains("counter") && m.contains("write_file"), "{m}");
    }

    #[test]
    fn file_readers_and_file_tools_need_a_base_folder() {
        for (ops, tools) in [
            (OpsToHost::Listed(vec!["text_file".into()]), vec![]),
            (OpsToHost::None, vec!["write_file".to_owned()]),
            (OpsToHost::None, vec!["read_file".to_owned()]),
        ] {
            let Err(NatsError::Config(m)) = resolve(&ops, &tools, None) else {
                panic!("{ops:?} {tools:?} without a base must be refused");
            };
            assert!(m.contains("--base DIR"), "{m}");
        }
        let base = PathBuf::from(".");
        let (ops, tools) = resolve(
            &OpsToHost::Listed(vec!["text_file".into()]),
            &["write_file".to_owned()],
            Some(&base),
        )
        .unwrap();
        assert_eq!(
            (ops, tools),
            (vec!["text_file".into()], vec!["write_file".into()])
        );
    }

    #[test]
    fn all_ops_leaves_the_file_readers_out_without_a_base() {
        let (ops, tools) = resolve(&OpsToHost::All, &[], None).unwrap();
        assert!(ops.contains(&"counter".to_owned()) && tools.is_empty());
        assert!(!ops.iter().any(|t| op_reads_files(t)), "{ops:?}");
        let base = PathBuf::from(".");
        let (ops, _) = resolve(&OpsToHost::All, &[], Some(&base)).unwrap();
        assert!(ops.contains(&"text_file".to_owned()));
    }

    #[test]
    fn a_name_the_program_lacks_is_refused_with_a_suggestion() {
        let Err(NatsError::Config(m)) =
            resolve(&OpsToHost::Listed(vec!["countr".into()]), &[], None)
        else {
            panic!("an unknown type must be refused");
        };
        assert!(
            m.contains("`countr`") && m.contains("did you mean `counter`"),
            "{m}"
        );
    }
}
