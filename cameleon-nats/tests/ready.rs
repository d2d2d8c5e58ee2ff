//! A satellite is ready when `Satellite::start` returns: a call sent then, from another
//! connection, finds it. Writing its subscriptions out is not enough — the NATS server reads
//! each connection on its own, and another client's call can overtake them — so `start` waits
//! for the server to confirm them (docs/wire.md, "Ready").
//!
//! The race is made certain here: the satellite reaches the server through a proxy that holds
//! what the satellite sends after its handshake, until the test releases it.

use std::sync::{Arc, Mutex};

use async_nats::client::RequestErrorKind;
use cameleon::types::{DataJSON, TypedValue, Value};
use cameleon_nats::wire::{OpReply, OpRequest, WireInput, WireState};
use cameleon_nats::{NatsOptions, NatsServer, Satellite, SatelliteConfig};
use serde_json::json;
use test_support::{WAIT_TIMEOUT, wait_until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TCP proxy for one client: server to client freely; client to server freely until the
/// client's handshake (`CONNECT`, `PING`) has passed, then held until [`Proxy::release`].
struct Proxy {
    port: u16,
    /// What the client sent after its handshake and the proxy holds.
    held: Arc<Mutex<Vec<u8>>>,
    release: Arc<tokio::sync::Notify>,
}

impl Proxy {
    async fn start(server_url: &str) -> Proxy {
        let target = server_url.trim_start_matches("nats://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let held: Arc<Mutex<Vec<u8>>> = Arc::default();
        let release = Arc::new(tokio::sync::Notify::new());
        let (h, r) = (Arc::clone(&held), Arc::clone(&release));
        tokio::spawn(async move {
            let (client, _) = listener.accept().await.unwrap();
            let server = TcpStream::connect(target).await.unwrap();
            let (mut client_rd, mut client_wr) = client.into_split();
            let (mut server_rd, mut server_wr) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut server_rd, &mut client_wr).await;
            });
            // Up to and with the handshake's PING: forwarded.
            let mut seen = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            let after = loop {
                let n = client_rd.read(&mut buf).await.unwrap();
                assert!(n > 0, "the client left during its handshake");
                seen.extend_from_slice(&buf[..n]);
                if let Some(at) = find(&seen, b"PING\r\n") {
                    let end = at + 6;
                    server_wr.write_all(&seen[..end]).await.unwrap();
                    break seen[end..].to_vec();
                }
            };
            // Then held until released.
            h.lock().unwrap().extend_from_slice(&after);
            let released = r.notified();
            tokio::pin!(released);
            loop {
                tokio::select! {
                    () = &mut released => break,
                    n = client_rd.read(&mut buf) => {
                        let n = n.unwrap();
                        if n == 0 {
                            return;
                        }
                        h.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                }
            }
            let pending = std::mem::take(&mut *h.lock().unwrap());
            server_wr.write_all(&pending).await.unwrap();
            let _ = tokio::io::copy(&mut client_rd, &mut server_wr).await;
        });
        Proxy {
            port,
            held,
            release,
        }
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Whether what the proxy holds contains `text`.
    fn holds(&self, text: &str) -> bool {
        find(&self.held.lock().unwrap(), text.as_bytes()).is_some()
    }

    fn release(&self) {
        self.release.notify_one();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn counter_request() -> OpRequest {
    OpRequest {
        v: cameleon_nats::WIRE_VERSION,
        run: "run-ready".into(),
        branch: 1,
        step: 1,
        instance: "inc".into(),
        key: "run-ready/1/1/inc".into(),
        ty: "counter".into(),
        params: serde_json::Map::new(),
        inputs: vec![WireInput {
            state: WireState::New,
            value: Some(TypedValue(Value::new(DataJSON(json!(1))))),
        }],
        outputs: vec![true],
        parallel: false,
        state: None,
        tools: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_sent_as_soon_as_start_returns_finds_the_satellite() {
    let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let proxy = Proxy::start(&nats.url()).await;
    // The caller: a bare client on the server itself, as another program would be.
    let caller = async_nats::connect(nats.url()).await.unwrap();
    let body = serde_json::to_vec(&counter_request()).unwrap();
    let options = NatsOptions::new(proxy.url());
    let started = tokio::spawn(async move {
        let sat = Satellite::start(&options, SatelliteConfig::new("early").ops(["counter"]))
            .await
            .unwrap();
        // At once, from the other connection.
        let answer = caller.request("cameleon.op.counter", body.into()).await;
        (sat, answer)
    });
    // The satellite's subscriptions are held in the proxy. Released once it has asked the
    // server to confirm them (its probe, docs/wire.md "Ready") — or once the call was made
    // without that, which then cannot find it.
    wait_until(
        "the satellite asks the server to confirm its subscriptions, or the call is made",
        WAIT_TIMEOUT,
        || proxy.holds("cameleon.heartbeat.early.ready") || started.is_finished(),
    );
    assert!(proxy.holds("SUB cameleon.op.counter"), "subscribed first");
    proxy.release();
    let (sat, answer) = started.await.unwrap();
    let m = match answer {
        Ok(m) => m,
        Err(e) if e.kind() == RequestErrorKind::NoResponders => {
            panic!("the call sent once `start` returned found no satellite: {e}")
        }
        Err(e) => panic!("the call failed: {e}"),
    };
    let reply: OpReply = serde_json::from_slice(&m.payload).unwrap();
    assert!(reply.ok && reply.satellite == "early", "{reply:?}");
    assert_eq!(reply.emitted[0].value.0.to_json(), json!(2), "1 + 1");
    assert_eq!(sat.executions(), 1);
}
