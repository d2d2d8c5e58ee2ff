//! `--journal nats://HOST:PORT`: the journal on NATS JetStream (docs/journal.md "Stores").

use std::path::Path;
use std::time::Duration;

use cameleon::journal::JournalError;
use cameleon_nats::JetStreamJournal;

use crate::satellite::NatsArgs;

/// The URL of a journal on NATS (`nats://…`, `tls://…`), if `db` names one.
pub(crate) fn url(db: &Path) -> Option<&str> {
    db.to_str()
        .filter(|s| s.starts_with("nats://") || s.starts_with("tls://"))
}

/// Connects to the journal at `url`, with the credentials and prefix of `nats` (its `--nats`
/// URL, which names the satellites' server, is not used here).
pub(crate) fn open(
    url: &str,
    nats: &NatsArgs,
    lease_ms: u64,
) -> Result<JetStreamJournal, JournalError> {
    JetStreamJournal::connect(&nats.options(url), Duration::from_millis(lease_ms))
}

/// Refuses `db` when it names a journal on NATS, for a command that does not work on one yet
/// (`what`): the exit code, after the message.
pub(crate) fn refuse(
    db: Option<&Path>,
    what: &str,
    io: &mut crate::Io<'_>,
) -> std::io::Result<Option<i32>> {
    match db.and_then(url) {
        Some(u) => {
            writeln!(
                io.stderr,
                "error: {what} is not supported on a nats:// journal yet (`{u}`): use a journal file"
            )?;
            Ok(Some(crate::exit::INVALID))
        }
        None => Ok(None),
    }
}
