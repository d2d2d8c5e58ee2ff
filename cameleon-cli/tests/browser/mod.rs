//! The browser the `serve_browser*` tests drive: Debian's `chromium` through `chromedriver`
//! (fantoccini), on a free loopback port with a fresh profile, and what they ask of the page.
//! A missing browser fails the test with the command that installs it.

#![allow(dead_code)] // each test file uses its own part of it

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use test_support::{Cmd, Proc, TempDir, WAIT_TIMEOUT};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const INSTALL: &str = "apt-get update && apt-get install -y chromium chromium-driver (or run scripts/test, which installs them)";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Where screenshots go: under the target folder.
pub fn screenshot_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// chromedriver on a free loopback port, and a headless Chromium session with a fresh
/// profile and the flags this machine's closed network needs.
pub async fn browser(tag: &str) -> (Proc, TempDir, Client) {
    for (bin, what) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromedriver")] {
        assert!(
            Path::new(bin).exists(),
            "{what} is missing ({bin}): install it with `{INSTALL}`"
        );
    }
    let port = free_port();
    let driver = Cmd::new(CHROMEDRIVER).arg(format!("--port={port}")).spawn();
    test_support::wait_until(
        &format!("chromedriver listening on port {port} (is it installed? `{INSTALL}`)"),
        WAIT_TIMEOUT,
        || TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
    let profile = TempDir::new(&format!("serve-browser-profile-{tag}"));
    let caps = json!({
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ]
        }
    });
    let mut b = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    b.capabilities(caps.as_object().unwrap().clone());
    let client = b
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap_or_else(|e| panic!("no browser session ({e}); is chromium installed? `{INSTALL}`"));
    (driver, profile, client)
}

/// Evaluates `js` (a function body) in the page.
pub async fn js(c: &Client, body: &str) -> Value {
    c.execute(body, vec![]).await.expect("script runs")
}

/// Waits until `js` returns true (the page polls itself; no duration is asserted).
pub async fn until(c: &Client, what: &str, cond: &str) {
    for _ in 0..600 {
        if js(c, &format!("return !!({cond});")).await == json!(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the page never showed: {what} ({cond})");
}

/// The server's state, fetched by the page itself.
pub async fn server_state(c: &Client) -> Value {
    c.execute_async(
        "const done = arguments[arguments.length - 1]; fetch('/api/state').then(r => r.json()).then(done);",
        vec![],
    )
    .await
    .expect("GET /api/state from the page")
}

/// Waits until the page shows the server's current state (its version).
pub async fn settled(c: &Client) -> Value {
    let s = server_state(c).await;
    let v = s["version"].as_u64().unwrap();
    until(
        c,
        &format!("state version {v}"),
        &format!("Number(document.body.dataset.version) >= {v}"),
    )
    .await;
    s
}

pub async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("cannot click `{css}`: {e}"));
}

pub async fn screenshot(c: &Client, name: &str) -> PathBuf {
    let png = c.screenshot().await.expect("a screenshot");
    let path = screenshot_dir().join(name);
    std::fs::write(&path, png).unwrap();
    path
}

/// Every connection's `data-state` as the page shows it.
pub async fn page_states(c: &Client) -> Value {
    js(
        c,
        "const m = {}; for (const p of document.querySelectorAll('#visual path[data-conn]')) m[p.getAttribute('data-conn')] = p.getAttribute('data-state'); return m;",
    )
    .await
}
