//! The `.cm` file: the shareable, LLM-writable form of a net.
//!
//! ```yaml
//! cameleon: 1                  # format version; absent = 1
//! name: rag
//! config:                      # optional
//!   mode: sequential           # or parallel
//!   max_loop_iterations: 10000
//!   budget: {tokens: 20000, cost_usd: 0.50}   # optional: BUDGET before the request past it
//! tools:                       # optional: without it, every tool call is denied
//!   allow: [calc, read_file]   # tools that run when called
//!   approve: [write_file]      # tools that run once a person approves the call
//! operators:
//!   - id: loader               # instance name, unique, used by connections
//!     type: text_file          # catalogue id; when absent, `id` is the type (original files)
//!     label: Loader
//!     instance: 1              # optional, kept as written
//!     x: 90
//!     y: 150
//!     params: { path: "article.txt" }
//!     placement: local         # optional: `remote` runs it on a satellite
//! connections:
//!   - from: loader.out_data
//!     to: chunk.in_data
//! ```
//!
//! - **Loading** ([`Net::from_cm`], [`Net::from_cm_file`], [`Net::from_cm_in`], [`Loader`])
//!   resolves operator types in the catalogue, builds each operator from its `params`, infers
//!   the types of structural ports and checks everything `pipeline!` checks. It reports **every**
//!   problem of the file in one [`CmError`], each with its line, column, snippet and hint.
//!   Unknown keys are errors.
//! - **Writing** ([`Net::to_cm`], [`CmFile::to_cm_string`]) gives the canonical form described
//!   in [`write`](mod@write); canonical text round-trips byte for byte.
//! - **Schema**: [`schema::schema_json`] is the JSON Schema of the format, shipped as
//!   `cameleon/cm.schema.json`.
//! - **Hostile input**: loading never panics, refuses oversized or explosive input quickly (see
//!   [`limits`]), and never runs anything: it only builds catalogue operators. Operators that
//!   read files resolve paths against the `.cm` file's folder and may not leave it unless the
//!   loader [allows it](Loader::allow_outside).
//!
//! ```
//! use cameleon::Net;
//!
//! let text = "\
//! cameleon: 1
//! name: hello
//! operators:
//!   - id: greeting
//!     type: source
//!     params:
//!       value: hello
//!   - id: out
//!     type: sink
//! connections:
//!   - from: greeting.out_data
//!     to: out.in_data
//! ";
//! let net = Net::from_cm(text)?;
//! assert_eq!(net.to_cm(), text);                // canonical text round-trips byte for byte
//! assert_eq!(Net::from_cm(&net.to_cm())?, net);
//! # Ok::<(), cameleon::cm::CmError>(())
//! ```

mod error;
mod format;
mod load;
pub mod schema;
pub(crate) mod tree;
pub mod write;

use std::path::{Path, PathBuf};

pub use error::{CmError, CmProblem, CmProblemKind};
pub use format::{
    CmBudget, CmConfig, CmConnection, CmFile, CmOperator, CmRetry, CmTools, FORMAT_VERSION,
};
pub use load::Loader;
pub use write::leading_comments;

use crate::catalogue::Catalogue;
use crate::net::Net;

/// The folder a file's relative paths resolve against: the folder it is in, `.` for a bare
/// file name (`net.cm`, whose parent is the empty path).
///
/// ```
/// use std::path::{Path, PathBuf};
/// use cameleon::cm::folder_of;
///
/// assert_eq!(folder_of(Path::new("examples/rag.cm")), PathBuf::from("examples"));
/// assert_eq!(folder_of(Path::new("rag.cm")), PathBuf::from("."));
/// ```
pub fn folder_of(file: &Path) -> PathBuf {
    file.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The safety limits of the loader. Input beyond them is refused with a clear message before
/// any work proportional to the excess is done.
pub mod limits {
    /// Largest `.cm` text accepted, in bytes (4 MiB). A `.cm` file holds a topology; data goes
    /// through file-reading operators.
    pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;
    /// Deepest nesting of lists and mappings (the file itself is level 1; an operator's
    /// params are at level 4).
    pub const MAX_DEPTH: usize = 32;
    /// Most YAML values (scalars, lists, mappings) after alias expansion.
    pub const MAX_NODES: usize = 50_000;
    /// Most parser events (a little over the number of values).
    pub const MAX_EVENTS: usize = 2 * MAX_NODES;
    /// Most aliases (`*name`), anchors (`&name`) and merge keys (`<<`), each.
    pub const MAX_ALIASES: usize = 1_000;
    /// Most values all alias expansions together may produce (an alias-expansion bomb trips
    /// this after a few milliseconds).
    pub const MAX_ALIAS_VALUES: usize = 10_000;
}

impl Net {
    /// Loads a net from `.cm` text, resolving operator types in the global catalogue. File
    /// paths in params are relative to the current directory.
    ///
    /// On failure the [`CmError`] lists every problem of the text.
    pub fn from_cm(text: &str) -> Result<Net, CmError> {
        Loader::new().load_str(text)
    }

    /// Loads a net from `.cm` text, resolving operator types in `catalogue`.
    pub fn from_cm_in(text: &str, catalogue: &Catalogue) -> Result<Net, CmError> {
        Loader::new().catalogue(catalogue).load_str(text)
    }

    /// Reads and loads a `.cm` file (global catalogue). Errors name the file; file-reading
    /// operators resolve paths against the file's folder and are confined to it (use
    /// [`Loader::allow_outside`] to lift that).
    pub fn from_cm_file(path: impl AsRef<Path>) -> Result<Net, CmError> {
        Loader::new().load_file(path)
    }
}

#[cfg(test)]
mod tests;
