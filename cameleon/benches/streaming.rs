//! Streaming: the cost of one piece of partial output from an operator to a watcher of
//! `Cvm::events()` (a firing showing 1 000 pieces, minus one showing none, per piece), and the
//! time from a streaming server writing the first piece of an answer to the engine's
//! `Event::Partial` reaching the watcher (a local server on 127.0.0.1 writing server-sent
//! events; TCP loopback, reqwest, the SSE reader and two channel hops included).
//!
//! `cargo bench -p cameleon --bench streaming -- --warm-up-time 1 --measurement-time 5`

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use cameleon::Event;
use cameleon::capabilities::{CodeSource, Runtime};
use cameleon::models::{OpenAiChat, OpenAiConfig};
use cameleon::ops::{Llm, Sink, Source};
use cameleon::prelude::*;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

/// Shows `pieces` pieces of output, then emits nothing.
#[operator(id = "bench_chatty", label = "Chatty", family = behavioral)]
#[derive(Clone, Debug, Default)]
struct Chatty {
    #[param]
    pieces: u32,
    #[input]
    in_data: In<DataString>,
}

impl Run for Chatty {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        for _ in 0..self.pieces {
            cx.partial("token ");
        }
        Ok(())
    }
}

fn chatty(pieces: u32) -> Cvm {
    let mut b = Net::builder("chatty");
    b.add("src", Source::new("x"));
    b.add("talk", Chatty { pieces });
    b.connect("src.out_data", "talk.in_data");
    Cvm::new(b.build().expect("a valid net"))
}

fn per_piece(c: &mut Criterion) {
    let mut g = c.benchmark_group("partial");
    for pieces in [0u32, 1000] {
        g.bench_function(format!("firing_with_{pieces}_pieces_watched"), |b| {
            b.iter_batched(
                || {
                    let mut cvm = chatty(pieces);
                    let rx = cvm.events();
                    (cvm, rx)
                },
                |(mut cvm, rx)| {
                    cvm.run().expect("runs");
                    drop(rx);
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.bench_function("firing_with_1000_pieces_unwatched", |b| {
        b.iter_batched(
            || chatty(1000),
            |mut cvm| cvm.run().expect("runs"),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A server answering every request with server-sent events: the first piece, written at an
/// instant it reports on `written`, then the end.
fn sse_server(written: mpsc::Sender<Instant>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            // The request: headers, then its Content-Length body.
            loop {
                let n = sock.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let _ = sock.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
            );
            let _ = written.send(Instant::now());
            let _ = sock.write_all(
                b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n",
            );
            let _ = sock.write_all(b"data: [DONE]\n\n");
        }
    });
    format!("http://{addr}/v1")
}

fn first_piece(c: &mut Criterion) {
    let (tx, written) = mpsc::channel();
    let base = sse_server(tx);
    let mut cfg = OpenAiConfig::new(base, "m");
    cfg.max_retries = 0;
    let model = Arc::new(OpenAiChat::new(&cfg, "chat model `m`").expect("valid settings"));
    let rt = Runtime::builder()
        .source(CodeSource::new("bench", move |b| {
            b.chat("m", model.clone());
            Ok(())
        }))
        .build()
        .expect("capabilities");
    let net = || {
        let mut b = Net::builder("ask");
        b.add("q", Source::new("hi"));
        b.add("ask", Llm::new().model("m"));
        b.add("out", Sink::new());
        b.connect("q.out_data", "ask.in_prompt")
            .connect("ask.out_text", "out.in_data");
        b.build().expect("a valid net")
    };
    c.bench_function("partial/first_piece_from_server_to_event", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut cvm = rt.cvm(net(), ".").build();
                let seen: Arc<Mutex<Option<Instant>>> = Arc::default();
                let at = seen.clone();
                cvm.on_partial(move |e| {
                    if matches!(e, Event::Partial { .. }) {
                        at.lock().unwrap().get_or_insert_with(Instant::now);
                    }
                });
                cvm.run().expect("runs");
                let t0 = written.recv().expect("the server wrote");
                let t1 = seen.lock().unwrap().expect("a partial event");
                total += t1.saturating_duration_since(t0);
            }
            total
        })
    });
}

criterion_group!(benches, per_piece, first_piece);
criterion_main!(benches);
