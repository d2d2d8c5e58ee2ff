//! `std-io`: sources and sinks.

use std::path::{Component, Path, PathBuf};

use crate::catalogue::{BuildContext, FromContext};
use crate::operator;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{Any, Binary, DataJSON, DataString};

/// Emits a configured string once, as a DataString on `out_data`.
#[operator(id = "source", label = "Source", family = behavioral, firing = source, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Source {
    /// the string emitted
    #[param]
    pub value: String,
    /// `value`, once, when the run starts
    #[output]
    out_data: Out<DataString>,
}

impl Source {
    /// A source of `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Source {
            value: value.into(),
        }
    }
}

impl Run for Source {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.emit(Self::out_data, DataString(self.value.clone()));
        Ok(())
    }
}

/// Emits a configured JSON value once, as a DataJSON on `out_data`.
#[operator(id = "const", label = "Const", family = behavioral, firing = source, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Const {
    /// the value emitted (any YAML value)
    #[param]
    pub value: serde_json::Value,
    /// `value`, once, when the run starts
    #[output]
    out_data: Out<DataJSON>,
}

impl Const {
    /// A source of `value`.
    pub fn new(value: serde_json::Value) -> Self {
        Const { value }
    }
}

impl Run for Const {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.emit(Self::out_data, DataJSON(self.value.clone()));
        Ok(())
    }
}

/// Collects every value it receives on `in_data` (any type); the CLI prints them.
///
/// What a sink received is [`Cvm::received`](crate::Cvm::received).
#[operator(id = "sink", label = "Sink", family = behavioral, exec = inline)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sink {
    /// any value: what the run produced (`cameleon run` prints it)
    #[input]
    in_data: In<Any>,
}

impl Sink {
    /// A sink.
    pub fn new() -> Self {
        Sink
    }
}

impl Run for Sink {
    fn run(&mut self, _cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

/// Where file-reading operators may read: paths are relative to `root` (the `.cm` file's folder)
/// and may not leave it unless `allow_outside`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAccess {
    /// The folder paths are relative to.
    pub root: PathBuf,
    /// Whether paths may leave `root`.
    pub allow_outside: bool,
}

impl Default for FileAccess {
    fn default() -> Self {
        FileAccess {
            root: PathBuf::from("."),
            allow_outside: false,
        }
    }
}

impl FromContext for FileAccess {
    fn from_context(cx: &BuildContext) -> Self {
        FileAccess {
            root: cx.base_dir.clone().unwrap_or_else(|| ".".into()),
            allow_outside: cx.allow_outside,
        }
    }
}

impl FileAccess {
    /// Resolves `path` against the root, refusing paths that leave it.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, OpError> {
        let p = Path::new(path);
        let joined = self.root.join(p);
        if self.allow_outside {
            return Ok(joined);
        }
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(OpError::new(format!(
                "path `{path}` leaves the pipeline's folder `{}`; allow it explicitly to read outside",
                self.root.display()
            )));
        }
        // A symbolic link inside the folder may still point outside it.
        if let (Ok(root), Ok(real)) = (self.root.canonicalize(), joined.canonicalize())
            && !real.starts_with(&root)
        {
            return Err(OpError::new(format!(
                "path `{path}` resolves outside the pipeline's folder `{}`",
                self.root.display()
            )));
        }
        Ok(joined)
    }

    /// Reads the regular file at `path`, at most [`DEFAULT_MAX_BYTES`] bytes (see
    /// [`read_at_most`](Self::read_at_most)).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, OpError> {
        self.read_at_most(path, DEFAULT_MAX_BYTES)
    }

    /// Reads the regular file at `path`, at most `max_bytes` bytes. It is opened beneath the
    /// root through a directory handle (no symbolic link or `..` leads out, even one swapped in
    /// while it is opened), or — with `allow_outside` — wherever the path leads, resolved once;
    /// a FIFO, a socket or a device is refused without waiting; past `max_bytes`, an error names
    /// the limit (docs/security.md).
    pub fn read_at_most(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, OpError> {
        crate::files::read(
            crate::files::Who::Pipeline(&self.root),
            &self.root,
            path,
            self.allow_outside,
            max_bytes,
            "the operator's `max_bytes` param",
        )
        .map_err(|e| OpError::new(e.0))
    }
}

