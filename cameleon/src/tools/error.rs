//! [`ToolError`]: why a tool did not return a result.

use std::fmt;

/// What kind of failure a [`ToolError`] is; it decides the [`ToolResult`](super::ToolResult)
/// status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolErrorKind {
    /// The tool ran and failed (status `error`).
    Failed,
    /// The arguments do not fit the tool (status `error`, the tool never ran).
    InvalidArgs,
    /// The tool did not finish in time (status `timeout`).
    Timeout,
}

/// Why a tool did not return a result. A tool function returns `Result<T, ToolError>`; `?`
/// converts I/O and JSON errors and strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    kind: ToolErrorKind,
    message: String,
}

impl ToolError {
    /// A failure of the tool.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            kind: ToolErrorKind::Failed,
            message: message.into(),
        }
    }

    /// Arguments that do not fit the tool.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        ToolError {
            kind: ToolErrorKind::InvalidArgs,
            message: message.into(),
        }
    }

    /// A tool that ran out of time.
    pub fn timeout(message: impl Into<String>) -> Self {
        ToolError {
            kind: ToolErrorKind::Timeout,
            message: message.into(),
        }
    }

    /// The kind.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError::new(s)
    }
}

impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        ToolError::new(s)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::new(e.to_string())
    }
}
