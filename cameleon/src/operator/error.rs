//! Why a firing failed.

use std::fmt;

/// Why a firing failed. `Display` is the operator's message.
#[derive(Debug)]
pub struct OpError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl OpError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        OpError {
            message: message.into(),
            source: None,
        }
    }

    /// Wraps another error (its message becomes this one's).
    pub fn from_err(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        OpError {
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }

    /// The error of a firing whose `run` panicked: `panicked: MESSAGE`, as the engine and a
    /// satellite report it.
    #[cold]
    pub fn panicked(panic: &crate::runtime::Panic) -> Self {
        OpError::new(format!("panicked: {}", panic.message()))
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for OpError {
    fn from(s: String) -> Self {
        OpError::new(s)
    }
}
impl From<&str> for OpError {
    fn from(s: &str) -> Self {
        OpError::new(s)
    }
}
impl From<serde_json::Error> for OpError {
    fn from(e: serde_json::Error) -> Self {
        OpError::from_err(e)
    }
}
impl From<std::io::Error> for OpError {
    fn from(e: std::io::Error) -> Self {
        OpError::from_err(e)
    }
}

/// A parameter that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParamError {
    /// The parameter at fault (`None`: the params as a whole).
    pub param: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl ParamError {
    /// An error about parameter `param`.
    pub fn new(param: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        ParamError {
            param: param.into(),
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}
