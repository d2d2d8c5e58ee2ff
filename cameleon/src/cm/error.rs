//! [`CmError`]: every problem of a `.cm` file, each with its line, column, snippet and hint, a
//! [`miette::Diagnostic`] (the `cameleon` command line draws it with miette's graphical
//! renderer).

use std::fmt;
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode};
use serde::Serialize;

use super::tree::Span;
use crate::net::ProblemKind;

/// What kind of problem a [`CmProblem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmProblemKind {
    /// The file could not be read.
    Io,
    /// The text is not valid YAML.
    Syntax,
    /// The input exceeds a safety limit (size, nesting, aliases): see [`limits`](super::limits).
    Limit,
    /// The YAML does not have the shape of a `.cm` file: unknown or missing key, wrong type.
    Schema,
    /// The file declares a format version this crate does not read.
    Version,
    /// No operator type of the catalogue has this id.
    UnknownType,
    /// An operator's params are missing, unknown or ill-typed.
    Param,
    /// A tool named under `tools:` (or by a `tool` operator) that the build does not have.
    UnknownTool,
    /// A capabilities file names a provider kind the build does not have.
    UnknownKind,
    /// A capabilities file names an environment variable that is not set.
    Env,
    /// An operator names a chat model, an embedder, a memory or a tool that the capabilities
    /// do not define (`cameleon check`).
    UnknownCapability,
    /// A warning: an operator calls tools, and the net has no `tools:` key, or its `tools:` does
    /// not allow them, so every such call is denied (`cameleon check`).
    ToolsDenied,
    /// A warning: a tool under the net's `tools: allow:` has effects beyond `read` (it writes
    /// files, or acts on the outside world) and the user has not granted it, so each call asks a
    /// person or is denied (`cameleon check`; docs/tools.md#effects-and-grants).
    NeedsGrant,
    /// A capabilities file that is not trusted has an entry only a trusted one may have: one
    /// sending an environment variable or the run's data to a host, or granting tools
    /// (docs/security.md).
    Untrusted,
    /// The net is invalid (docs/semantics.md §1): unknown port, type mismatch, unconnected input, ….
    Net(ProblemKind),
}

impl CmProblemKind {
    /// Whether a problem of this kind is a warning (the file is still valid), not an error.
    pub fn is_warning(self) -> bool {
        matches!(self, CmProblemKind::ToolsDenied | CmProblemKind::NeedsGrant)
    }

    /// A snake_case name, as in `check --json` (net problems use their own names, e.g.
    /// `type_mismatch`).
    pub fn as_str(self) -> &'static str {
        match self {
            CmProblemKind::Io => "io",
            CmProblemKind::Syntax => "syntax",
            CmProblemKind::Limit => "limit",
            CmProblemKind::Schema => "schema",
            CmProblemKind::Version => "version",
            CmProblemKind::UnknownType => "unknown_type",
            CmProblemKind::Param => "param",
            CmProblemKind::UnknownTool => "unknown_tool",
            CmProblemKind::UnknownKind => "unknown_kind",
            CmProblemKind::Env => "env",
            CmProblemKind::UnknownCapability => "unknown_capability",
            CmProblemKind::ToolsDenied => "tools_denied",
            CmProblemKind::NeedsGrant => "needs_grant",
            CmProblemKind::Untrusted => "untrusted",
            CmProblemKind::Net(k) => match k {
                ProblemKind::DuplicateOperator => "duplicate_operator",
                ProblemKind::BadEndpoint => "bad_endpoint",
                ProblemKind::UnknownOperator => "unknown_operator",
                ProblemKind::UnknownPort => "unknown_port",
                ProblemKind::WrongDirection => "wrong_direction",
                ProblemKind::UnconnectedInput => "unconnected_input",
                ProblemKind::InputHasManyConnections => "input_has_many_connections",
                ProblemKind::TypeMismatch => "type_mismatch",
                ProblemKind::SourceFeedsNothing => "source_feeds_nothing",
                ProblemKind::BadOperator => "bad_operator",
            },
        }
    }
}

impl fmt::Display for CmProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for CmProblemKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One problem in a `.cm` file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CmProblem {
    /// What kind of problem.
    pub kind: CmProblemKind,
    /// What is wrong (lowercase, no trailing period).
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// Byte offset of the text at fault.
    #[serde(skip)]
    pub offset: usize,
    /// Byte length of the text at fault (0: a position).
    #[serde(skip)]
    pub len: usize,
    /// The source line at fault.
    pub snippet: String,
}

