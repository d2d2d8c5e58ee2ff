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

/// What a command does not do on a `nats://` journal yet: exit 2 with this message.
pub(crate) fn unsupported(what: &str) -> String {
    format!("{what} is not supported on a nats:// journal yet (use a journal file)")
}
