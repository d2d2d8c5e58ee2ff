//! Who `cameleon serve` answers (docs/security.md, "serve"): requests for its own host only
//! (DNS rebinding), from its own page only (CSRF), with its token — made at start unless
//! `--token` gives one, traded by the page's address for an `HttpOnly; SameSite=Strict`
//! cookie, or sent as `Authorization: Bearer`. `--no-token` is for loopback only.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::serve::{JSON, request, request_raw};
use test_support::{Bin, Serve, TempDir, code, stderr};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn fork_join() -> PathBuf {
    examples().join("fork_join.cm")
}

/// `(status, body)` of `method path` on `server` with `headers` only (no token unless given).
fn raw(server: &Serve, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let body = if method == "POST" { "{}" } else { "" };
    request(server.addr(), method, path, headers, body)
}

#[test]
fn a_token_is_made_at_start_printed_in_the_address_and_required_everywhere() {
    let server = Serve::start(CAMELEON, &fork_join(), &[]);
    let token = server
        .token()
        .expect("the printed address carries a token")
        .to_owned();
    assert_eq!(token.len(), 48, "192 bits in hexadecimal: {token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    assert!(
        server.url().ends_with(&format!("/?token={token}")),
        "{}",
        server.url()
    );
    // Without it, nothing: not the API, not the page, not its files.
    for path in [
        "/api/state",
        "/",
        "/page.js",
        "/page.css",
        "/results.js",
        "/api/events",
    ] {
        let (status, e) = raw(&server, "GET", path, &[]);
        assert_eq!(status, 401, "GET {path}: {e}");
    }
    let (status, e) = raw(&server, "POST", "/api/step", &[JSON]);
    assert_eq!(status, 401, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("open the address `cameleon serve` printed"),
        "{e}"
    );
    let bearer = format!("Bearer {token}");
    assert_eq!(
        raw(&server, "GET", "/api/state", &[("Authorization", &bearer)]).0,
        200
    );
    let wrong = format!("Bearer {}0", &token[..47]);
    assert_eq!(
        raw(&server, "GET", "/api/state", &[("Authorization", &wrong)]).0,
        401
    );
    assert_eq!(
        raw(&server, "GET", &format!("/api/state?token={token}"), &[]).0,
        200
    );
    // Another server, another token.
    let other = Serve::start(CAMELEON, &fork_join(), &[]);
    assert_ne!(other.token(), server.token());
}

#[test]
fn the_page_address_trades_the_token_for_a_cookie_that_every_request_of_the_page_carries() {
    let secret = "a+b/c=d%e&f";
    let server = Serve::start(CAMELEON, &fork_join(), &["--token", secret]);
    assert!(
        server.url().ends_with("/?token=a%2Bb%2Fc%3Dd%25e%26f"),
        "the printed address encodes the token: {}",
        server.url()
    );
    assert_eq!(
        server.token(),
        Some(secret),
        "decoded, it is the token given"
    );
    // `GET /?token=…` answers 303 to `/` (the token leaves the address bar) with the cookie.
    let path = &server.url()[server.url().find("/?").unwrap()..];
    let (status, headers, _) = request_raw(server.addr(), "GET", path, &[], "");
    assert_eq!(status, 303, "{headers:?}");
    assert!(
        headers
            .iter()
            .any(|h| h.eq_ignore_ascii_case("location: /")),
        "{headers:?}"
    );
    let (cookie, set) = server.cookie();
    let port = server.addr().rsplit(':').next().unwrap();
    assert_eq!(
        cookie,
        format!("cameleon_token_{port}=a%2Bb%2Fc%3Dd%25e%26f")
    );
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attr), "{attr} in {set}");
    }
    // The cookie opens the page, its files, the API, the stream, and a POST.
    let with = [("Cookie", cookie.as_str())];
    for path in [
        "/",
        "/page.js",
        "/page.css",
        "/results.js",
        "/api/state",
        "/api/svg",
    ] {
        let (status, body) = raw(&server, "GET", path, &with);
        assert_eq!(status, 200, "GET {path} with the cookie: {body}");
    }
    let (status, s) = raw(&server, "POST", "/api/step", &[JSON, with[0]]);
    assert_eq!((status, &s["step"]), (200, &json!(1)), "{s}");
    test_support::Events::subscribe(server.addr(), &with).wait_for_state(1);
    // A wrong cookie is no cookie; a POST never takes the token from its address.
    let wrong = format!("cameleon_token_{port}=a%2Bb");
    assert_eq!(
        raw(&server, "GET", "/api/state", &[("Cookie", &wrong)]).0,
        401
    );
    let (status, e) = raw(
        &server,
        "POST",
        "/api/step?token=a%2Bb%2Fc%3Dd%25e%26f",
        &[JSON],
    );
    assert_eq!(status, 401, "{e}");
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("never in the address"),
        "{e}"
    );
    // The token given in the address, percent-decoded, works on a GET.
    assert_eq!(
        raw(
            &server,
            "GET",
            "/api/state?token=a%2Bb%2Fc%3Dd%25e%26f",
            &[]
        )
        .0,
        200
    );
}