impl CmProblem {
    pub(crate) fn new(
        kind: CmProblemKind,
        src: &str,
        span: Span,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> Self {
        let offset = span.offset.min(src.len());
        let line_start = src[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = src[offset..].find('\n').map_or(src.len(), |i| offset + i);
        let line = src[line_start..line_end].trim_end_matches('\r');
        let snippet = if line.chars().count() <= MAX_SHOWN_LINE {
            line.to_owned()
        } else {
            // Around the problem, on a very long line.
            let col = src[line_start..offset].chars().count();
            let from = col.saturating_sub(60);
            let cut: String = line.chars().skip(from).take(MAX_SHOWN_LINE).collect();
            format!("{}{cut}…", if from > 0 { "…" } else { "" })
        };
        let len = span.len.min(src.len() - offset);
        CmProblem {
            kind,
            message: message.into(),
            hint,
            line: span.line.max(1),
            column: span.column.max(1),
            offset,
            len,
            snippet,
        }
    }
}

impl fmt::Display for CmProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CmProblem {}

/// A `.cm` file that could not be loaded, with **every** problem found in it, in source order.
///
/// `Display` gives one line per problem (`file.cm:12:7: message (hint: …)`); as a
/// [`miette::Diagnostic`] it renders each problem with its source snippet:
///
/// ```
/// let err = cameleon::Net::from_cm("operators:\n  - id: src\n    type: sourc\n").unwrap_err();
/// assert_eq!(err.problems()[0].line, 3);
/// assert!(err.to_string().contains("did you mean `source`?"));
/// ```
#[derive(Clone)]
pub struct CmError {
    source: NamedSource<Arc<str>>,
    problems: Vec<CmProblem>,
    /// Whether some line is too long for miette to draw (it panics past 65 535 columns).
    long_lines: bool,
    /// What the file is meant to be, in messages (`net`, `capabilities file`).
    document: &'static str,
}

impl CmError {
    pub(crate) fn new(name: &str, source: &str, mut problems: Vec<CmProblem>) -> Self {
        problems.sort_by_key(|p| (p.offset, p.line, p.column));
        problems.dedup();
        let long_lines = source.lines().any(|l| l.len() > 10_000);
        CmError {
            source: NamedSource::new(name, Arc::from(source)),
            problems,
            long_lines,
            document: "net",
        }
    }

    /// The same error, about a file that is meant to be a `document` (`"capabilities file"`)
    /// rather than a net.
    pub(crate) fn about(mut self, document: &'static str) -> Self {
        self.document = document;
        self
    }

    /// What the file is meant to be: `net` for a `.cm` file, `capabilities file` for a
    /// `cameleon.yaml`.
    pub fn document(&self) -> &str {
        self.document
    }

    /// The problems, in source order. Never empty.
    pub fn problems(&self) -> &[CmProblem] {
        &self.problems
    }

    /// The file name shown in messages (`<input>` for text without a file).
    pub fn file_name(&self) -> &str {
        self.source.name()
    }

    /// The source text.
    pub fn source_text(&self) -> &str {
        self.source.inner()
    }

    /// Whether any problem is of kind `kind`.
    pub fn has(&self, kind: CmProblemKind) -> bool {
        self.problems.iter().any(|p| p.kind == kind)
    }
}

impl fmt::Debug for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmError")
            .field("file", &self.file_name())
            .field("problems", &self.problems)
            .finish()
    }
}

impl fmt::Display for CmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(
                f,
                "{}:{}:{}: {}",
                self.file_name(),
                p.line,
                p.column,
                p.message
            )?;
            if let Some(h) = &p.hint {
                write!(f, " (hint: {h})")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for CmError {}

fn label_text(kind: CmProblemKind) -> &'static str {
    match kind {
        CmProblemKind::Io => "cannot read",
        CmProblemKind::Syntax => "invalid YAML here",
        CmProblemKind::Limit => "limit exceeded here",
        CmProblemKind::Schema => "here",
        CmProblemKind::Version => "unsupported version",
        CmProblemKind::UnknownType => "unknown operator type",
        CmProblemKind::Param => "bad param",
        CmProblemKind::UnknownTool => "unknown tool",
        CmProblemKind::UnknownKind => "unknown kind",
        CmProblemKind::Env => "variable not set",
        CmProblemKind::UnknownCapability => "not defined",
        CmProblemKind::ToolsDenied => "every call denied",
        CmProblemKind::NeedsGrant => "needs your grant",
        CmProblemKind::Untrusted => "needs trust",
        CmProblemKind::Net(ProblemKind::TypeMismatch) => "types differ",
        CmProblemKind::Net(ProblemKind::UnknownPort) => "no such port",
        CmProblemKind::Net(ProblemKind::UnknownOperator) => "no such operator",
        CmProblemKind::Net(ProblemKind::UnconnectedInput) => "input not connected",
        CmProblemKind::Net(ProblemKind::InputHasManyConnections) => "second connection",
        CmProblemKind::Net(ProblemKind::DuplicateOperator) => "duplicate name",
        CmProblemKind::Net(ProblemKind::WrongDirection) => "wrong direction",
        CmProblemKind::Net(ProblemKind::SourceFeedsNothing) => "feeds nothing",
        CmProblemKind::Net(_) => "here",
    }
}

/// Each problem renders as a diagnostic of its own, against its [`CmError`]'s source.
impl Diagnostic for CmProblem {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!("cm::{}", self.kind)))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(if self.kind.is_warning() {
            miette::Severity::Warning
        } else {
            miette::Severity::Error
        })
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.hint
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(LabeledSpan::new(
            Some(label_text(self.kind).to_owned()),
            self.offset,
            self.len,
        ))))
    }
}

/// Renders each problem with its snippet and hint, as related diagnostics (snippets are left
/// out when the file has lines too long to draw; the `cameleon` command line crops them
/// instead).
impl Diagnostic for CmError {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        (!self.long_lines).then_some(&self.source as &dyn SourceCode)
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(self.problems.iter().map(|p| p as &dyn Diagnostic)))
    }
}

/// Lines longer than this are cropped around the problem in a [`CmProblem`]'s snippet.
const MAX_SHOWN_LINE: usize = 160;
