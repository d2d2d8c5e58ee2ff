//! The file tools' limits and their errors: the work is done beneath the base folder by
//! [`crate::files`] (directory handles, regular files only, no write through a hard link).

use super::ToolError;
use crate::files::FileError;

/// Largest file `read_file` returns, in bytes.
pub(super) const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

impl From<FileError> for ToolError {
    fn from(e: FileError) -> Self {
        ToolError::new(e.0)
    }
}