/// The file readers' default `max_bytes`: 64 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a file's bytes once, as Binary on `out_data`.
#[operator(
    id = "file_loader",
    label = "File loader",
    family = behavioral,
    firing = source,
    exec = blocking
)]
#[derive(Clone, Debug, PartialEq)]
pub struct FileLoader {
    /// file path, relative to the .cm file's folder
    #[param]
    pub path: String,
    /// the largest file read, in bytes (64 MiB); a larger file fails the firing, naming this
    #[param(default = 67108864)]
    pub max_bytes: u64,
    /// Where the file may be read from.
    #[context]
    pub access: FileAccess,
    /// the file's bytes, once, when the run starts
    #[output]
    out_data: Out<Binary>,
}

impl Default for FileLoader {
    /// No path yet; `max_bytes` at its default (64 MiB); the current directory, confined.
    fn default() -> Self {
        FileLoader::new("")
    }
}

impl FileLoader {
    /// Reads `path`, relative to the current directory and confined to it.
    pub fn new(path: impl Into<String>) -> Self {
        FileLoader {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            access: FileAccess::default(),
        }
    }
}

impl Run for FileLoader {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let bytes = self.access.read_at_most(&self.path, self.max_bytes)?;
        cx.emit(Self::out_data, Binary(bytes));
        Ok(())
    }
}

/// Reads a UTF-8 text file once, as a DataString on `out_data`.
#[operator(
    id = "text_file",
    label = "Text file",
    family = behavioral,
    firing = source,
    exec = blocking
)]
#[derive(Clone, Debug, PartialEq)]
pub struct TextFile {
    /// file path, relative to the .cm file's folder
    #[param]
    pub path: String,
    /// the largest file read, in bytes (64 MiB); a larger file fails the firing, naming this
    #[param(default = 67108864)]
    pub max_bytes: u64,
    /// Where the file may be read from.
    #[context]
    pub access: FileAccess,
    /// the file's text, once, when the run starts
    #[output]
    out_data: Out<DataString>,
}

impl Default for TextFile {
    /// No path yet; `max_bytes` at its default (64 MiB); the current directory, confined.
    fn default() -> Self {
        TextFile::new("")
    }
}

impl TextFile {
    /// Reads `path`, relative to the current directory and confined to it.
    pub fn new(path: impl Into<String>) -> Self {
        TextFile {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            access: FileAccess::default(),
        }
    }
}

impl Run for TextFile {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let bytes = self.access.read_at_most(&self.path, self.max_bytes)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| OpError::new(format!("`{}` is not UTF-8 text: {e}", self.path)))?;
        cx.emit(Self::out_data, DataString(text));
        Ok(())
    }
}

/// Reads a JSON file once, as a DataJSON on `out_data`.
#[operator(
    id = "json_file",
    label = "JSON file",
    family = behavioral,
    firing = source,
    exec = blocking
)]
#[derive(Clone, Debug, PartialEq)]
pub struct JsonFile {
    /// file path, relative to the .cm file's folder
    #[param]
    pub path: String,
    /// the largest file read, in bytes (64 MiB); a larger file fails the firing, naming this
    #[param(default = 67108864)]
    pub max_bytes: u64,
    /// Where the file may be read from.
    #[context]
    pub access: FileAccess,
    /// the file's parsed JSON value, once, when the run starts
    #[output]
    out_data: Out<DataJSON>,
}

impl Default for JsonFile {
    /// No path yet; `max_bytes` at its default (64 MiB); the current directory, confined.
    fn default() -> Self {
        JsonFile::new("")
    }
}

impl JsonFile {
    /// Reads `path`, relative to the current directory and confined to it.
    pub fn new(path: impl Into<String>) -> Self {
        JsonFile {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            access: FileAccess::default(),
        }
    }
}

impl Run for JsonFile {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let bytes = self.access.read_at_most(&self.path, self.max_bytes)?;
        let v = serde_json::from_slice(&bytes)
            .map_err(|e| OpError::new(format!("`{}` is not valid JSON: {e}", self.path)))?;
        cx.emit(Self::out_data, DataJSON(v));
        Ok(())
    }
}

// The file readers' firings read local files (docs/tools.md#effects-and-grants).
macro_rules! reads_files {
    ($($op:literal),*) => {$(
        crate::submit_operator_effects!(crate::operator::capability::OperatorEffects {
            op_type: $op,
            effects: crate::operator::capability::OpEffects::Fixed(
                crate::operator::capability::Effect::Read,
            ),
        });
    )*};
}
reads_files!("file_loader", "text_file", "json_file");
