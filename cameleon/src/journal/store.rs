//! Opening a journal file: checks before SQLite touches it, the schema, its version.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::JournalError;

/// The schema version this code writes and reads (`meta.schema`, also `PRAGMA user_version`);
/// an older journal is migrated when opened (`migrate.rs`).
pub(super) const SCHEMA: i64 = 4;

/// `meta.format`: what marks a SQLite file as a Caméléon journal.
pub(super) const FORMAT: &str = "cameleon-journal";

/// An entry's `id`: its run's `seq` in the high 32 bits, its node in the low 32, so a run's
/// entries are one range of the table, in node order, and new ones are appended.
pub(super) fn entry_id(run: i64, node: u32) -> i64 {
    (run << 32) | i64::from(node)
}

/// How long a writer waits for another process's transaction before giving up.
const BUSY: Duration = Duration::from_secs(60);

const CREATE: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    cm         TEXT NOT NULL,
    cm_hash    TEXT NOT NULL,
    mode       TEXT NOT NULL,
    config     TEXT NOT NULL,
    generation INTEGER,
    started    TEXT NOT NULL
);
CREATE INDEX runs_by_start ON runs (started, id);
CREATE TABLE entries (
    id     INTEGER PRIMARY KEY,
    run    INTEGER NOT NULL REFERENCES runs (seq),
    node   INTEGER NOT NULL,
    parent INTEGER,
    step   INTEGER NOT NULL,
    branch INTEGER NOT NULL,
    ops    TEXT NOT NULL,
    body   TEXT NOT NULL
);
";

/// The tables schema 3 added: a run's progress (its position and status, the small row a
/// step updates, away from the run's `.cm` text) and the firing-key index (docs/semantics.md
/// §5.9).
pub(super) const CREATE_V3: &str = "
CREATE TABLE progress (
    run       INTEGER PRIMARY KEY REFERENCES runs (seq),
    status    TEXT NOT NULL,
    end_state TEXT,
    steps     INTEGER NOT NULL DEFAULT 0,
    tip       INTEGER,
    redo_tip  INTEGER,
    updated   TEXT NOT NULL
);
CREATE TABLE firing_keys (
    key    BLOB NOT NULL,
    run    INTEGER NOT NULL,
    node   INTEGER NOT NULL,
    firing INTEGER NOT NULL,
    ports  TEXT NOT NULL,
    PRIMARY KEY (key, run, node, firing)
) WITHOUT ROWID;
";

/// What schema 4 changed: the reuse keys of a step's firings go in its entry (`entries.keys`,
/// see `codec.rs`) instead of a `firing_keys` table of their own (a reusing run
/// reads them all when it opens the journal: no index is needed, and a step writes one row);
/// a run's progress row is written only when the position is not the
/// newest entry (a step that appends an entry and applies it does not rewrite it), and the
/// `progress` view gives every reader the position: the row's, or — when the run has an entry
/// newer than the row's `seen` (the newest entry when the row was written; `NULL`: none) — that
/// entry, as the tip, at its depth, with no recorded future. An `UPDATE` of the view (a tool
/// of its own that edits the file) goes to the row.
pub(super) const CREATE_V4: &str = "
DROP TABLE firing_keys;
ALTER TABLE entries ADD COLUMN keys BLOB;
ALTER TABLE progress RENAME TO progress_row;
ALTER TABLE progress_row ADD COLUMN seen INTEGER;
CREATE VIEW progress AS
SELECT run, status, end_state,
    CASE WHEN lazy THEN (SELECT step FROM entries WHERE id = last) ELSE steps END AS steps,
    CASE WHEN lazy THEN last & 4294967295 ELSE tip END AS tip,
    CASE WHEN lazy THEN NULL ELSE redo_tip END AS redo_tip,
    updated
FROM (
    SELECT q.*, coalesce((last & 4294967295) > coalesce(seen, -1), 0) AS lazy FROM (
        SELECT p.*, (SELECT max(id) FROM entries
                     WHERE id BETWEEN p.run << 32 AND (p.run << 32) + 4294967295) AS last
        FROM progress_row p
    ) q
);
CREATE TRIGGER progress_update INSTEAD OF UPDATE ON progress BEGIN
    UPDATE progress_row SET status = NEW.status, end_state = NEW.end_state, steps = NEW.steps,
        tip = NEW.tip, redo_tip = NEW.redo_tip, updated = NEW.updated,
        seen = (SELECT max(id) & 4294967295 FROM entries
                WHERE id BETWEEN OLD.run << 32 AND (OLD.run << 32) + 4294967295)
    WHERE run = OLD.run;
