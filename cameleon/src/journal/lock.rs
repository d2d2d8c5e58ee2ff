//! One process at a time goes on with a run: [`RunLock`], an OS file lock (`flock`) on a file
//! beside the journal, `DB-lock-RUN_ID`, holding who took it (pid and host).
//!
//! The operating system releases the lock when its holder exits, however it exits (a crash, a
//! `kill -9`): a dead holder never blocks a run. The file itself is removed by the holder when
//! it lets go; one a dead holder left behind is taken over by the next `resume` (a file without
//! a lock on it holds no run). A second `resume` of a held run fails at once with
//! [`JournalError::Busy`], naming the holder.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::JournalError;

/// The lock on one run of a journal, held while this process goes on with the run; released
/// (and its file removed) when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    file: Option<File>,
}

impl RunLock {
    /// The lock file of run `id` of the journal at `db`: `DB-lock-ID`.
    pub(super) fn path_for(db: &Path, id: &str) -> PathBuf {
        let mut name = db.as_os_str().to_owned();
        name.push(format!("-lock-{id}"));
        PathBuf::from(name)
    }

    /// Takes the lock of run `id` of the journal at `db`, or says who holds it.
    pub(super) fn take(db: &Path, id: &str) -> Result<RunLock, JournalError> {
        let path = RunLock::path_for(db, id);
        // A few tries: the file may be removed by its holder between our open and our lock.
        for _ in 0..16 {
            let mut file = open(&path).map_err(|e| JournalError::io(&path, e))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    return Err(JournalError::Busy {
                        path: db.display().to_string(),
                        run: id.to_owned(),
                        holder: holder.trim().to_owned(),
                        lock: path.display().to_string(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(JournalError::io(&path, e)),
            }
            // Locked — but the holder before us may have removed the file meanwhile, leaving
            // us a lock on a file no one else will open: only the file at the path counts.
            if !same_file(&file, &path) {
                continue;
            }
            let me = format!("process {} on {}", std::process::id(), host());
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(me.as_bytes()))
                .map_err(|e| JournalError::io(&path, e))?;
            return Ok(RunLock {
                path,
                file: Some(file),
            });
        }
        Err(JournalError::io(
            &path,
            "the lock file keeps changing under us (another process is taking it)",
        ))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while still locked, so no one takes a lock on a file about to disappear.
        let _ = std::fs::remove_file(&self.path);
        if let Some(f) = self.file.take() {
            let _ = f.unlock();
        }
    }
}

/// The lock file, created `0600` if missing; its content kept (a holder's, to be read).
fn open(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

/// Whether `file` is the file now at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// This machine's name, for the holder's description.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "this machine".to_owned())
}
