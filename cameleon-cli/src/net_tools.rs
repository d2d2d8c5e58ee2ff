//! The nets the capabilities files offer as tools (`nets:`, docs/tools.md#nets-as-tools), by
//! name: what a command loading a `.cm` file tells its loader, so a file naming them loads.

use std::path::Path;

use cameleon::cm::Loader;

/// The names of the tools the capabilities files that apply to `.cm` file `cm` define by name
/// — the nets they offer as tools (`nets:`, docs/tools.md#nets-as-tools) — read for their names
/// only (nothing built, started or contacted), so a file naming them loads. A capabilities file
/// that is not valid adds nothing here: the command that builds it reports it.
pub(crate) fn net_tool_names(cm: &Path, capabilities: Option<&Path>) -> Vec<String> {
    net_tool_names_in(&cameleon::cm::folder_of(cm), capabilities)
}

/// [`net_tool_names`] of a `.cm` file in folder `dir` (a recorded run knows its net's folder,
/// not its file).
fn net_tool_names_in(dir: &Path, capabilities: Option<&Path>) -> Vec<String> {
    cameleon::capabilities::Runtime::builder()
        .for_dir(dir, capabilities)
        .names()
        .map(|n| {
            n.names(cameleon::operator::capability::Named::Tool)
                .into_iter()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `names`, its loader also told the net-tool names of a `.cm` file in folder `dir` (a
/// journaled net that names net-tools loads back).
pub(crate) fn with_net_tools(
    mut names: cameleon::journal::Names,
    dir: &Path,
    capabilities: Option<&Path>,
) -> cameleon::journal::Names {
    let known = net_tool_names_in(dir, capabilities);
    if known.is_empty() {
        return names;
    }
    let prior = names.loader.take();
    names.loader = Some(std::sync::Arc::new(move |l: Loader<'_>| {
        let l = match &prior {
            Some(p) => p(l),
            None => l,
        };
        l.known_tools(known.iter().cloned())
    }));
    names
}