END;
";

/// SQL for the `seen` of run `?1`'s progress row: its newest entry's node (see [`CREATE_V4`]).
pub(super) const SEEN: &str = "(SELECT max(id) & 4294967295 FROM entries
    WHERE id BETWEEN ?1 << 32 AND (?1 << 32) + 4294967295)";

/// What a file is, read from its first bytes before SQLite opens it (so a foreign file is
/// refused untouched).
enum Head {
    Missing,
    Empty,
    Sqlite,
    Other(Vec<u8>),
}

fn head(path: &Path) -> Result<Head, JournalError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Head::Missing),
        Err(e) => return Err(JournalError::io(path, e)),
    };
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(JournalError::NotAJournal {
            path: path.display().to_string(),
            why: "it is a folder".into(),
        });
    }
    let mut buf = [0u8; 16];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(JournalError::io(path, e)),
        }
    }
    Ok(match n {
        0 => Head::Empty,
        _ if &buf[..n] == b"SQLite format 3\0" => Head::Sqlite,
        _ => Head::Other(buf[..n].to_vec()),
    })
}

/// Opens the journal at `path`. `create`: make the file (and the schema) if it is missing or
/// empty; otherwise a missing file is an error. Nothing is written to a file that is not a
/// journal of a version this code reads.
pub(super) fn open(path: &Path, create: bool) -> Result<Connection, JournalError> {
    let shown = path.display().to_string();
    let fresh = match head(path)? {
        Head::Missing if create => true,
        Head::Missing => return Err(JournalError::NotFound { path: shown }),
        Head::Empty if create => true,
        Head::Empty => {
            return Err(JournalError::NotAJournal {
                path: shown,
                why: "the file is empty".into(),
            });
        }
        Head::Other(bytes) => {
            return Err(JournalError::NotAJournal {
                path: shown,
                why: format!(
                    "it is not a SQLite database (it starts with {:?})",
                    String::from_utf8_lossy(&bytes)
                ),
            });
        }
        Head::Sqlite => false,
    };
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if fresh {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
        create_private(path)?;
    }
    let conn = Connection::open_with_flags(path, flags).map_err(|e| JournalError::sql(path, e))?;
    conn.busy_timeout(BUSY)
        .map_err(|e| JournalError::sql(path, e))?;
    let tables = retry_busy(|| table_names(&conn)).map_err(|e| JournalError::sql(path, e))?;
    if tables.is_empty() {
        if !create {
            return Err(JournalError::NotAJournal {
                path: shown,
                why: "it is a SQLite database with no tables".into(),
            });
        }
        retry_busy(|| init(&conn)).map_err(|e| JournalError::sql(path, e))?;
    } else if check(&conn, path, &tables)? < SCHEMA {
        super::migrate::migrate(&conn, path)?;
    }
    Ok(conn)
}

/// Creates the journal file readable and writable by its owner only (`0600`), before SQLite
/// opens it: a journal holds every value of its runs. SQLite creates the `-wal` and `-shm`
/// files with the permissions of the database file, so they are `0600` too. A file that exists
/// (empty) keeps its permissions.
fn create_private(path: &Path) -> Result<(), JournalError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    match o.open(path) {
        Ok(_) => Ok(()),
        // Another process created it meanwhile, or it is there empty: fine.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(JournalError::io(path, e)),
    }
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = st
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(names)
}

