//! The rules every request goes through before any handler, each a layer of the router
//! (`api::router`), outermost first:
//!
//! 1. [`require_own_host`]: the `Host` names this server — a loopback name or address with its
//!    port, the `--bind` address, or a `--public-host` name — else 421. A web page on another
//!    site that reaches 127.0.0.1 through a name it controls (DNS rebinding) sends its own name.
//! 2. [`require_own_origin`]: a request that says where it comes from (`Origin`) comes from
//!    this server's page, else 403: another site's page cannot drive the engine (CSRF).
//! 3. [`require_token`]: the token, as a cookie, `Authorization: Bearer`, or on a GET
//!    `?token=`; the page's address trades `?token=` for the cookie (a 303 to `/`), so the
//!    address bar and the history never keep it. 401 without.
//! 4. [`require_json_post`]: a POST says `Content-Type: application/json` (a form cannot), else 415.
//!
//! A refusal is an [`ApiError`], as a handler's is.

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorKind};
use super::token::{Presented, Token};

/// A name the server is reached by besides its own addresses (`--public-host NAME[:PORT]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PublicHost {
    /// Lower case, without a trailing dot.
    name: String,
    /// `None`: any port (a reverse proxy's default port, say).
    port: Option<u16>,
}

impl FromStr for PublicHost {
    type Err = String;

    /// `NAME` or `NAME:PORT` (`[V6]:PORT` for an IPv6 address).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}` is not a host name: give NAME or NAME:PORT (a name, an IPv4 address, or [IPv6])"
            )
        };
        let (host, port) = host_and_port(s).ok_or_else(bad)?;
        Ok(PublicHost {
            name: normal(&host),
            port,
        })
    }
}

/// The host and the port of `HOST[:PORT]` (`[V6]:PORT`), or `None` when it is not that: a
/// user part, a port that is not a number, an empty host.
fn host_and_port(s: &str) -> Option<(String, Option<u16>)> {
    let a = Authority::from_str(s).ok()?;
    let host = a.host();
    let port = a.port_u16();
    let exact = match port {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    (!host.is_empty() && a.as_str() == exact).then(|| (host.to_owned(), port))
}

/// Who this server is: what a request's `Host` and `Origin` may name, and its token.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The port it listens on.
    port: u16,
    /// The address it listens on.
    bind: IpAddr,
    /// `--public-host` names.
    public: Vec<PublicHost>,
    /// `None` with `--no-token` only.
    token: Option<Token>,
    /// The cookie's name: one per port, since cookies do not tell ports apart and two servers
    /// on one machine must not overwrite each other's.
    cookie: String,
}

impl Guard {
    /// The guard of a server on `bind:port`.
    pub(crate) fn new(
        bind: IpAddr,
        port: u16,
        public: Vec<PublicHost>,
        token: Option<Token>,
    ) -> Guard {
        Guard {
            port,
            bind,
            public,
            token,
            cookie: format!("cameleon_token_{port}"),
        }
    }

    /// Whether `host` (as a `Host` header or an origin's authority writes it) with `port`
    /// (`None`: the scheme's default, `default_port`) names this server.
    fn is_own(&self, host: &str, port: Option<u16>, default_port: u16) -> bool {
        let name = normal(host);
        let port = port.unwrap_or(default_port);
        if self
            .public
            .iter()
            .any(|p| p.name == name && p.port.is_none_or(|q| q == port))
        {
            return true;
        }
        if port != self.port {
            return false;
        }
        if name == "localhost" {
            return true;
        }
        match IpAddr::from_str(name.trim_start_matches('[').trim_end_matches(']')) {
            // An address literal cannot be rebound: a page that sends it was loaded from it.
            // On an unspecified `--bind` (0.0.0.0, ::) any of this machine's addresses reaches
            // the server.
            Ok(ip) => ip.is_loopback() || ip == self.bind || self.bind.is_unspecified(),
            Err(_) => false,
        }
    }
}

