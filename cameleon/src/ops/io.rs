//! `std-io`: sources and sinks.

use std::path::{Component, Path, PathBuf};

use serde_json::json;

use crate::connection::ConnState;
use crate::operator::{Execution, Firing, OpError, OpSpec, Operator, Params, TypeRef};
use crate::policy::{Family, Policy};
use crate::types::{Any, Binary, DataJSON, DataString};

/// Emits a configured string once (`source.out_data`, a `DataString`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Source {
    /// The string emitted.
    pub value: String,
}

impl Source {
    /// A source of `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Source {
            value: value.into(),
        }
    }
}

impl Operator for Source {
    fn spec(&self) -> OpSpec {
        OpSpec::new("source", "Source", Family::Behavioral, Policy::Source)
            .output("out_data", TypeRef::of::<DataString>())
    }
    fn params(&self) -> Params {
        params([("value", json!(self.value))])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataString(self.value.clone()));
        Ok(())
    }
}

/// Emits a configured JSON value once (`const.out_data`, a `DataJSON`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Const {
    /// The value emitted.
    pub value: serde_json::Value,
}

impl Const {
    /// A source of `value`.
    pub fn new(value: serde_json::Value) -> Self {
        Const { value }
    }
}

impl Operator for Const {
    fn spec(&self) -> OpSpec {
        OpSpec::new("const", "Const", Family::Behavioral, Policy::Source)
            .output("out_data", TypeRef::of::<DataJSON>())
    }
    fn params(&self) -> Params {
        params([("value", self.value.clone())])
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        cx.emit_at(0, DataJSON(self.value.clone()));
        Ok(())
    }
}

/// Collects every value it receives (`sink.in_data`, any type). What a sink received is
/// [`Cvm::received`](crate::Cvm::received); the CLI prints it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sink;

impl Sink {
    /// A sink.
    pub fn new() -> Self {
        Sink
    }
}

impl Operator for Sink {
    fn spec(&self) -> OpSpec {
        OpSpec::new("sink", "Sink", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::of::<Any>())
    }
    fn execution(&self) -> Execution {
        Execution::Inline // quick and non-blocking: no thread hand-off in parallel mode
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
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

    fn read(&self, path: &str) -> Result<Vec<u8>, OpError> {
        let full = self.resolve(path)?;
        std::fs::read(&full)
            .map_err(|e| OpError::new(format!("cannot read `{}`: {e}", full.display())))
    }
}

macro_rules! file_source {
    ($(#[$doc:meta])* $name:ident, $id:literal, $label:literal, $ty:ty, |$bytes:ident, $path:ident| $conv:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            /// The file, relative to the pipeline's folder.
            pub path: String,
            /// Where the file may be read from.
            pub access: FileAccess,
        }

        impl $name {
            /// Reads `path`, relative to the current directory and confined to it.
            pub fn new(path: impl Into<String>) -> Self {
                $name { path: path.into(), access: FileAccess::default() }
            }
        }

        impl Operator for $name {
            fn spec(&self) -> OpSpec {
                OpSpec::new($id, $label, Family::Behavioral, Policy::Source)
                    .output("out_data", TypeRef::of::<$ty>())
            }
            fn params(&self) -> Params {
                params([("path", json!(self.path))])
            }
            fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
                let $bytes = self.access.read(&self.path)?;
                let $path = &self.path;
                let v: $ty = $conv?;
                cx.emit_at(0, v);
                Ok(())
            }
        }
    };
}

file_source!(
    /// Reads a file's bytes (`file_loader.out_data`, `Binary`).
    FileLoader, "file_loader", "File loader", Binary, |bytes, _path| Ok::<_, OpError>(Binary(bytes))
);
file_source!(
    /// Reads a UTF-8 text file (`text_file.out_data`, `DataString`).
    TextFile, "text_file", "Text file", DataString, |bytes, path| String::from_utf8(bytes)
        .map(DataString)
        .map_err(|e| OpError::new(format!("`{path}` is not UTF-8 text: {e}")))
);
file_source!(
    /// Reads a JSON file (`json_file.out_data`, `DataJSON`).
    JsonFile, "json_file", "JSON file", DataJSON, |bytes, path| serde_json::from_slice(&bytes)
        .map(DataJSON)
        .map_err(|e| OpError::new(format!("`{path}` is not valid JSON: {e}")))
);

/// Builds a params map from pairs.
pub(crate) fn params<const N: usize>(pairs: [(&str, serde_json::Value); N]) -> Params {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The state of input `i` is NEW.
pub(crate) fn is_new(cx: &Firing<'_>, i: usize) -> bool {
    cx.state_at(i) == ConnState::New
}
