//! Where in the file a problem of the net builder is: the builder's operators and connections
//! mapped back to their declarations, leaving out problems that only follow from one already
//! reported.

use std::collections::HashSet;

use super::decls::Decls;
use crate::cm::tree::Span;
use crate::net::{End, Location, ProblemKind};

/// How the builder's operators and connections map back to the declarations, and what was
/// already reported.
pub(super) struct Mapping<'a, 't> {
    pub(super) decls: &'a Decls<'t>,
    /// `ops[i]`: the declaration index of the builder's i-th operator.
    pub(super) ops: &'a [usize],
    /// `conns[i]`: the declaration index of the builder's i-th connection.
    pub(super) conns: &'a [usize],
    /// Builder indices of operators standing in for ones with bad params.
    pub(super) placeholders: &'a HashSet<usize>,
    /// Names of operators that could not be built (unknown type, unreadable declaration).
    pub(super) failed: &'a HashSet<String>,
    /// Names of operators a connection with a wrong input port was meant for.
    pub(super) broken_targets: &'a HashSet<String>,
}

impl Mapping<'_, '_> {
    /// Where a net problem is in the file, or `None` when it only follows from a problem
    /// already reported (a connection to an operator whose type is unknown).
    pub(super) fn locate(&self, p: &crate::net::Problem) -> Option<Span> {
        let (decls, ops, conns, placeholders, failed) = (
            self.decls,
            self.ops,
            self.conns,
            self.placeholders,
            self.failed,
        );
        let top = Span {
            line: 1,
            column: 1,
            ..Span::default()
        };
        match p.at {
            Location::Net => Some(top),
            Location::Operator(i) => {
                let (node, decl) = decls.operators.get(*ops.get(i)?)?;
                if p.kind == ProblemKind::UnconnectedInput {
                    // Its ports depend on the bad params, or its input comes from an operator
                    // whose type is unknown or whose params are bad (a sub-net whose ports
                    // depend on its file): both are already reported.
                    let name = decl.as_ref().map(|d| d.id.as_str());
                    let fed_by_failed = decls.connections.iter().any(|(_, c)| {
                        c.as_ref().is_some_and(|c| {
                            endpoint_op(&c.to) == name
                                && endpoint_op(&c.from)
                                    .is_some_and(|o| failed.contains(o) || self.is_placeholder(o))
                        })
                    });
                    let broken = name.is_some_and(|n| self.broken_targets.contains(n));
                    if placeholders.contains(&i) || fed_by_failed || broken {
                        return None;
                    }
                }
                Some(node.get("id").map_or(node.span, |n| n.span))
            }
            Location::Connection { index, end } => {
                let (node, decl) = decls.connections.get(*conns.get(index)?)?;
                let decl = decl.as_ref()?;
                if let Some(end) = end {
                    let text = match end {
                        End::From => &decl.from,
                        End::To => &decl.to,
                    };
                    if let Some(o) = endpoint_op(text) {
                        if failed.contains(o) && p.kind == ProblemKind::UnknownOperator {
                            return None;
                        }
                        if self.is_placeholder(o)
                            && matches!(
                                p.kind,
                                ProblemKind::UnknownPort | ProblemKind::WrongDirection
                            )
                        {
                            return None;
                        }
                    }
                    let key = match end {
                        End::From => "from",
                        End::To => "to",
                    };
                    return Some(node.get(key).map_or(node.span, |n| n.span));
                }
                Some(match (node.entry("from"), node.entry("to")) {
                    (Some((fk, fv)), Some((tk, tv))) => {
                        join(join(fk.span, fv.span), join(tk.span, tv.span))
                    }
                    _ => node.span,
                })
            }
        }
    }
}

impl Mapping<'_, '_> {
    /// Whether the operator declared as `name` stands in for one with bad params.
    fn is_placeholder(&self, name: &str) -> bool {
        self.decls
            .operators
            .iter()
            .enumerate()
            .filter(|(_, (_, d))| d.as_ref().is_some_and(|d| d.id == name))
            .any(|(di, _)| {
                self.ops
                    .iter()
                    .position(|&x| x == di)
                    .is_some_and(|bi| self.placeholders.contains(&bi))
            })
    }
}

/// The operator named by an endpoint `op.port`.
pub(super) fn endpoint_op(text: &str) -> Option<&str> {
    text.trim().split_once('.').map(|(o, _)| o)
}

/// The smallest span covering `a` and `b`.
pub(super) fn join(a: Span, b: Span) -> Span {
    let (first, _) = if a.offset <= b.offset { (a, b) } else { (b, a) };
    let end = (a.offset + a.len).max(b.offset + b.len);
    Span {
        offset: first.offset,
        len: end - first.offset,
        line: first.line,
        column: first.column,
    }
}
