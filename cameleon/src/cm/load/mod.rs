//! Loading: text → located tree → typed declarations → operators from the catalogue → a
//! validated [`Net`], collecting every problem on the way.
//!
//! - this file: the [`Loader`] and its settings, and reading a `.cm` file from disk;
//! - [`decls`]: text → tree → typed declarations, each problem located;
//! - [`build`]: declarations → operators from the catalogue → a validated [`Net`];
//! - [`locate`]: where in the file each problem of the net builder is.

mod build;
mod decls;
mod locate;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{CmError, CmProblem, CmProblemKind};
use super::format::CmFile;
use super::limits;
use super::tree::Span;
use crate::catalogue::{BuildContext, Catalogue};
use crate::net::Net;
use crate::tools::ToolRegistry;
use decls::{LoadCx, parse_tree, read_decls};

/// Loads `.cm` files: which catalogue resolves operator types, where relative paths point, and
/// whether file-reading operators may leave that folder.
///
/// ```
/// use cameleon::cm::Loader;
///
/// let text = "operators:\n  - {id: hi, type: source, params: {value: hi}}\n  - {id: out, type: sink}\nconnections:\n  - {from: hi.out_data, to: out.in_data}\n";
/// let net = Loader::new().file_name("hello.cm").load_str(text)?;
/// assert_eq!(net.operators().len(), 2);
/// # Ok::<(), cameleon::cm::CmError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Loader<'c> {
    catalogue: &'c Catalogue,
    base_dir: Option<PathBuf>,
    allow_outside: bool,
    name: Option<String>,
    tools: Option<Arc<ToolRegistry>>,
    /// Names of tools known to exist beside `tools` (the nets a capabilities file offers as
    /// tools, read for their names only by `cameleon check`).
    known_tools: Arc<std::collections::BTreeSet<String>>,
    /// The `.cm` files of the nets this one is nested in, and its own (see
    /// [`BuildContext::files`]).
    files: Vec<PathBuf>,
    /// How deep this net is nested in sub-nets.
    depth: u32,
    /// The sub-net files loaded for the top net (see [`BuildContext::subnet_files`]).
    subnet_files: crate::catalogue::SubnetFiles,
}

impl Default for Loader<'static> {
    fn default() -> Self {
        Loader::new()
    }
}

impl Loader<'static> {
    /// A loader using the global catalogue, paths relative to the current directory.
    pub fn new() -> Self {
        Loader {
            catalogue: Catalogue::global(),
            base_dir: None,
            allow_outside: false,
            name: None,
            tools: None,
            known_tools: Arc::default(),
            files: Vec::new(),
            depth: 0,
            subnet_files: Default::default(),
        }
    }
}

