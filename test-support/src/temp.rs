//! Temporary folders: [`TempDir::new`] makes a fresh, empty folder under the system's temporary
//! folder; dropping it removes it — unless the test is failing (the thread panics), when it is
//! kept for a look and its path printed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A fresh folder, removed on drop (kept when the test fails).
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// `$TMPDIR/cameleon-test-TAG-PID-N`, empty.
    pub fn new(tag: &str) -> TempDir {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("cameleon-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path inside it.
    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.path.join(p)
    }

    /// A path inside it, as a string (for command lines).
    pub fn file(&self, p: impl AsRef<Path>) -> String {
        self.join(p).display().to_string()
    }

    /// Writes `text` to `name` inside it; the file's path.
    pub fn write(&self, name: impl AsRef<Path>, text: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(name);
        if let Some(parent) = p.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
        p
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("(kept for a look: {})", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
