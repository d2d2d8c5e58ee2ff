//! What the catalogue holds about an operator type: its [`CatalogueEntry`], the [`Catalogued`]
//! trait that carries it, and [`submit_operator!`](crate::submit_operator) for hand-written
//! entries.

use std::fmt;

use super::{BuildContext, ParamError, ParamInfo};
use crate::operator::{Execution, OpSettings, OpSpec, Operator, Params};
use crate::policy::{Family, Policy};

/// Builds an operator instance from `.cm` params.
pub type BuildFn = fn(&Params, &BuildContext) -> Result<Box<dyn Operator>, ParamError>;

/// An operator type in the catalogue.
#[derive(Clone, Copy)]
pub struct CatalogueEntry {
    /// Catalogue id (`.cm` `type:`), e.g. `chunker`.
    pub id: &'static str,
    /// Other ids that name the same operator (`switch` for `gate`).
    pub aliases: &'static [&'static str],
    /// Human label.
    pub label: &'static str,
    /// Structural or behavioral.
    pub family: Family,
    /// Firing policy.
    pub policy: Policy,
    /// Documentation (the operator's doc comment).
    pub doc: &'static str,
    /// Declared parameters.
    pub params: &'static [ParamInfo],
    /// What each port is for (the port fields' doc comments), for the catalogue exports.
    pub ports: &'static [PortDoc],
    /// The spec of an instance built with default params (ports, types, emission sets).
    pub spec: fn() -> OpSpec,
    /// Builds an instance from `.cm` params.
    pub build: BuildFn,
    /// How parallel mode runs the operator's firings (`exec = …`; always
    /// [`Inline`](Execution::Inline) for a structural operator).
    pub execution: Execution,
    /// The operator type's default timeout and retries (`timeout_ms = …`, `retry(…)`), which
    /// a net's instance settings override field by field.
    pub settings: OpSettings,
}

impl fmt::Debug for CatalogueEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogueEntry")
            .field("id", &self.id)
            .field("family", &self.family)
            .field("policy", &self.policy)
            .field("execution", &self.execution)
            .finish_non_exhaustive()
    }
}

inventory::collect!(CatalogueEntry);

/// The documentation of one port (or of a variadic group of ports) of an operator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortDoc {
    /// The port's name (`in_data`); for a variadic group, its first port (`in_b` of `in_b`,
    /// `in_c`, …).
    pub name: &'static str,
    /// Whether `name` starts a variadic group: the doc is also that of the ports of the same
    /// prefix with a later letter.
    pub group: bool,
    /// What the port carries and when to connect it, in a sentence or two.
    pub doc: &'static str,
}

impl PortDoc {
    /// Whether this documents the port `port`: the same name, or a later letter of the group.
    pub fn documents(&self, port: &str) -> bool {
        if port == self.name {
            return true;
        }
        let split = |n: &'static str| n.rsplit_once('_').filter(|(_, l)| l.len() == 1);
        match (self.group, split(self.name), port.rsplit_once('_')) {
            (true, Some((prefix, first)), Some((p, letter))) => {
                p == prefix
                    && letter.len() == 1
                    && letter.bytes().all(|b| b.is_ascii_lowercase())
                    && letter > first
            }
            _ => false,
        }
    }
}

impl CatalogueEntry {
    /// The documentation of port `port`, if its declaration has one.
    pub fn port_doc(&self, port: &str) -> Option<&'static str> {
        self.ports.iter().find(|d| d.documents(port)).map(|d| d.doc)
    }

    /// The first paragraph of [`doc`](Self::doc), on one line: what the catalogue exports show.
    pub fn summary(&self) -> String {
        self.doc
            .split("\n\n")
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An operator type that carries its catalogue entry: every type declared with `#[operator]`.
/// [`Catalogue::register`](super::Catalogue::register) takes one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an operator declared with `#[operator]`",
    label = "no catalogue entry",
    note = "declare the operator with `#[operator(id = \"…\", …)]`, or insert a hand-written `CatalogueEntry` with `Catalogue::insert`"
)]
pub trait Catalogued {
    /// The entry: id, label, family, policy, docs, params, spec and factory.
    const ENTRY: CatalogueEntry;
}

/// Submits a hand-written [`CatalogueEntry`] to the global catalogue.
#[macro_export]
macro_rules! submit_operator {
    ($entry:expr) => {
        $crate::__private::inventory::submit! { $entry }
    };
}
