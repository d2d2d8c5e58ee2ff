//! A satellite's trust boundary, on a real NATS server: it hosts only what it is told, its
//! hosting list bounds a request's tool policy, its intake is bounded (`busy`, `timeout`,
//! `bad_request`), and NATS's own authorization — the configuration docs/wire.md gives — keeps
//! a client without the right permissions from getting any call answered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_nats::client::RequestErrorKind;
use cameleon::prelude::*;
use cameleon::types::{DataJSON, TypedValue, Value};
use cameleon_nats::wire::{ErrorKind, OpReply, OpRequest, WireInput, WirePolicy, WireState};
use cameleon_nats::{NatsOptions, NatsServer, Remote, Satellite, SatelliteConfig};
use serde_json::json;
use test_support::{TempDir, WAIT_TIMEOUT, wait_until};

// ---------------------------------------------------------------------------------------------
// A test operator the test releases: it counts its starts, then waits for a permit.

static STARTED: AtomicUsize = AtomicUsize::new(0);
static RELEASE: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| tokio::sync::Semaphore::new(0));

/// Passes its input on once the test releases it.
#[operator(id = "tr_hold", family = behavioral, exec = async)]
pub struct Hold {
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl RunAsync for Hold {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        STARTED.fetch_add(1, Ordering::SeqCst);
        RELEASE
            .acquire()
            .await
            .map_err(|e| OpError::new(e.to_string()))?
            .forget();
        let v = cx.get(Self::in_data)?.0.clone();
        cx.emit(Self::out_data, DataJSON(v));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn server() -> NatsServer {
    NatsServer::start().unwrap_or_else(|e| panic!("{e}"))
}

async fn start(url: &str, config: SatelliteConfig) -> Satellite {
    Satellite::start(&NatsOptions::new(url), config)
        .await
        .unwrap_or_else(|e| panic!("the satellite starts: {e}"))
}

/// A firing request of `ty` with `params`, one input holding `input`, under `key`.
fn request(ty: &str, params: serde_json::Value, input: serde_json::Value, key: &str) -> OpRequest {
    OpRequest {
        v: cameleon_nats::WIRE_VERSION,
        run: "run-t".into(),
        branch: 1,
        step: 1,
        instance: "x".into(),
        key: key.into(),
        ty: ty.into(),
        params: params.as_object().cloned().unwrap_or_default(),
        inputs: vec![WireInput {
            state: WireState::New,
            value: Some(TypedValue(Value::new(DataJSON(input)))),
        }],
        outputs: vec![true, false],
        parallel: false,
        state: None,
        tools: None,
    }
}

/// Sends `body` on `subject` as a bare client would, and reads the firing reply.
async fn ask(client: &async_nats::Client, subject: &str, body: Vec<u8>) -> OpReply {
    let m = tokio::time::timeout(
        WAIT_TIMEOUT,
        client.request(subject.to_owned(), body.into()),
    )
    .await
    .expect("an answer in time")
    .unwrap_or_else(|e| panic!("a reply on `{subject}`: {e}"));
    serde_json::from_slice(&m.payload).expect("a firing reply")
}

// ---------------------------------------------------------------------------------------------
// What a satellite hosts

#[tokio::test(flavor = "multi_thread")]
async fn a_bare_client_cannot_write_or_read_files_through_a_satellite_not_told_to_host_them() {
    let nats = server();
    let sat = start(
        &nats.url(),
        SatelliteConfig::new("plain").all_ops().tools(["calc"]),
    )
    .await;
    assert!(sat.ops().contains(&"counter".to_owned()));
    assert!(
        !sat.ops().contains(&"text_file".to_owned()),
        "no base: no file reader"
    );
    assert_eq!(sat.tools(), ["calc"]);
    let client = async_nats::connect(nats.url()).await.unwrap();
    // The attacks: nobody listens on these subjects.
    for (subject, body) in [
        (
            "cameleon.tool.write_file",
            json!({"v": 1, "tool": "write_file", "args": {"path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA attacker"}}),
        ),
        (
            "cameleon.op.text_file",
            serde_json::to_value(request(
                "text_file",
                json!({"path": "secret.txt"}),
                json!(null),
                "k/1/1/x",
            ))
            .unwrap(),
        ),
    ] {
        let e = client
            .request(subject, serde_json::to_vec(&body).unwrap().into())
            .await
            .expect_err("nobody may answer");
        assert_eq!(e.kind(), RequestErrorKind::NoResponders, "{subject}: {e}");
    }
    assert_eq!(sat.executions(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_requests_tool_policy_narrows_the_hosting_list_and_never_widens_it() {
    let nats = server();
    let dir = TempDir::new("sat-policy");
    let _sat = start(
        &nats.url(),
        SatelliteConfig::new("narrow")
            .ops(["tool"])
            .tools(["calc"])
            .base(dir.path()),
    )
    .await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    // The request allows `write_file`; the satellite does not host it: denied, nothing written.
    let mut req = request(
        "tool",
        json!({"name": "write_file"}),
        json!({"path": "pwned.txt", "content": "x"}),
        "k/1/1/w",
    );
    req.tools = Some(WirePolicy {
        allow: vec!["write_file".into(), "calc".into()],
        approve: vec![],
    });
    let r = ask(
        &client,
        "cameleon.op.tool",
        serde_json::to_vec(&req).unwrap(),
    )
    .await;
    assert!(!r.ok, "{r:?}");
    let why = r.error.unwrap_or_default();
    assert!(why.contains("satellite `narrow` does not host it"), "{why}");
    assert!(!dir.join("pwned.txt").exists());
    // A hosted tool the request allows runs.
    let mut calc = request(
        "tool",
        json!({"name": "calc"}),
        json!({"expr": "6 * 7"}),
        "k/1/1/c",
    );
    calc.tools = req.tools.clone();
    let r = ask(
        &client,
        "cameleon.op.tool",
        serde_json::to_vec(&calc).unwrap(),
    )
    .await;
    assert!(r.ok, "{r:?}");
    assert_eq!(r.emitted[0].value.0.to_json(), json!(42));
    // A hosted tool the request does not allow is denied: the request narrows.
    calc.key = "k/1/2/c".into();
    calc.tools = Some(WirePolicy::default());
    let r = ask(
        &client,
        "cameleon.op.tool",
        serde_json::to_vec(&calc).unwrap(),
    )
    .await;
    assert!(!r.ok && r.error.unwrap_or_default().contains("denied"));
}

// ---------------------------------------------------------------------------------------------
// Bounded intake

#[tokio::test(flavor = "multi_thread")]
async fn at_its_limit_a_satellite_answers_busy_at_once_and_a_run_sends_the_call_again() {
    let nats = server();
    let mut c = SatelliteConfig::new("one").ops(["tr_hold", "counter"]);
    c.concurrency = 1;
    let sat = start(&nats.url(), c).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let before = STARTED.load(Ordering::SeqCst);
    let held = request("tr_hold", json!({}), json!(7), "k/1/1/held");
    let first = {
        let client = client.clone();
        let body = serde_json::to_vec(&held).unwrap();
        tokio::spawn(async move { ask(&client, "cameleon.op.tr_hold", body).await })
    };
    wait_until("the first call runs", WAIT_TIMEOUT, || {
        STARTED.load(Ordering::SeqCst) == before + 1
    });
    assert_eq!(sat.in_flight(), 1);
    // Another call, while the only place is taken: `busy`, at once, and nothing ran.
    let other = request("counter", json!({}), json!(1), "k/1/1/other");
    let r = ask(
        &client,
        "cameleon.op.counter",
        serde_json::to_vec(&other).unwrap(),
    )
    .await;
    assert_eq!(r.kind, Some(ErrorKind::Busy), "{r:?}");
    assert!(
        r.error
            .unwrap_or_default()
            .contains("satellite `one` is busy")
    );
    assert_eq!(sat.executions(), 1);
    // A run's call sent meanwhile is sent again until the place is free: busy is not a
    // failure.
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let again = tokio::spawn(async move { remote.fire(&other, WAIT_TIMEOUT).await });
    RELEASE.add_permits(1);
    let r = first.await.unwrap();
    assert!(r.ok, "{r:?}");
    let r = again.await.unwrap().expect("the re-sent call is answered");
    assert!(r.ok && r.emitted[0].value.0.to_json() == json!(2), "{r:?}");
    assert_eq!(sat.executions(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn four_huge_delays_no_longer_wedge_a_satellite() {
    let nats = server();
    let mut c = SatelliteConfig::new("ceiling").ops(["delay", "counter"]);
    c.concurrency = 4;
    c.max_call = Some(Duration::from_millis(200));
    let sat = Arc::new(start(&nats.url(), c).await);
    let client = async_nats::connect(nats.url()).await.unwrap();
    let huge: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            let body = serde_json::to_vec(&request(
                "delay",
                json!({"ms": 1_000_000_000u64}),
                json!(i),
                &format!("k/1/1/d{i}"),
            ))
            .unwrap();
            tokio::spawn(async move { ask(&client, "cameleon.op.delay", body).await })
        })
        .collect();
    let s = Arc::clone(&sat);
    wait_until("the four delays run", WAIT_TIMEOUT, move || {
        s.in_flight() == 4
    });
    let count =
        |key: &str| serde_json::to_vec(&request("counter", json!({}), json!(1), key)).unwrap();
    let r = ask(&client, "cameleon.op.counter", count("k/1/1/c1")).await;
    assert_eq!(
        r.kind,
        Some(ErrorKind::Busy),
        "a fifth call is told at once: {r:?}"
    );
    for h in huge {
        let r = h.await.unwrap();
        assert_eq!(r.kind, Some(ErrorKind::Timeout), "{r:?}");
        assert!(
            r.error
                .unwrap_or_default()
                .contains("abandoned the firing of `x` (delay) after 200 ms"),
        );
    }
    assert_eq!(sat.in_flight(), 0, "the abandoned calls left their places");
    let r = ask(&client, "cameleon.op.counter", count("k/1/1/c2")).await;
    assert!(r.ok, "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_over_the_size_limit_is_a_bad_request_and_runs_nothing() {
    let nats = server();
    let mut c = SatelliteConfig::new("small").ops(["counter"]);
    c.max_request_bytes = 512;
    let sat = start(&nats.url(), c).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let mut req = request("counter", json!({}), json!(1), "k/1/1/big");
    req.run = "r".repeat(1000);
    let r = ask(
        &client,
        "cameleon.op.counter",
        serde_json::to_vec(&req).unwrap(),
    )
    .await;
    assert_eq!(r.kind, Some(ErrorKind::BadRequest), "{r:?}");
    assert!(r.error.unwrap_or_default().contains("at most 512 bytes"));
    assert_eq!(sat.executions(), 0);
    req.run = "r".into();
    assert!(
        ask(
            &client,
            "cameleon.op.counter",
            serde_json::to_vec(&req).unwrap()
        )
        .await
        .ok
    );
}

// ---------------------------------------------------------------------------------------------
// NATS's own authorization

/// The `nats-server.conf` docs/wire.md gives, passwords filled in.
fn documented_conf() -> String {
    let doc = std::fs::read_to_string(test_support::root().join("docs/wire.md")).unwrap();
    let start = doc
        .find("```conf\n")
        .expect("docs/wire.md gives a nats-server.conf in a ```conf block")
        + "```conf\n".len();
    let end = start + doc[start..].find("```").expect("the block ends");
    doc[start..end]
        .replace("$RUN_PASSWORD", "run-pw")
        .replace("$SATELLITE_PASSWORD", "sat-pw")
        .replace("$WATCHER_PASSWORD", "watch-pw")
}

/// A client that records the server's errors (a permissions violation is one).
async fn client_seeing_errors(
    url: String,
    user: &str,
    password: &str,
) -> (async_nats::Client, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let client = async_nats::ConnectOptions::new()
        .user_and_password(user.to_owned(), password.to_owned())
        .event_callback(move |e| {
            let s = Arc::clone(&s);
            async move {
                if let async_nats::Event::ServerError(e) = e {
                    s.lock().unwrap().push(e.to_string());
                }
            }
        })
        .connect(url)
        .await
        .unwrap();
    (client, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_documented_server_configuration_only_a_run_gets_calls_answered() {
    let dir = TempDir::new("sat-auth");
    let conf = dir.join("nats-server.conf");
    std::fs::write(&conf, documented_conf()).unwrap();
    let nats =
        NatsServer::start_with(&["-c", conf.to_str().unwrap()]).unwrap_or_else(|e| panic!("{e}"));
    let port = nats.url().rsplit(':').next().unwrap().to_owned();
    let as_user = |u: &str, p: &str| format!("nats://{u}:{p}@127.0.0.1:{port}");
    // Without credentials nobody connects.
    let e = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("cannot connect to NATS"), "{e}");
    let mut c = SatelliteConfig::new("guarded").ops(["counter"]);
    c.heartbeat = Duration::from_millis(100);
    let sat = Satellite::start(&NatsOptions::new(as_user("satellite", "sat-pw")), c)
        .await
        .unwrap_or_else(|e| panic!("the satellite connects with its password: {e}"));
    // A run's user gets its call answered, and sees the satellite.
    let remote = Remote::connect_async(&NatsOptions::new(as_user("run", "run-pw")))
        .await
        .unwrap();
    let req = request("counter", json!({}), json!(1), "k/1/1/run");
    let r = remote.fire(&req, WAIT_TIMEOUT).await.unwrap();
    assert!(r.ok, "{r:?}");
    assert_eq!(sat.executions(), 1);
    let names: Vec<String> = remote
        .discover(Duration::from_millis(300))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["guarded"]);
    // A watcher may list satellites, and a satellite's user may take calls, but neither may
    // call: the server refuses the publish and the satellite never sees it.
    for (user, pw) in [("watcher", "watch-pw"), ("satellite", "sat-pw")] {
        let (client, errors) = client_seeing_errors(nats.url(), user, pw).await;
        let body = serde_json::to_vec(&request(
            "counter",
            json!({}),
            json!(1),
            &format!("k/{user}"),
        ))
        .unwrap();
        client
            .publish_with_reply("cameleon.op.counter", "cameleon.heartbeat.x", body.into())
            .await
            .unwrap();
        client.flush().await.unwrap();
        let refused = || {
            errors.lock().unwrap().iter().any(|e| {
                e.to_lowercase()
                    .contains("permissions violation for publish")
                    && e.contains("cameleon.op.counter")
            })
        };
        tokio::time::timeout(WAIT_TIMEOUT, async {
            while !refused() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the server refuses {user}'s call: {:?}",
                errors.lock().unwrap()
            )
        });
    }
    // The run's own call after them is answered: the refused ones never reached the satellite.
    let after = request("counter", json!({}), json!(5), "k/1/2/run");
    assert!(remote.fire(&after, WAIT_TIMEOUT).await.unwrap().ok);
    assert_eq!(sat.executions(), 2);
}
