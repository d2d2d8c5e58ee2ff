//! `--journal nats://HOST:PORT`: the journal on NATS JetStream (docs/journal.md "Stores").

use std::path::Path;
use std::time::Duration;

use cameleon::journal::{JournalError, Names};
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

/// A `nats://` (or `tls://`) journal argument that may name a run after the URL,
/// `nats://HOST:PORT:RUN_ID` (as `FILE:RUN_ID` does a file's): the URL and the run id.
/// `None`: not such a URL.
pub(crate) fn split_run(arg: &str) -> Option<(&str, Option<&str>)> {
    url(Path::new(arg))?;
    let (scheme, rest) = arg.split_once("://")?;
    match rest.rsplit_once(':') {
        // A port is digits; a run id is one token of letters, digits, `-` and `_`.
        Some((head, run))
            if !run.is_empty()
                && !run.bytes().all(|b| b.is_ascii_digit())
                && run
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Some((&arg[..scheme.len() + 3 + head.len()], Some(run)))
        }
        _ => Some((arg, None)),
    }
}

/// Run `id` of the journal at `url` opened without journaling anything (to compare it), its
/// stored net naming the nets offered as tools by `capabilities` (else by those of the folder
/// it was recorded in); with `reuse`, its recorded firings too (from the same read).
pub(crate) fn recorded(
    url: &str,
    nats: &NatsArgs,
    id: &str,
    capabilities: Option<&Path>,
    reuse: bool,
) -> Result<(cameleon::Cvm, Option<cameleon::journal::StepsReuse>), JournalError> {
    let journal = open(url, nats, 30_000)?;
    let names = |f: &cameleon::journal::RecordedFolder| {
        let dir = f.base_dir.as_deref().unwrap_or(Path::new("."));
        crate::net_tools::with_net_tools(Names::default(), dir, capabilities)
    };
    let (run, source) = journal.open_run_with_reuse(id, names, reuse)?;
    Ok((run.cvm, source))
}
