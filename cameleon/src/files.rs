//! Files opened beneath a folder, for the file tools and the file-reading operators
//! (docs/tools.md#standard-tools, docs/security.md).
//!
//! - Every path is opened through a **directory handle** of the folder (cap-std: `openat2` with
//!   `RESOLVE_BENEATH` where the kernel has it, else a checked walk, component by component), so
//!   no symbolic link and no `..` leads out of it — even a link swapped in between a check and
//!   the open: nothing is checked by name and then opened by name again.
//! - Only **regular files** are read or written. A file is opened without blocking
//!   (`O_NONBLOCK`) and what was opened is examined (`fstat`): a FIFO, a socket or a device is
//!   refused, never waited on.
//! - A write through a file with **more than one hard link** is refused: the other name may be
//!   outside the folder.
//! - Reads are capped: past `max` bytes the read stops with an error naming the limit.
//!
//! With `allow_outside` (the user's `--allow-outside`), the path may be absolute or climb with
//! `..`: it is resolved once (links included), and the file is opened through a handle of the
//! folder it is in, with the same checks.
//!
//! Messages name the path as given, never a file's content.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// Why a file could not be read or written: a message naming the path, never its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileError(pub(crate) String);

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(message: String) -> FileError {
    FileError(message)
}

/// Where a path is opened from: a handle on a folder, and the path relative to it.
struct Beneath {
    dir: Dir,
    rel: PathBuf,
}

/// Who opens a file, for messages: the tools (confined to the base folder) or a pipeline's
/// operators (confined to the `.cm` file's folder unless the user allows more).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Who<'a> {
    /// The file tools.
    Tools,
    /// An operator of the pipeline in this folder.
    Pipeline(&'a Path),
}

impl Who<'_> {
    /// The folder, as messages name it.
    fn folder(self) -> String {
        match self {
            Who::Tools => "the base folder".to_owned(),
            Who::Pipeline(root) => format!("the pipeline's folder `{}`", root.display()),
        }
    }
}

/// Refuses, by its text, a path that names a place outside the folder: absolute, or with `..`.
fn check_text<'p>(path: &'p str, who: Who<'_>) -> Result<&'p Path, FileError> {
    let p = Path::new(path);
    let absolute = p.is_absolute() || p.has_root();
    let climbs = p
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)));
    match who {
        Who::Tools if absolute => Err(err(format!(
            "path `{path}` is absolute; tools only reach the base folder: give a path relative to it"
        ))),
        Who::Tools if climbs => Err(err(format!(
            "path `{path}` leaves the base folder (`..` is not allowed)"
        ))),
        Who::Pipeline(_) if absolute || climbs => Err(err(format!(
            "path `{path}` leaves {}; allow it explicitly to read outside (`--allow-outside`)",
            who.folder()
        ))),
        _ => Ok(p),
    }
}

/// A handle on folder `root` (the user's or the `.cm` file's: trusted, opened as it is named).
fn open_root(root: &Path) -> Result<Dir, FileError> {
    Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| {
        err(format!(
            "the folder `{}` cannot be opened: {e}",
            root.display()
        ))
    })
}

/// `path` under `root`: confined to it, or — `allow_outside` — anywhere, resolved once.
fn locate(
    root: &Path,
    path: &str,
    allow_outside: bool,
    who: Who<'_>,
) -> Result<Beneath, FileError> {
    if !allow_outside {
        let rel = check_text(path, who)?;
        return Ok(Beneath {
            dir: open_root(root)?,
            rel: if rel.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                rel.to_path_buf()
            },
        });
    }
    let full = root.join(path);
    let real = full
        .canonicalize()
        .map_err(|e| err(format!("cannot open `{path}`: {e}")))?;
    match (real.parent(), real.file_name()) {
        (Some(parent), Some(name)) => Ok(Beneath {
            dir: open_root(parent)?,
            rel: PathBuf::from(name),
        }),
        // The root folder itself.
        _ => Ok(Beneath {
            dir: open_root(&real)?,
            rel: PathBuf::from("."),
        }),
    }
}

/// An error of cap-std's, in words: a way out of the folder is named as such.
fn io_error(path: &str, doing: &str, e: &std::io::Error, who: Who<'_>) -> FileError {
    if e.kind() == std::io::ErrorKind::PermissionDenied
        && e.to_string().contains("outside of the filesystem")
    {
        return err(format!(
            "path `{path}` leads out of {} (through a symbolic link)",
            who.folder()
        ));
    }
    err(format!("cannot {doing} `{path}`: {e}"))
}

/// Options that never block on opening (a FIFO, a device).
fn nonblocking(mut o: OpenOptions) -> OpenOptions {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    {
        let _ = &mut o;
    }
    o
}

