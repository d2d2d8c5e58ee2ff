//! Confining file tools to the base folder: no absolute path, no `..`, no symbolic link that
//! leads out. Messages name the path, never a file's content.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// Largest file `read_file` returns, in bytes.
pub(super) const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

/// Rejects paths that name a place outside `base` by their text: absolute ones and any `..`.
fn check_text(path: &str) -> Result<&Path, ToolError> {
    let p = Path::new(path);
    if p.is_absolute() || p.has_root() {
        return Err(ToolError::new(format!(
            "path `{path}` is absolute; tools only reach the base folder: give a path relative to it"
        )));
    }
    if p.components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err(ToolError::new(format!(
            "path `{path}` leaves the base folder (`..` is not allowed)"
        )));
    }
    Ok(p)
}

fn canonical_base(base: &Path) -> Result<PathBuf, ToolError> {
    base.canonicalize().map_err(|e| {
        ToolError::new(format!(
            "the base folder `{}` cannot be opened: {e}",
            base.display()
        ))
    })
}

/// `path` (relative to `base`) as an existing path inside `base`, every symbolic link resolved.
pub(super) fn existing(base: &Path, path: &str) -> Result<PathBuf, ToolError> {
    let p = check_text(path)?;
    let root = canonical_base(base)?;
    let real = root
        .join(p)
        .canonicalize()
        .map_err(|e| ToolError::new(format!("cannot open `{path}`: {e}")))?;
    if !real.starts_with(&root) {
        return Err(ToolError::new(format!(
            "path `{path}` leads out of the base folder (through a symbolic link)"
        )));
    }
    Ok(real)
}

/// `path` (relative to `base`) as a file to write inside `base`: its nearest existing ancestor
/// must resolve inside `base`, and so must the file itself if it exists (a symbolic link
/// pointing out is refused). Missing folders are created.
pub(super) fn writable(base: &Path, path: &str) -> Result<PathBuf, ToolError> {
    let p = check_text(path)?;
    if p.file_name().is_none() {
        return Err(ToolError::new(format!("path `{path}` names no file")));
    }
    let root = canonical_base(base)?;
    let target = root.join(p);
    if target.symlink_metadata().is_ok() {
        // It exists (possibly as a link): wherever it leads must be inside.
        return existing(base, path);
    }
    let mut ancestor = target.parent();
    while let Some(a) = ancestor {
        if a.symlink_metadata().is_ok() {
            let real = a
                .canonicalize()
                .map_err(|e| ToolError::new(format!("cannot open the folder of `{path}`: {e}")))?;
            if !real.starts_with(&root) {
                return Err(ToolError::new(format!(
                    "path `{path}` leads out of the base folder (through a symbolic link)"
                )));
            }
            let rest = target.strip_prefix(a).unwrap_or(p);
            let full = real.join(rest);
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    ToolError::new(format!("cannot create the folder of `{path}`: {e}"))
                })?;
            }
            return Ok(full);
        }
        ancestor = a.parent();
    }
    Err(ToolError::new(format!(
        "cannot place `{path}` in the base folder"
    )))
}