#[test]
fn a_request_for_another_host_is_refused_before_any_handler() {
    let dir = TempDir::new("serve-guard-host");
    let file = dir.join("net.cm");
    std::fs::copy(fork_join(), &file).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let bearer = format!("Bearer {}", server.token().unwrap());
    let port = server.addr().rsplit(':').next().unwrap().to_owned();
    let as_host = |host: &str, method: &str, path: &str| {
        raw(
            &server,
            method,
            path,
            &[("Host", host), ("Authorization", &bearer), JSON],
        )
    };
    let rebound = format!("rebind.attacker.example:{port}");
    for (method, path) in [
        ("GET", "/api/source"),
        ("GET", "/"),
        ("GET", "/no/such/route"),
        ("POST", "/api/step"),
    ] {
        let (status, e) = as_host(&rebound, method, path);
        assert_eq!(status, 421, "{method} {path} for {rebound}: {e}");
        assert!(
            e["error"]
                .as_str()
                .unwrap()
                .contains("does not answer for host"),
            "{e}"
        );
    }
    let (status, _) = request(
        server.addr(),
        "POST",
        "/api/save",
        &[("Host", &rebound), ("Authorization", &bearer), JSON],
        &json!({"text": "operators: []\n"}).to_string(),
    );
    assert_eq!(status, 421);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "nothing written"
    );
    assert_eq!(server.get("/api/state").1["step"], 0, "nothing stepped");
    // The loopback names with the server's port are its own; another port is not.
    for host in [
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        format!("127.0.0.1:{port}"),
    ] {
        assert_eq!(as_host(&host, "GET", "/api/state").0, 200, "{host}");
    }
    assert_eq!(as_host("127.0.0.1:1", "GET", "/api/state").0, 421);
    assert_eq!(
        as_host("localhost", "GET", "/api/state").0,
        421,
        "no port: port 80"
    );
}

#[test]
fn a_request_from_another_sites_page_is_refused() {
    let dir = TempDir::new("serve-guard-origin");
    let file = dir.join("net.cm");
    std::fs::copy(fork_join(), &file).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let (cookie, _) = server.cookie();
    let from = |origin: &str, method: &str, path: &str, body: &str| {
        request(
            server.addr(),
            method,
            path,
            &[("Origin", origin), ("Cookie", &cookie), JSON],
            body,
        )
    };
    let save = json!({"text": "operators: []\n"}).to_string();
    for origin in ["http://attacker.example", "null", "http://127.0.0.1:1"] {
        let (status, e) = from(origin, "POST", "/api/save", &save);
        assert_eq!(status, 403, "{origin}: {e}");
        assert!(
            e["error"]
                .as_str()
                .unwrap()
                .contains("cross-origin request refused"),
            "{e}"
        );
        assert_eq!(from(origin, "POST", "/api/step", "{}").0, 403, "{origin}");
        assert_eq!(from(origin, "GET", "/api/source", "").0, 403, "{origin}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "nothing written"
    );
    assert_eq!(server.get("/api/state").1["step"], 0, "nothing stepped");
    // The page's own origin is.
    let own = format!("http://{}", server.addr());
    assert_eq!(from(&own, "POST", "/api/step", "{}").0, 200);
}

#[test]
fn public_hosts_are_answered_under_their_names() {
    let server = Serve::start(
        CAMELEON,
        &fork_join(),
        &[
            "--public-host",
            "cam.example.org",
            "--public-host",
            "Box.Lan:9000",
        ],
    );
    let bearer = format!("Bearer {}", server.token().unwrap());
    let status = |host: &str, origin: Option<&str>| {
        let mut h = vec![("Host", host), ("Authorization", bearer.as_str())];
        h.extend(origin.map(|o| ("Origin", o)));
        raw(&server, "GET", "/api/state", &h).0
    };
    assert_eq!(
        status("cam.example.org", Some("https://cam.example.org")),
        200
    );
    assert_eq!(
        status("cam.example.org:8443", None),
        200,
        "any port for a bare name"
    );
    assert_eq!(status("box.lan:9000", Some("http://box.lan:9000")), 200);
    assert_eq!(status("box.lan:9001", None), 421);
    assert_eq!(
        status("cam.example.org", Some("https://evil.example.org")),
        403
    );
}

#[test]
fn bad_arguments_are_refused_with_exit_2_and_no_token_is_for_loopback_only() {
    let file = fork_join();
    let f = file.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--bind", "0.0.0.0"], "give a secret with --token"),
        (
            &["--bind", "0.0.0.0", "--no-token"],
            "--no-token is for loopback only",
        ),
        (&["--token", ""], "--token is empty"),
        (&["--token", "x", "--no-token"], "cannot be used with"),
        (
            &["--public-host", "a b"],
            "--public-host: `a b` is not a host name",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["serve", f, "--port", "0"];
        all.extend_from_slice(args);
        let o = CAMELEON.run(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn without_a_token_on_loopback_the_server_warns_and_still_guards_host_and_origin() {
    let dir = TempDir::new("serve-guard-no-token");
    let file = dir.join("net.cm");
    std::fs::copy(fork_join(), &file).unwrap();
    let server = Serve::start(CAMELEON, &file, &["--no-token"]);
    assert_eq!(server.token(), None, "{}", server.url());
    let warning = server.stderr_line(1);
    assert!(
        warning.starts_with("warning: --no-token: every program and user of this machine"),
        "{warning}"
    );
    assert_eq!(raw(&server, "GET", "/api/state", &[]).0, 200);
    assert_eq!(raw(&server, "POST", "/api/step", &[JSON]).0, 200);
    // DNS rebinding and CSRF are still refused: the Host and Origin guards need no token.
    let port = server.addr().rsplit(':').next().unwrap().to_owned();
    let rebound = format!("rebind.attacker.example:{port}");
    assert_eq!(
        raw(&server, "GET", "/api/source", &[("Host", &rebound)]).0,
        421
    );
    let (status, _) = request(
        server.addr(),
        "POST",
        "/api/save",
        &[("Origin", "http://attacker.example"), JSON],
        &json!({"text": "operators: []\n"}).to_string(),
    );
    assert_eq!(status, 403);
}