/// What a file that is not a regular one is, in a word or two.
fn kind_of(m: &cap_std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// Opens `at` with `o` (never blocking) and checks what was opened is a regular file: its handle
/// and metadata. `doing` is `read` or `write`, for messages.
fn open_regular(
    at: &Beneath,
    o: OpenOptions,
    path: &str,
    who: Who<'_>,
    doing: &str,
) -> Result<(cap_std::fs::File, cap_std::fs::Metadata), FileError> {
    let file = at
        .dir
        .open_with(&at.rel, &nonblocking(o))
        .map_err(|e| io_error(path, "open", &e, who))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error(path, doing, &e, who))?;
    if !meta.is_file() {
        let past = if doing == "read" { "read" } else { "written" };
        return Err(err(format!(
            "`{path}` is {}: only regular files are {past}",
            kind_of(&meta)
        )));
    }
    Ok((file, meta))
}

/// Reads the regular file at `path` (beneath `root`, unless `allow_outside`), at most `max`
/// bytes: past it, an error naming the limit (`limit` says which setting it is).
pub(crate) fn read(
    who: Who<'_>,
    root: &Path,
    path: &str,
    allow_outside: bool,
    max: u64,
    limit: &str,
) -> Result<Vec<u8>, FileError> {
    let at = locate(root, path, allow_outside, who)?;
    let mut o = OpenOptions::new();
    o.read(true);
    let (file, meta) = open_regular(&at, o, path, who, "read")?;
    if meta.len() > max {
        return Err(too_large(path, meta.len(), max, limit));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.into_std()
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, "read", &e, who))?;
    if bytes.len() as u64 > max {
        // It grew while being read.
        return Err(too_large(path, bytes.len() as u64, max, limit));
    }
    Ok(bytes)
}

fn too_large(path: &str, len: u64, max: u64, limit: &str) -> FileError {
    err(format!(
        "`{path}` is larger than {max} bytes ({len} at least), the limit of {limit}"
    ))
}

/// Writes `bytes` to the regular file at `path` beneath `root`, replacing its content; creates
/// the file and its missing folders. Refused: a path out of the folder, a file that is not a
/// regular one, a file with more than one hard link.
pub(crate) fn write(root: &Path, path: &str, bytes: &[u8]) -> Result<(), FileError> {
    let who = Who::Tools;
    let at = locate(root, path, false, who)?;
    if at.rel.file_name().is_none() {
        return Err(err(format!("path `{path}` names no file")));
    }
    if let Some(parent) = at.rel.parent()
        && !parent.as_os_str().is_empty()
    {
        at.dir.create_dir_all(parent).map_err(|e| {
            // A link named like a folder on the way: say where it leads, if it leads out.
            let e = match at.dir.metadata(parent) {
                Err(out) if e.kind() == std::io::ErrorKind::AlreadyExists => out,
                _ => e,
            };
            io_error(path, "create the folder of", &e, who)
        })?;
    }
    // Said plainly for what is there already (opening a FIFO to write without a reader fails
    // with a less telling error); what is opened is checked again below.
    if let Ok(m) = at.dir.metadata(&at.rel)
        && !m.is_file()
    {
        return Err(err(format!(
            "`{path}` is {}: only regular files are written",
            kind_of(&m)
        )));
    }
    let mut o = OpenOptions::new();
    o.write(true).create(true);
    let (file, meta) = open_regular(&at, o, path, who, "write")?;
    #[cfg(unix)]
    {
        use cap_std::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(err(format!(
                "`{path}` has {} hard links: writing through it would change a file that may be outside the folder; remove the other links, or write another file",
                meta.nlink()
            )));
        }
    }
    let mut f = file.into_std();
    f.set_len(0)
        .and_then(|()| f.write_all(bytes))
        .and_then(|()| f.flush())
        .map_err(|e| io_error(path, "write", &e, who))
}

/// One entry of a folder.
pub(crate) struct FolderEntry {
    pub(crate) name: String,
    /// `file`, `dir` or `symlink`.
    pub(crate) kind: &'static str,
    pub(crate) size: u64,
}

/// The entries of the folder at `path` beneath `root`, sorted by name.
pub(crate) fn list(root: &Path, path: &str) -> Result<Vec<FolderEntry>, FileError> {
    let who = Who::Tools;
    let at = locate(root, path, false, who)?;
    let read = at
        .dir
        .read_dir(&at.rel)
        .map_err(|e| io_error(path, "list", &e, who))?;
    let mut out = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| io_error(path, "list", &e, who))?;
        let t = entry
            .file_type()
            .map_err(|e| io_error(path, "list", &e, who))?;
        let kind = if t.is_symlink() {
            "symlink"
        } else if t.is_dir() {
            "dir"
        } else {
            "file"
        };
        let size = if kind == "file" {
            entry.metadata().map(|m| m.len()).unwrap_or(0)
        } else {
            0
        };
        out.push(FolderEntry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
