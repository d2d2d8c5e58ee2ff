//! Validation problems: what is wrong with a net, where, and how to fix it.

use std::fmt;

use serde::Serialize;

/// Where in a net a problem is (indices in declaration order), so a `.cm` loader can point at
/// the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The whole net.
    Net,
    /// An operator declaration.
    Operator(usize),
    /// A connection; `end` says which endpoint, if one.
    Connection {
        /// The connection's index.
        index: usize,
        /// The endpoint at fault, if one.
        end: Option<End>,
    },
}

/// An endpoint of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The `from` side.
    From,
    /// The `to` side.
    To,
}

/// The kinds of validation problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Two operators share a name.
    DuplicateOperator,
    /// An endpoint is not written `instance.port`.
    BadEndpoint,
    /// A connection names an operator the net does not have.
    UnknownOperator,
    /// A connection names a port the operator does not have.
    UnknownPort,
    /// An input used as a source or an output used as a target.
    WrongDirection,
    /// A required input has no connection.
    UnconnectedInput,
    /// An input has more than one connection.
    InputHasManyConnections,
    /// The two ends of a connection have different types.
    TypeMismatch,
    /// An operator without inputs feeds nothing, so its firing rule would hold forever.
    SourceFeedsNothing,
    /// An operator declares more than 64 inputs, an emission set names no output, or its
    /// timeout is 0 ms.
    BadOperator,
}

/// One validation problem: what, where, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The kind of problem.
    pub kind: ProblemKind,
    /// Where it is.
    pub at: Location,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
    /// How to fix it, when there is something to say.
    pub hint: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// A net that failed validation, with every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct NetError {
    /// The problems, in the order of the declarations they concern.
    pub problems: Vec<Problem>,
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "invalid net: {one}"),
            many => {
                write!(f, "invalid net: {} problems", many.len())?;
                for p in many {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
        }
    }
}
