//! Satellites for Caméléon: operator firings and tool calls run by other processes, on other
//! machines, connected by a NATS server (docs/semantics.md §11, docs/wire.md).
//!
//! - A **satellite** ([`Satellite`]) hosts the operator types and tools it is told to (its
//!   hosting list is its policy) and serves them on NATS, at most `concurrency` calls at once
//!   (past it, `busy` at once): `cameleon satellite --nats URL --ops … --tools …` is one.
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
#[cfg(feature = "journal")]
pub mod journal;
mod remote;
mod satellite;
mod server;
pub mod types;
pub mod wire;

#[cfg(feature = "journal")]
pub use journal::{JetStreamJournal, Lease};
pub use remote::{
    DEFAULT_KEEP_AWAKE, DEFAULT_TIMEOUT, Failover, MISSED_HEARTBEATS, Registry, Remote, RemoteTool,
    Seen,
};
pub use satellite::{
    DEFAULT_DRAIN_TIMEOUT, DEFAULT_MAX_CALL, DEFAULT_MAX_REQUEST_BYTES, FILE_READING_OPS,
    OpsToHost, Satellite, SatelliteConfig, could_host, nothing_to_host, tool_effects,
};
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
    /// A run's calls: how long after a call starts one core of the process is kept awake for
    /// its reply (`--nats-keep-awake-us`, default [`DEFAULT_KEEP_AWAKE`]; zero: off). See
    /// docs/wire.md, "Latency".
    pub keep_awake: std::time::Duration,
}

impl NatsOptions {
    /// The server at `url`, no credentials, prefix `cameleon`.
    pub fn new(url: impl Into<String>) -> Self {
        NatsOptions {
            url: url.into(),
            creds: None,
            token: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            keep_awake: DEFAULT_KEEP_AWAKE,
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

    /// `Err` when the prefix cannot start a NATS subject.
    pub(crate) fn check_prefix(&self) -> Result<(), NatsError> {
        if self.prefix.is_empty() || self.prefix.split('.').any(|t| !wire::is_subject_token(t)) {
            return Err(NatsError::Config(format!(
                "subject prefix `{}` is not a NATS subject: use dot-separated tokens of letters, digits, `-` or `_`",
                self.prefix
            )));
        }
        Ok(())
    }

    /// Connects on the current tokio runtime. A URL may carry a user and password
    /// (`nats://USER:PASSWORD@HOST:PORT`).
    pub(crate) async fn connect_here(
        &self,
        name: Option<&str>,
    ) -> Result<async_nats::Client, NatsError> {
        self.check_prefix()?;
        let (url, userinfo) = split_userinfo(&self.url)?;
        let mut o = async_nats::ConnectOptions::new()
            .request_timeout(None)
            .connection_timeout(std::time::Duration::from_secs(5));
        if let Some(n) = name {
            o = o.name(n);
        }
        match userinfo {
            Some(UserInfo::Password(user, password)) => o = o.user_and_password(user, password),
            Some(UserInfo::Token(token)) => o = o.token(token),
            None => {}
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
        o.connect(url.as_str()).await.map_err(|e| {
            NatsError::Connect(format!(
                "cannot connect to NATS at `{url}`: {e} (is a server running there? `nats-server -a 127.0.0.1 -p 4222` starts one)"
            ))
        })
    }
}

/// What the user part of a URL says: `USER:PASSWORD@` or `TOKEN@`.
#[derive(Debug, PartialEq, Eq)]
enum UserInfo {
    Password(String, String),
    Token(String),
}

/// The URL(s) without their user part, and that part (percent-decoded). Several URLs must
/// agree on it. The returned URL never holds a secret, so errors may quote it.
fn split_userinfo(urls: &str) -> Result<(String, Option<UserInfo>), NatsError> {
    let mut info = None;
    let mut bare = Vec::new();
    for url in urls.split(',') {
        let url = url.trim();
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let (user, host) = match rest.rsplit_once('@') {
            Some((user, host)) => (Some(user), host),
            None => (None, rest),
        };
        bare.push(if scheme.is_empty() {
            host.to_owned()
        } else {
            format!("{scheme}://{host}")
        });
        let Some(user) = user else { continue };
        let this = match user.split_once(':') {
            Some((u, p)) => UserInfo::Password(decode(u)?, decode(p)?),
            None => UserInfo::Token(decode(user)?),
        };
        if info.as_ref().is_some_and(|i| *i != this) {
            return Err(NatsError::Config(
                "the NATS URLs carry different credentials: give them once".to_owned(),
            ));
        }
        info = Some(this);
    }
    Ok((bare.join(","), info))
}

/// `%XX` escapes decoded.
fn decode(s: &str) -> Result<String, NatsError> {
    let bad = || NatsError::Config("a NATS URL's credentials have a bad `%` escape".to_owned());
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_a_url_are_taken_out_of_it() {
        assert_eq!(
            split_userinfo("nats://run:p%40ss@127.0.0.1:4222").unwrap(),
            (
                "nats://127.0.0.1:4222".to_owned(),
                Some(UserInfo::Password("run".into(), "p@ss".into()))
            )
        );
        assert_eq!(
            split_userinfo("tls://s3cret@a:1,tls://s3cret@b:2").unwrap(),
            (
                "tls://a:1,tls://b:2".to_owned(),
                Some(UserInfo::Token("s3cret".into()))
            )
        );
        assert_eq!(split_userinfo("nats://h:1").unwrap().1, None);
        assert!(split_userinfo("nats://a:b@h:1,nats://c:d@h:2").is_err());
        assert!(split_userinfo("nats://a:%zz@h:1").is_err());
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
