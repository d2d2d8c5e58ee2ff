//! When a journaled run's steps reach the disk, and what each mode survives (docs/cli.md,
//! "Journals").

/// When a journaled run's steps reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Each step is committed before the next one starts.
    #[default]
    Sync,
    /// Steps are committed together, at most every `ms` milliseconds.
    Batch {
        /// The longest a committed step waits in memory.
        ms: u64,
    },
    /// Steps are committed when the run ends (or its engine is dropped).
    Exit,
    /// As [`Sync`](Durability::Sync), and each commit is synced to the disk (an fsync, SQLite's
    /// `synchronous = FULL`) before the next step starts: a committed step survives a power
    /// loss or an OS crash too.
    Strict,
}

impl Durability {
    /// The default wait of [`Durability::Batch`], in milliseconds.
    pub const DEFAULT_BATCH_MS: u64 = 50;

    /// `sync`, `batch`, `exit` or `strict`.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Strict => "strict",
            Durability::Batch { .. } => "batch",
            Durability::Exit => "exit",
        }
    }
}