impl<'c> Loader<'c> {
    /// Resolves operator types in `catalogue` instead of the global one.
    pub fn catalogue<'d>(self, catalogue: &'d Catalogue) -> Loader<'d> {
        Loader {
            catalogue,
            base_dir: self.base_dir,
            allow_outside: self.allow_outside,
            name: self.name,
            tools: self.tools,
            known_tools: self.known_tools,
            files: self.files,
            depth: self.depth,
            subnet_files: self.subnet_files,
        }
    }

    /// Checks the names under `tools:` (and the `tool` operators' `name` params) against
    /// `tools` instead of every `#[tool]` of the program.
    pub fn tools(mut self, tools: Arc<ToolRegistry>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Also accepts these tool names (tools known by name only, such as the nets a
    /// capabilities file offers as tools, docs/tools.md#nets-as-tools).
    pub fn known_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        let mut k = std::collections::BTreeSet::clone(&self.known_tools);
        k.extend(names.into_iter().map(Into::into));
        self.known_tools = Arc::new(k);
        self
    }

    /// Whether `name` may be a tool: the registry's, or one of the [known](Self::known_tools).
    pub(super) fn may_have_tool(&self, name: &str) -> bool {
        self.tool_registry().may_have(name) || self.known_tools.contains(name)
    }

    pub(super) fn tool_registry(&self) -> &ToolRegistry {
        self.tools.as_deref().unwrap_or(ToolRegistry::global())
    }

    /// Loads the net as a sub-net of the net being built with `cx` (docs/semantics.md §10.2):
    /// one level deeper, within the same files, with the same file access.
    pub fn nested_in(mut self, cx: &BuildContext) -> Self {
        self.files = cx.files.clone();
        self.depth = cx.depth + 1;
        self.subnet_files = cx.subnet_files.clone();
        self.allow_outside = cx.allow_outside;
        self
    }

    /// The folder file-reading operators resolve relative paths against (and are confined
    /// to). [`load_file`](Self::load_file) uses the file's folder unless this is set.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// Lets file-reading operators read outside their folder (off by default).
    pub fn allow_outside(mut self, allow: bool) -> Self {
        self.allow_outside = allow;
        self
    }

    /// The name errors show for the text (default `<input>`, or the path for
    /// [`load_file`](Self::load_file)).
    pub fn file_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    fn shown_name(&self) -> &str {
        self.name.as_deref().unwrap_or("<input>")
    }

    /// Loads a net from `.cm` text.
    pub fn load_str(&self, text: &str) -> Result<Net, CmError> {
        let mut cx = LoadCx {
            src: text,
            problems: Vec::new(),
        };
        let net = self.load_inner(&mut cx);
        match net {
            Some(net) if cx.problems.is_empty() => Ok(net),
            _ => Err(CmError::new(self.shown_name(), text, cx.problems)),
        }
    }

    /// Reads and loads the `.cm` file at `path`. Errors name the file; relative paths of
    /// file-reading operators are relative to the file's folder.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Net, CmError> {
        let path = path.as_ref();
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| path.display().to_string());
        let text = read_text(path, &name)?;
        let base = self
            .base_dir
            .clone()
            .unwrap_or_else(|| super::folder_of(path));
        let mut files = self.files.clone();
        files.push(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
        Loader {
            catalogue: self.catalogue,
            base_dir: Some(base),
            allow_outside: self.allow_outside,
            name: Some(name),
            tools: self.tools.clone(),
            known_tools: self.known_tools.clone(),
            files,
            depth: self.depth,
            subnet_files: self.subnet_files.clone(),
        }
        .load_str(&text)
    }

    /// Reads `.cm` text into its declarations, without resolving operators or checking the
    /// net: the file's shape only (for tools that edit files).
    pub fn parse_str(&self, text: &str) -> Result<CmFile, CmError> {
        let mut cx = LoadCx {
            src: text,
            problems: Vec::new(),
        };
        let tree = parse_tree(&mut cx);
        let decl = tree.as_ref().and_then(|t| read_decls(&mut cx, t, text));
        match decl {
            Some(d) if cx.problems.is_empty() => Ok(d.into_file()),
            _ => Err(CmError::new(self.shown_name(), text, cx.problems)),
        }
    }
}

/// Reads a file within the size limit, as UTF-8 text.
fn read_text(path: &Path, name: &str) -> Result<String, CmError> {
    let io_err = |message: String, hint: Option<String>, kind: CmProblemKind| {
        CmError::new(
            name,
            "",
            vec![CmProblem::new(
                kind,
                "",
                Span {
                    line: 1,
                    column: 1,
                    ..Span::default()
                },
                message,
                hint,
            )],
        )
    };
    let file = std::fs::File::open(path).map_err(|e| {
        io_err(
            format!("cannot read `{}`: {e}", path.display()),
            None,
            CmProblemKind::Io,
        )
    })?;
    let mut bytes = Vec::new();
    let limit = limits::MAX_FILE_BYTES as u64;
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| {
        io_err(
            format!("cannot read `{}`: {e}", path.display()),
            None,
            CmProblemKind::Io,
        )
    })?;
    if bytes.len() as u64 > limit {
        return Err(io_err(
            format!("the file is larger than {limit} bytes, the limit for .cm files"),
            Some("a .cm file holds a topology, not data: read large inputs with a `text_file` or `json_file` operator".into()),
            CmProblemKind::Limit,
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let prefix = String::from_utf8_lossy(&bytes[..valid]).into_owned();
        let line = prefix.matches('\n').count() + 1;
        let column = prefix.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let src = String::from_utf8_lossy(bytes).into_owned();
        CmError::new(
            name,
            &src,
            vec![CmProblem::new(
                CmProblemKind::Syntax,
                &src,
                Span {
                    offset: valid,
                    len: 0,
                    line,
                    column,
                },
                format!("the file is not UTF-8 text (invalid byte at offset {valid})"),
                Some("save the file as UTF-8".into()),
            )],
        )
    })
}