/// Runs `f` again while SQLite says the database is busy or locked, for up to [`BUSY`].
///
/// The busy timeout covers most waits, but not all: SQLite returns `SQLITE_BUSY` at once, without
/// calling the busy handler, when switching a file to WAL while another connection opens it, or
/// when reading its WAL index while another process recovers it. Two processes creating one
/// journal at the same instant meet exactly those cases.
pub(super) fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && start.elapsed() < BUSY =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// Creates the schema in an empty database (another process may be doing the same: the
/// immediate transaction serialises us, and the second one finds the tables there).
fn init(conn: &Connection) -> rusqlite::Result<()> {
    // WAL: readers never block the writer, and a crash leaves the last commit intact. The mode
    // is stored in the file; it cannot change inside a transaction.
    // Switching to WAL does not wait on the busy handler: `open` retries (`retry_busy`).
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let r = (|| {
        if !table_names(conn)?.is_empty() {
            return Ok(());
        }
        conn.execute_batch(CREATE)?;
        conn.execute_batch(CREATE_V3)?;
        conn.execute_batch(CREATE_V4)?;
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('format', ?1), ('schema', ?2)",
            (FORMAT, SCHEMA.to_string()),
        )?;
        conn.pragma_update(None, "user_version", SCHEMA)?;
        Ok(())
    })();
    match r {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Checks that a database with tables is a journal this code reads; returns its schema version.
fn check(conn: &Connection, path: &Path, tables: &[String]) -> Result<i64, JournalError> {
    let shown = path.display().to_string();
    if !tables.iter().any(|t| t == "meta") {
        return Err(JournalError::NotAJournal {
            path: shown,
            why: format!(
                "it is a SQLite database of another program (tables: {})",
                tables.join(", ")
            ),
        });
    }
    let get = |key: &str| -> Result<Option<String>, JournalError> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| JournalError::sql(path, e))
    };
    if get("format")?.as_deref() != Some(FORMAT) {
        return Err(JournalError::NotAJournal {
            path: shown,
            why: "it is a SQLite database of another program (its `meta` table does not name a Caméléon journal)".into(),
        });
    }
    let version = get("schema")?
        .and_then(|v| v.parse::<i64>().ok())
        .ok_or_else(|| JournalError::Corrupt {
            path: shown.clone(),
            what: "its schema version is missing".into(),
        })?;
    if version > SCHEMA {
        return Err(JournalError::TooNew {
            path: shown,
            version,
            supported: SCHEMA,
        });
    }
    let mut needed = vec!["runs", "entries"];
    if version >= 4 {
        needed.push("progress_row");
    } else if version >= 3 {
        needed.extend(["progress", "firing_keys"]);
    }
    for t in needed {
        if !tables.iter().any(|x| x == t) {
            return Err(JournalError::Corrupt {
                path: shown,
                what: format!("the `{t}` table is missing"),
            });
        }
    }
    Ok(version)
}

/// A writer's connection to a journal already checked by [`open`], for a run recorded as
/// `durability` says.
pub(super) fn open_writer(
    path: &Path,
    durability: super::Durability,
) -> Result<Connection, JournalError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| JournalError::sql(path, e))?;
    conn.busy_timeout(BUSY)
        .map_err(|e| JournalError::sql(path, e))?;
    conn.pragma_update(None, "synchronous", synchronous(durability))
        .map_err(|e| JournalError::sql(path, e))?;
    Ok(conn)
}

/// The writer's `PRAGMA synchronous` for `durability`. In WAL mode, NORMAL: a committed
/// transaction survives any crash of the process (kill -9 included) without an fsync per
/// commit; an OS crash or a power loss may lose the last commits (the WAL is synced at
/// checkpoints). `strict` asks for FULL: the WAL is synced at every commit, which then survives
/// a power loss too, at the price of an fsync per step.
pub(super) fn synchronous(durability: super::Durability) -> &'static str {
    match durability {
        super::Durability::Strict => "FULL",
        _ => "NORMAL",
    }
}

/// FNV-1a (64 bits) of `text`, as 16 hex digits: detects a stored net that was edited or
/// damaged (not a cryptographic seal).
pub(super) fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::super::{Durability, Journal};
    use super::*;

    /// `strict` syncs each commit (FULL, 2); the other modes leave it to checkpoints (NORMAL, 1).
    #[test]
    fn strict_writers_sync_every_commit_and_the_others_do_not() {
        let dir = test_support::TempDir::new("journal-synchronous");
        let path = dir.join("j.db");
        Journal::create(&path).unwrap();
        for (d, level) in [
            (Durability::Strict, 2),
            (Durability::Sync, 1),
            (Durability::Batch { ms: 5 }, 1),
            (Durability::Exit, 1),
        ] {
            let conn = open_writer(&path, d).unwrap();
            let got: i64 = conn
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap();
            assert_eq!(got, level, "{}", d.name());
        }
    }
}
