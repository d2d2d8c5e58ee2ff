//! Satellites for Caméléon: operator firings and tool calls run by other processes, on other
//! machines, connected by a NATS server (docs/semantics.md §11, docs/wire.md).
//!
//! - A **satellite** ([`Satellite`]) hosts every operator type and tool linked into its program
//!   and serves them on NATS: `cameleon satellite --nats URL` is one.
//! - A **run** connects with [`Remote`] and hands it its net before building the engine:
//!   [`Remote::place`] replaces each `placement: remote` instance by a proxy that sends the
//!   firing — run id, idempotency key, params, typed input values, internal state — to a
//!   satellite of the queue group and applies the reply: emissions and new state, or the error.
//!   The engine is unchanged, so the trace is the one a local run writes.
//! - Tools advertised by satellites reach the run's tool gate as [`RemoteTool`]s: same policy,
//!   same `ToolResult`, `meta.origin` = `satellite:<name>`.
//! - [`Registry`] follows heartbeats; [`Remote::discover`] lists the live satellites.
//!
//! ```no_run
//! use cameleon_nats::{NatsOptions, Remote};
//!
//! let mut net = cameleon::cm::Loader::new().load_file("pipeline.cm").expect("a net");
//! let remote = Remote::connect(&NatsOptions::new("nats://127.0.0.1:4222")).expect("NATS");
//! remote.place(&mut net);
//! let mut cvm = cameleon::Cvm::builder(net).build();
//! let end = cvm.run().expect("the run ends");
//! println!("{end:?}");
//! ```
#![deny(missing_docs)]

use std::path::PathBuf;

mod cache;
mod remote;
mod satellite;
mod server;
pub mod wire;

pub use remote::{DEFAULT_TIMEOUT, MISSED_HEARTBEATS, Registry, Remote, RemoteTool, Seen};
pub use satellite::{Satellite, SatelliteConfig};
pub use server::NatsServer;
pub use wire::{DEFAULT_PREFIX, Subjects, WIRE_VERSION};

/// How to reach NATS: the server URL (`nats://`, or `tls://` for TLS), credentials, and the
/// subject prefix that isolates one tenant's satellites from another's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatsOptions {
    /// The server URL(s), comma-separated.
    pub url: String,
    /// A NATS credentials file (`--nats-creds`).
    pub creds: Option<PathBuf>,
    /// A token (`--nats-token`).
    pub token: Option<String>,
    /// The subject prefix (`--subject-prefix`, default `cameleon`).
    pub prefix: String,
}

impl NatsOptions {
    /// The server at `url`, no credentials, prefix `cameleon`.
    pub fn new(url: impl Into<String>) -> Self {
        NatsOptions {
            url: url.into(),
            creds: None,
            token: None,
            prefix: DEFAULT_PREFIX.to_owned(),
        }
    }

    /// The same, with subject prefix `prefix`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The subjects under the prefix.
    pub fn subjects(&self) -> Subjects {
        Subjects::new(self.prefix.clone())
    }

    /// Connects on the current tokio runtime.
    pub(crate) async fn connect_here(
        &self,
        name: Option<&str>,
    ) -> Result<async_nats::Client, NatsError> {
        if self.prefix.is_empty() || self.prefix.split('.').any(|t| !wire::is_subject_token(t)) {
            return Err(NatsError::Config(format!(
                "subject prefix `{}` is not a NATS subject: use dot-separated tokens of letters, digits, `-` or `_`",
                self.prefix
            )));
        }
        let mut o = async_nats::ConnectOptions::new()
            .request_timeout(None)
            .connection_timeout(std::time::Duration::from_secs(5));
        if let Some(n) = name {
            o = o.name(n);
        }
        if let Some(t) = &self.token {
            o = o.token(t.clone());
        }
        if let Some(c) = &self.creds {
            o = o.credentials_file(c).await.map_err(|e| {
                NatsError::Config(format!(
                    "cannot read the NATS credentials file `{}`: {e}",
                    c.display()
                ))
            })?;
        }
        o.connect(self.url.as_str()).await.map_err(|e| {
            NatsError::Connect(format!(
                "cannot connect to NATS at `{}`: {e} (is a server running there? `nats-server -a 127.0.0.1 -p 4222` starts one)",
                self.url
            ))
        })
    }
}

/// Why talking to NATS failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NatsError {
    /// The server could not be reached, or refused us.
    #[error("{0}")]
    Connect(String),
    /// A setting is wrong (name, prefix, credentials file, a type to host).
    #[error("{0}")]
    Config(String),
    /// NATS refused an operation.
    #[error("{0}")]
    Nats(String),
}
