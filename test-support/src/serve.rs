//! `cameleon serve` in tests: [`Serve::start`] starts it on a free port, reads the address it
//! prints (with its `?token=`: the server makes one unless told `--no-token`), waits until it
//! answers, and kills it when dropped; [`Serve::get`], [`Serve::post`] and [`Serve::events`]
//! carry the token, [`Serve::cookie`] trades it for the page's cookie as a browser does;
//! [`request`] and [`Events`] talk HTTP to it, every read and write with a timeout.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use percent_encoding::percent_decode_str;
use serde_json::Value;

use crate::process::{Bin, Cmd, Proc, WAIT_TIMEOUT};

/// How long one HTTP exchange may take before the test fails.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `cameleon serve`.
#[derive(Debug)]
pub struct Serve {
    proc: Proc,
    url: String,
    addr: String,
    token: Option<String>,
}

impl Serve {
    /// `BIN serve FILE --port 0 ARGS…`.
    pub fn start(bin: Bin, file: &Path, args: &[&str]) -> Serve {
        let cmd = bin
            .cmd()
            .arg("serve")
            .arg(file)
            .args(["--port", "0"])
            .args(args);
        Serve::start_cmd(cmd)
    }

    /// Starts `cmd` (a `serve` command line) and waits until it answers HTTP.
    pub fn start_cmd(cmd: Cmd) -> Serve {
        let proc = cmd.spawn();
        let text = proc.wait_stdout("the address it serves on", WAIT_TIMEOUT, |t| {
            t.lines().any(|l| l.contains("http://")) && t.contains('\n')
        });
        let (url, addr, token) =
            parse_address(&text).unwrap_or_else(|| panic!("no address in {text:?}"));
        let serve = Serve {
            proc,
            url,
            addr,
            token,
        };
        serve.wait_ready();
        serve
    }

    /// Waits until the server answers a request (whatever the status).
    fn wait_ready(&self) {
        let deadline = Instant::now() + WAIT_TIMEOUT;
        while TcpStream::connect(&self.addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "`{}` printed {} but never accepted a connection",
                self.proc.label(),
                self.url
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The page's address as the server printed it (with `?token=…` when it has a token).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The token of the printed address, percent-decoded.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The process (to signal it, or read its standard error).
    pub fn proc(&mut self) -> &mut Proc {
        &mut self.proc
    }

    /// What the server printed on standard error so far.
    pub fn stderr_text(&self) -> String {
        self.proc.stderr_text()
    }

    /// The `n`-th line (1-based) of its standard error, waiting for it.
    pub fn stderr_line(&self, n: usize) -> String {
        self.proc.stderr_line(n, WAIT_TIMEOUT)
    }

    /// `GET /?token=T` as a browser opens the printed address: the server answers 303 to `/`
    /// with the cookie; the cookie (`name=value`, for a `Cookie` header) and the whole
    /// `Set-Cookie` line. Fails the test if the server answers anything else.
    pub fn cookie(&self) -> (String, String) {
        let path = self.url.find("/?").map_or("/", |i| &self.url[i..]);
        let (status, headers, body) = request_raw(&self.addr, "GET", path, &[], "");
        assert_eq!(status, 303, "GET {path}: {headers:?} {body}");
        let set = headers
            .iter()
            .find_map(|h| {
                h.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("GET {path} set no cookie: {headers:?}"));
        let pair = set.split(';').next().unwrap_or_default().trim().to_owned();
        (pair, set)
    }

    /// The process id (to read `/proc/PID/status`).
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// The headers that carry the token, if the server has one.
    fn auth(&self) -> Vec<(&str, String)> {
        self.token
            .iter()
            .map(|t| ("Authorization", format!("Bearer {t}")))
            .collect()
    }

    /// `GET path`, with the token if any: the status and the body.
    pub fn get(&self, path: &str) -> (u16, Value) {
        let auth = self.auth();
        let h: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        request(&self.addr, "GET", path, &h, "")
    }

    /// `POST path` with a JSON body, with the token if any: the status and the body.
    pub fn post(&self, path: &str, body: &str) -> (u16, Value) {
        let auth = self.auth();
        let mut h: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        h.push(JSON);
        request(&self.addr, "POST", path, &h, body)
    }

    /// Subscribes to `/api/events`, with the token if any.
    pub fn events(&self) -> Events {
        let auth = self.auth();
        let h: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Events::subscribe(&self.addr, &h)
    }
}

/// The address `serve` printed in `text`: the URL as printed, `host:port`, and the `?token=`
/// of the URL, percent-decoded.
pub fn parse_address(text: &str) -> Option<(String, String, Option<String>)> {
    let url = text
        .split_whitespace()
        .find(|w| w.starts_with("http://"))?
        .to_owned();
    let rest = &url["http://".len()..];
    let addr = rest.split(['/', '?']).next().unwrap_or(rest).to_owned();
    let token = url.split_once('?').and_then(|(_, q)| {
        q.split('&').find_map(|kv| {
            kv.strip_prefix("token=")
                .map(|t| percent_decode_str(t).decode_utf8_lossy().into_owned())
        })
    });
    Some((url, addr, token))
}

/// The JSON content type header.
pub const JSON: (&str, &str) = ("Content-Type", "application/json");

/// `GET path` on `addr` (`host:port`), no other header: the status and the body.
pub fn get(addr: &str, path: &str) -> (u16, Value) {
    request(addr, "GET", path, &[], "")
}

/// `POST path` on `addr` with a JSON body (and its content type): the status and the body.
pub fn post(addr: &str, path: &str, body: &str) -> (u16, Value) {
    request(addr, "POST", path, &[JSON], body)
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    s.set_read_timeout(Some(HTTP_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(HTTP_TIMEOUT)))
        .expect("socket timeouts");
    s
}

/// One HTTP/1.1 request to `addr` (`host:port`), with `Host: addr` unless `headers` has a
/// `Host` of its own; the status and the body (parsed as JSON when it is, else a JSON string).
/// Fails the test past [`HTTP_TIMEOUT`].
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let (status, _, body) = request_raw(addr, method, path, headers, body);
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// [`request`], with the response's header lines and its body as text.
pub fn request_raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<String>, String) {
    let mut s = connect(addr);
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())
        .unwrap_or_else(|e| panic!("{method} {path}: cannot send: {e}"));
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{method} {path}: no complete answer: {e}"));
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status: u16 = raw
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: not an HTTP answer: {raw:?}"));
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let headers = head.lines().skip(1).map(str::to_owned).collect();
    (status, headers, body.to_owned())
}

/// An open `/api/events` stream (server-sent events).
#[derive(Debug)]
pub struct Events {
    reader: BufReader<TcpStream>,
}

/// One server-sent event: its name (`None` for an engine event) and its data, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// `Some("state")` for a state, `None` for an engine event.
    pub name: Option<String>,
    /// The data.
    pub data: Value,
}

