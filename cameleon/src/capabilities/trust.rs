//! Which capabilities files are trusted: the user's config directory, and the files the user
//! recorded with `cameleon trust FILE` — by the SHA-256 of their content, so a changed file must
//! be trusted again, like direnv's `allow` (docs/security.md).
//!
//! A file given in code or with `--capabilities`, and the one `CAMELEON_CAPABILITIES` names,
//! are trusted as given ([`ConfigFile::new`](super::ConfigFile::new)). A `cameleon.yaml` found
//! beside a `.cm` file ([`ConfigFile::project`](super::ConfigFile::project)) is trusted only
//! when the [`TrustStore`] holds its path with the hash of the very bytes read.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The user's capabilities file, in [`config_dir`]: trusted, read before the others.
pub const USER_FILE: &str = "cameleon.yaml";

/// The file, in [`config_dir`], listing the trusted capabilities files.
pub const TRUST_FILE: &str = "trusted";

/// The user's config directory for Caméléon: `$XDG_CONFIG_HOME/cameleon` when
/// `XDG_CONFIG_HOME` is an absolute path, else `$HOME/.config/cameleon` (on Windows
/// `%APPDATA%\cameleon`); `None` when none of these variables is set.
pub fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(x) = var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
        return Some(x.join("cameleon"));
    }
    if cfg!(windows)
        && let Some(a) = var("APPDATA")
    {
        return Some(a.join("cameleon"));
    }
    var("HOME").map(|h| h.join(".config").join("cameleon"))
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The capabilities files the user trusts, by path and content hash: the file [`TRUST_FILE`]
/// of the config directory, one `sha256:HEX PATH` line per file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustStore {
    path: Option<PathBuf>,
    entries: Vec<(String, PathBuf)>,
}

/// Largest trust file read (a few thousand entries).
const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;

impl TrustStore {
    /// The user's store ([`config_dir`]`/trusted`); empty when it does not exist yet.
    pub fn user() -> std::io::Result<TrustStore> {
        match config_dir() {
            Some(dir) => TrustStore::at(dir.join(TRUST_FILE)),
            None => Ok(TrustStore::default()),
        }
    }

    /// The store in file `path`; empty when it does not exist yet.
    pub fn at(path: impl Into<PathBuf>) -> std::io::Result<TrustStore> {
        let path = path.into();
        let mut text = String::new();
        match std::fs::File::open(&path) {
            Ok(f) => {
                f.take(MAX_STORE_BYTES).read_to_string(&mut text)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let entries = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(' '))
            .filter(|(h, _)| h.starts_with("sha256:"))
            .map(|(h, p)| (h.to_owned(), PathBuf::from(p)))
            .collect();
        Ok(TrustStore {
            path: Some(path),
            entries,
        })
    }

    /// Where the store is kept.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Whether the file at `file` (made absolute, its links resolved) with content `bytes` is
    /// trusted: its path is recorded with the hash of these bytes.
    pub fn trusts(&self, file: &Path, bytes: &[u8]) -> bool {
        let Ok(real) = file.canonicalize() else {
            return false;
        };
        let hash = content_hash(bytes);
        self.entries.iter().any(|(h, p)| *p == real && *h == hash)
    }

    /// Whether the file at `file` is recorded at all (with any content).
    pub fn knows(&self, file: &Path) -> bool {
        file.canonicalize()
            .is_ok_and(|real| self.entries.iter().any(|(_, p)| *p == real))
    }

    /// Records the file at `file` with content `bytes` (replacing what was recorded for that
    /// path) and writes the store: the config directory is created `0700`, the store `0600`,
    /// replaced atomically. Returns the hash recorded.
    pub fn record(&mut self, file: &Path, bytes: &[u8]) -> std::io::Result<String> {
        let Some(path) = self.path.clone() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no config directory: set XDG_CONFIG_HOME or HOME",
            ));
        };
        let real = file.canonicalize()?;
        let hash = content_hash(bytes);
        self.entries.retain(|(_, p)| *p != real);
        self.entries.push((hash.clone(), real));
        let mut text = String::from(
            "# Capabilities files trusted with `cameleon trust FILE`: the SHA-256 of the content, then the path.\n",
        );
        for (h, p) in &self.entries {
            text.push_str(&format!("{h} {}\n", p.display()));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        private_dir(dir)?;
        let tmp = dir.join(format!(".{TRUST_FILE}.{}.tmp", std::process::id()));
        let mut f = private_file(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &path)?;
        Ok(hash)
    }
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

/// Whether `url` is an `http(s)://` URL whose host is a loopback one: `localhost`,
/// `127.0.0.0/8`, `[::1]`. Conservative: a URL with user information (`@`), a backslash in its
/// authority or any other spelling of the host counts as not loopback, so no parser that reads
/// the URL differently can take it elsewhere.
pub fn is_loopback_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains(['@', '\\']) || authority.chars().any(|c| c.is_whitespace()) {
        return false;
    }
    host_of(url).is_some_and(|h| {
        h.eq_ignore_ascii_case("localhost")
            || h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// The host of an `http(s)://` URL, without port or brackets, for messages (`None` when it has
/// none).
pub fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '\\', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_apart_from_others() {
        for u in [
            "http://127.0.0.1:8080/v1",
            "http://localhost/v1",
            "http://[::1]:9/v1",
            "http://127.1.2.3",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(is_loopback_url(u), "{u}");
        }
        for u in [
            "https://api.openai.com/v1",
            "http://127.0.0.1.evil.example/v1",
            "http://localhost.evil.example",
            "http://10.0.0.1/v1",
            "http://evil.example/?x=http://127.0.0.1",
            "http://127.0.0.1@evil.example/",
            // Read by a URL parser as `evil.example`, with a path `\@127.0.0.1/`.
            "http://evil.example\\@127.0.0.1/",
            "http://user@127.0.0.1/",
            "ftp://127.0.0.1/",
            "http://0x7f.0.0.1/",
            "127.0.0.1:8080",
        ] {
            assert!(!is_loopback_url(u), "{u}");
        }
        assert_eq!(host_of("https://a.example:443/v1"), Some("a.example"));
    }

    #[test]
    fn a_changed_file_is_no_longer_trusted() {
        let tmp = test_support::TempDir::new("trust-store");
        let dir = tmp.path();
        let file = dir.join("cameleon.yaml");
        std::fs::write(&file, "chat: {}\n").unwrap();
        let mut store = TrustStore::at(dir.join("store/trusted")).unwrap();
        assert!(!store.trusts(&file, b"chat: {}\n"));
        store.record(&file, b"chat: {}\n").unwrap();
        let again = TrustStore::at(dir.join("store/trusted")).unwrap();
        assert!(again.trusts(&file, b"chat: {}\n"));
        assert!(!again.trusts(&file, b"chat: {x: 1}\n"));
        assert!(again.knows(&file));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("store/trusted"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
