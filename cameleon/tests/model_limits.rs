//! A model endpoint cannot make the client read without end or send a request elsewhere: an
//! answer past `max_response_bytes` fails the call naming it, an error's body is read up to
//! 64 KiB, and a redirect to another origin is never followed (the request and its key stay
//! with the host `base_url` names).

use cameleon::models::{OpenAiChat, OpenAiConfig};
use cameleon::operator::capability::{ChatModel, ChatRequest};
use cameleon::runtime::block_on;
use test_support::openai::{Reply, Server};

fn chat(server: &Server, edit: impl FnOnce(&mut OpenAiConfig)) -> OpenAiChat {
    let mut c = OpenAiConfig::new(server.base_url(), "test-model");
    c.backoff_ms = 1;
    c.max_retries = 0;
    c.timeout_ms = 30_000;
    edit(&mut c);
    OpenAiChat::new(&c, "chat model `default`").expect("valid settings")
}

#[test]
fn an_answer_past_max_response_bytes_fails_naming_it() {
    let server = Server::start();
    let long = "x".repeat(4000);
    server.always(Reply::chat(&long));
    let model = chat(&server, |c| c.max_response_bytes = 1000);
    let e = block_on(model.chat(&ChatRequest::prompt("hi"))).unwrap_err();
    assert!(e.message.contains("larger than 1000 bytes"), "{e}");
    assert!(e.message.contains("max_response_bytes"), "{e}");
    // Within the limit, the same answer is read.
    let model = chat(&server, |c| c.max_response_bytes = 100_000);
    let r = block_on(model.chat(&ChatRequest::prompt("hi"))).unwrap();
    assert_eq!(r.text, long);
    // The default: 32 MiB.
    assert_eq!(
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").max_response_bytes,
        32 * 1024 * 1024
    );
}

/// A server on 127.0.0.1 answering one request with a 400 that announces 10 GB and sends
/// `E`s until the client hangs up or `limit` bytes are out; the bytes it sent come back through
/// the handle.
fn endless_error(limit: usize) -> (String, std::thread::JoinHandle<usize>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        // The request's head, then its body (by its Content-Length).
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        std::io::Read::read_exact(&mut reader, &mut body).unwrap();
        let mut out = stream;
        // A client that neither reads nor hangs up fails the write instead of hanging the test.
        out.set_write_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let head = "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 10000000000\r\n\r\n";
        out.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b'E'; 64 * 1024];
        let mut sent = 0;
        while sent < limit && out.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
        sent
    });
    (url, handle)
}

#[test]
fn an_error_body_is_read_up_to_64_kib() {
    let limit = 256 * 1024 * 1024;
    let (url, server) = endless_error(limit);
    let mut c = OpenAiConfig::new(url, "test-model");
    c.max_retries = 0;
    c.timeout_ms = 60_000;
    let model = OpenAiChat::new(&c, "chat model `default`").unwrap();
    let e = block_on(model.chat(&ChatRequest::prompt("hi"))).unwrap_err();
    assert!(e.message.contains("answered 400"), "{}", e.message);
    drop(model);
    let sent = server.join().unwrap();
    assert!(
        sent < 64 * 1024 * 1024,
        "the client read on: the server sent {sent} bytes before it hung up"
    );
}

#[test]
fn a_redirect_to_another_origin_is_not_followed() {
    let target = Server::start();
    target.always(Reply::chat("followed"));
    let server = Server::start();
    let elsewhere = format!("{}/chat/completions", target.base_url());
    server.always(Reply::raw(307, "").header("location", elsewhere.clone()));
    let model = chat(&server, |_| {});
    let e = block_on(model.chat(&ChatRequest::prompt("hi"))).unwrap_err();
    assert_eq!(server.count(), 1);
    assert_eq!(target.count(), 0, "nothing was sent to the other origin");
    assert!(e.message.contains("307"), "{e}");
    assert!(e.message.contains(&elsewhere), "{e}");
    assert!(e.message.contains("another origin"), "{e}");
}