impl Events {
    /// Subscribes to `addr`'s event stream with `headers`; fails the test unless it answers 200.
    pub fn subscribe(addr: &str, headers: &[(&str, &str)]) -> Events {
        let mut s = connect(addr);
        let mut req =
            format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes())
            .expect("the subscription is sent");
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("no answer to GET /api/events: {e}"));
        assert!(line.starts_with("HTTP/1.1 200"), "GET /api/events: {line}");
        Events { reader }
    }

    /// The next event; fails the test when the stream ends or nothing comes within
    /// [`HTTP_TIMEOUT`].
    pub fn next_event(&mut self) -> Event {
        let (mut name, mut data) = (None::<String>, None::<String>);
        let mut line = String::new();
        loop {
            line.clear();
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("the event stream ended"),
                Ok(_) => {}
                Err(e) => panic!("no event within {} s: {e}", HTTP_TIMEOUT.as_secs()),
            }
            let l = line.trim_end();
            if let Some(d) = l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")) {
                data = Some(d.to_owned());
            } else if let Some(e) = l.strip_prefix("event: ") {
                name = Some(e.to_owned());
            } else if l.is_empty() {
                // The end of an event (or of a chunk of the chunked response).
                if let Some(d) = data.take() {
                    let data = serde_json::from_str(&d)
                        .unwrap_or_else(|e| panic!("an event that is not JSON ({e}): {d}"));
                    return Event {
                        name: name.take(),
                        data,
                    };
                }
            }
        }
    }

    /// Reads until a `state` event with `"step": n`; the engine events (their `event` names)
    /// seen before it.
    pub fn wait_for_state(&mut self, n: u64) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let e = self.next_event();
            match e.name.as_deref() {
                Some("state") if e.data["step"] == n => return seen,
                Some("state") => {}
                _ => seen.push(e.data["event"].as_str().unwrap_or("").to_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_address;

    #[test]
    fn the_printed_address_gives_the_url_the_address_and_the_decoded_token() {
        let (url, addr, token) =
            parse_address("serving a.cm on http://127.0.0.1:4321/?token=a%2Bb%2F%3D%25%26c\n")
                .unwrap();
        assert_eq!(url, "http://127.0.0.1:4321/?token=a%2Bb%2F%3D%25%26c");
        assert_eq!(addr, "127.0.0.1:4321");
        assert_eq!(token.as_deref(), Some("a+b/=%&c"));
        let (_, addr, token) = parse_address("serving a.cm on http://127.0.0.1:80/").unwrap();
        assert_eq!((addr.as_str(), token), ("127.0.0.1:80", None));
        assert!(parse_address("no address").is_none());
    }
}
