//! `cameleon trust FILE`: records a project's capabilities file as trusted, by its content's
//! SHA-256, in the user's config directory; and the capability runtime every command that
//! runs a net builds, with the user's `--grant`s (docs/security.md, docs/cli.md).

use std::path::Path;

use clap::Args;

use super::{Io, exit, report_invalid};
use cameleon::capabilities::trust::{TrustStore, content_hash};
use cameleon::capabilities::{CapabilitiesError, ConfigFile, Grants, RuntimeBuilder};

/// `cameleon trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The capabilities file to trust (a project's `cameleon.yaml`). Read it first: a trusted
    /// file may send environment variables and the run's data to the hosts it names, and
    /// grant tools.
    pub file: std::path::PathBuf,
}

/// The sources of a run of the `.cm` file in folder `dir`: `--capabilities FILE`, else the
/// user's file, `CAMELEON_CAPABILITIES`'s, the project's (trusted once recorded); and the
/// user's `--grant`s.
pub(crate) fn sources(
    dir: &Path,
    capabilities: Option<&Path>,
    grants: &[String],
) -> RuntimeBuilder {
    let b = RuntimeBuilder::default().for_dir(dir, capabilities);
    if grants.is_empty() {
        b
    } else {
        b.source(Grants::new(grants.iter().cloned(), "--grant"))
    }
}

/// `trust FILE`: checks the file (as `check` reads it: nothing is built or contacted), then
/// records its path and hash. Exit 0 trusted, 2 not a valid capabilities file or no config
/// directory.
pub(super) fn trust(a: &TrustArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let shown = a.file.display().to_string();
    let bytes = match std::fs::read(&a.file) {
        Ok(b) => b,
        Err(e) => {
            writeln!(io.stderr, "error: cannot read `{shown}`: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    // Read as a trusted file would be, names only: a file with problems is not recorded.
    if let Err(e) = RuntimeBuilder::default()
        .source(ConfigFile::new(&a.file))
        .names()
    {
        match e {
            CapabilitiesError::File(e) => report_invalid(&e, false, io)?,
            other => writeln!(io.stderr, "error: {other}")?,
        }
        writeln!(io.stderr, "error: `{shown}` was not trusted")?;
        return Ok(exit::INVALID);
    }
    let mut store = match TrustStore::user() {
        Ok(s) if s.path().is_some() => s,
        Ok(_) => {
            writeln!(
                io.stderr,
                "error: no config directory to record the trust in: set HOME or XDG_CONFIG_HOME"
            )?;
            return Ok(exit::INVALID);
        }
        Err(e) => {
            writeln!(io.stderr, "error: cannot read the trust store: {e}")?;
            return Ok(exit::INVALID);
        }
    };
    match store.record(&a.file, &bytes) {
        Ok(hash) => {
            let at = store
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            writeln!(
                io.stdout,
                "trusted `{shown}` ({hash}), recorded in `{at}`; if the file changes, trust it again"
            )?;
            debug_assert_eq!(hash, content_hash(&bytes));
            Ok(exit::OK)
        }
        Err(e) => {
            writeln!(
                io.stderr,
                "error: cannot record the trust of `{shown}`: {e}"
            )?;
            Ok(exit::INVALID)
        }
    }
}