/// Lower case, without a trailing dot (`LocalHost.` is `localhost`).
fn normal(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Refuses (421) a request whose `Host` (or, in HTTP/2, `:authority`) does not name this
/// server, before any handler: what a DNS-rebinding page sends.
pub(crate) async fn require_own_host(
    State(g): State<Arc<Guard>>,
    req: Request,
    next: Next,
) -> Response {
    let authority = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
    let own = authority
        .as_deref()
        .and_then(host_and_port)
        .is_some_and(|(host, port)| g.is_own(&host, port, 80));
    if !own {
        let host = authority.unwrap_or_else(|| "(none)".to_owned());
        return ApiError::new(
            ErrorKind::MisdirectedHost,
            format!(
                "this server does not answer for host `{host}`: use the address it printed (http://127.0.0.1:{}/), or start it with `--public-host NAME` for a name that reaches it",
                g.port
            ),
        )
        .into_response();
    }
    next.run(req).await
}

/// Refuses (403) a request whose `Origin` is not this server's: another site's page (a
/// cross-site `fetch` or form) never drives the engine. A request without `Origin` (a
/// same-origin GET, `curl`) passes.
pub(crate) async fn require_own_origin(
    State(g): State<Arc<Guard>>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("(not text)");
        if !origin_is_own(&g, text) {
            return ApiError::new(
                ErrorKind::ForeignOrigin,
                format!(
                    "cross-origin request refused: `{text}` is not this server's page (only the page this server serves may call its API)"
                ),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// Whether `origin` (`scheme://host[:port]`) is one of this server's.
fn origin_is_own(g: &Guard, origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false; // `null` (a sandboxed frame, a file), or not an origin
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443, // behind a TLS-terminating proxy (`--public-host`)
        _ => return false,
    };
    host_and_port(rest).is_some_and(|(host, port)| g.is_own(&host, port, default_port))
}

/// Refuses (401) a request without the server's token (when it has one). The cookie and
/// `Authorization: Bearer T` are taken on every request; `?token=T` on a GET only (a POST
/// needs the cookie or the header). `GET /?token=T` — the address `serve` prints — sets the
/// cookie (`HttpOnly; SameSite=Strict`) and redirects (303) to `/` without the token.
pub(crate) async fn require_token(
    State(g): State<Arc<Guard>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(token) = &g.token else {
        return next.run(req).await;
    };
    let got = Presented::read(req.headers(), req.uri().query(), &g.cookie);
    let reads = req.method() == Method::GET || req.method() == Method::HEAD;
    let held = [&got.bearer, &got.cookie]
        .into_iter()
        .flatten()
        .any(|t| token.matches(t));
    let queried = reads && got.query.as_deref().is_some_and(|t| token.matches(t));
    if !held && !queried {
        let message = if got.query.is_some() && !reads {
            "a POST carries the token in the cookie the page set, or `Authorization: Bearer T`, never in the address"
        } else {
            "missing or wrong token: open the address `cameleon serve` printed (it ends in `?token=…`), or send `Authorization: Bearer T`"
        };
        return ApiError::new(ErrorKind::Unauthorized, message).into_response();
    }
    if reads && req.uri().path() == "/" && got.query.is_some() {
        return into_cookie(&g, token, req.uri().query().unwrap_or_default());
    }
    next.run(req).await
}

/// The 303 that trades the page address's `?token=` for the cookie: to `/`, with the rest of
/// the query kept.
fn into_cookie(g: &Guard, token: &Token, query: &str) -> Response {
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.is_empty() && kv.split('=').next() != Some("token"))
        .collect();
    let location = if rest.is_empty() {
        "/".to_owned()
    } else {
        format!("/?{}", rest.join("&"))
    };
    let cookie = format!(
        "{}={}; Path=/; HttpOnly; SameSite=Strict",
        g.cookie,
        token.encoded()
    );
    let mut r = StatusCode::SEE_OTHER.into_response();
    let h = r.headers_mut();
    for (k, v) in [
        (header::LOCATION, location),
        (header::SET_COOKIE, cookie),
        (header::CACHE_CONTROL, "no-store".to_owned()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
    r
}

/// Refuses a POST that does not say `Content-Type: application/json`.
pub(crate) async fn require_json_post(req: Request, next: Next) -> Response {
    if req.method() == Method::POST {
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return ApiError::new(
                ErrorKind::NotJson,
                "POST requests must send `Content-Type: application/json`",
            )
            .into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bind: &str, public: &[&str]) -> Guard {
        Guard::new(
            bind.parse().unwrap(),
            7878,
            public.iter().map(|p| p.parse().unwrap()).collect(),
            None,
        )
    }

    fn host_ok(g: &Guard, host: &str) -> bool {
        let (host, port) = host_and_port(host).unwrap();
        g.is_own(&host, port, 80)
    }

    #[test]
    fn loopback_names_with_the_port_are_the_servers_own_and_other_names_are_not() {
        let g = guard("127.0.0.1", &[]);
        for h in [
            "127.0.0.1:7878",
            "localhost:7878",
            "LOCALHOST.:7878",
            "[::1]:7878",
        ] {
            assert!(host_ok(&g, h), "{h}");
        }
        for h in [
            "rebind.attacker.example:7878",
            "127.0.0.1:7879",
            "127.0.0.1",
            "localhost",
            "10.0.0.5:7878",
            "localhost.attacker.example:7878",
            "sub.localhost:7878",
        ] {
            assert!(!host_ok(&g, h), "{h}");
        }
    }

    #[test]
    fn the_bind_address_and_public_hosts_are_the_servers_own() {
        let g = guard("192.168.1.5", &["cam.example.org", "Box.Lan:9000"]);
        assert!(host_ok(&g, "192.168.1.5:7878"));
        assert!(!host_ok(&g, "192.168.1.6:7878"));
        assert!(
            host_ok(&g, "cam.example.org"),
            "any port: a proxy's default"
        );
        assert!(host_ok(&g, "CAM.example.org:8443"));
        assert!(host_ok(&g, "box.lan:9000"));
        assert!(
            !host_ok(&g, "box.lan:7878"),
            "the port given is the only one"
        );
        assert!(!host_ok(&g, "example.org:7878"));
        // On 0.0.0.0, any address of the machine; still no foreign name.
        let any = guard("0.0.0.0", &[]);
        assert!(host_ok(&any, "10.1.2.3:7878"));
        assert!(!host_ok(&any, "10.1.2.3:80"));
        assert!(!host_ok(&any, "rebind.attacker.example:7878"));
    }

    #[test]
    fn origins_are_checked_by_scheme_host_and_port() {
        let g = guard("127.0.0.1", &["cam.example.org"]);
        for o in [
            "http://127.0.0.1:7878",
            "http://localhost:7878",
            "https://cam.example.org",
        ] {
            assert!(origin_is_own(&g, o), "{o}");
        }
        for o in [
            "null",
            "http://attacker.example",
            "http://127.0.0.1:7879",
            "http://127.0.0.1",
            "ftp://127.0.0.1:7878",
            "http://user@127.0.0.1:7878",
            "127.0.0.1:7878",
        ] {
            assert!(!origin_is_own(&g, o), "{o}");
        }
    }

    #[test]
    fn a_public_host_reads_its_port_and_refuses_what_is_not_a_host() {
        let p: PublicHost = "Cam.Example.org.:8080".parse().unwrap();
        assert_eq!(
            p,
            PublicHost {
                name: "cam.example.org".into(),
                port: Some(8080)
            }
        );
        for bad in [
            "",
            "a b",
            "http://x",
            "user@host",
            "x:notaport",
            "x:99999",
            "x/",
        ] {
            assert!(bad.parse::<PublicHost>().is_err(), "{bad}");
        }
    }
}
