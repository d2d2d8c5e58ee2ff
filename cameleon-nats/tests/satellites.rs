//! Satellites on a real NATS server (Debian's `nats-server`, started per test on a free
//! loopback port; a missing binary fails the test with the install command): remote firings,
//! faults, the idempotency cache, heartbeats, remote tools, the wire version.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use cameleon::prelude::*;
use cameleon::tools::{ToolCall, ToolGate, ToolRegistry, ToolStatus};
use cameleon::types::{DataJSON, TypedValue, Value};
use cameleon_nats::wire::{OpRequest, WireInput, WireState};
use cameleon_nats::{NatsOptions, NatsServer, Registry, Remote, Satellite, SatelliteConfig};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// Test operators and tools (linked into this binary: its in-process satellites host them)

/// Per tag: how many firings started, and how many ran to their end.
static STARTED: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);
static FINISHED: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

fn bump(map: &Mutex<HashMap<String, usize>>, tag: &str) -> usize {
    let mut m = map.lock().unwrap();
    let n = m.entry(tag.to_owned()).or_default();
    *n += 1;
    *n
}

fn count(map: &Mutex<HashMap<String, usize>>, tag: &str) -> usize {
    map.lock().unwrap().get(tag).copied().unwrap_or(0)
}

/// Adds one to its input, with a side effect counted per `tag`: its first firing under a tag
/// never ends when `hang_first` is set (the satellite running it is killed meanwhile); each
/// firing waits `ms` first.
#[operator(id = "st_effect", family = behavioral, exec = async)]
pub struct Effect {
    #[param(default = "")]
    tag: String,
    #[param(default = false)]
    hang_first: bool,
    #[param(default = 0)]
    ms: u64,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl RunAsync for Effect {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let n = bump(&STARTED, &self.tag);
        if self.hang_first && n == 1 {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        let v = cx.get(Self::in_data)?.0.as_i64().unwrap_or(0);
        bump(&FINISHED, &self.tag);
        cx.emit(Self::out_data, DataJSON(json!(v + 1)));
        Ok(())
    }
}

/// The arguments of `st_shout`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Shout {
    /// What to shout.
    pub text: String,
}

static SHOUTS: AtomicUsize = AtomicUsize::new(0);

/// Upper-cases `text` (no side effect: a `.cm` file's `allow:` lets it run).
#[tool(name = "st_shout", effects = none)]
fn shout(args: Shout) -> Result<String, ToolError> {
    SHOUTS.fetch_add(1, Ordering::SeqCst);
    Ok(args.text.to_uppercase())
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn server() -> NatsServer {
    NatsServer::start().unwrap_or_else(|e| panic!("{e}"))
}

async fn satellite(url: &str, name: &str, heartbeat_ms: u64) -> Satellite {
    let mut c = SatelliteConfig::new(name)
        .all_ops()
        .tools(["st_shout", "calc"]);
    c.heartbeat = Duration::from_millis(heartbeat_ms);
    Satellite::start(&NatsOptions::new(url), c)
        .await
        .unwrap_or_else(|e| panic!("satellite {name}: {e}"))
}

/// Loads `.cm` text, places its remote instances with `remote` (if any), runs it to its end
/// on a blocking thread.
async fn run_cm(text: &str, remote: Option<Remote>) -> (EndState, Cvm) {
    let text = text.to_owned();
    let run = tokio::task::spawn_blocking(move || {
        let mut net = cameleon::cm::Loader::new()
            .load_str(&text)
            .expect("a valid net");
        if let Some(r) = &remote {
            r.place(&mut net);
        }
        let mut cvm = Cvm::builder(net).build();
        let end = cvm.run().expect("the run ends");
        (end, cvm)
    });
    // A hang fails the test (the limit only turns it into a failure; nothing is timed).
    tokio::time::timeout(test_support::RUN_TIMEOUT, run)
        .await
        .expect("the run ends in time")
        .expect("the run's thread")
}

/// The history as (step, operator, emitted values) per firing: what a trace shows.
fn firings(cvm: &Cvm) -> Vec<(u32, String, Vec<serde_json::Value>)> {
    let net = cvm.net();
    let mut v = Vec::new();
    for e in cvm.history().entries() {
        for f in &e.firings {
            let values = f
                .written
                .iter()
                .filter_map(|(_, t)| cvm.token(*t).map(|t| t.value.to_json()))
                .collect();
            v.push((e.step, net.op(f.op).name.clone(), values));
        }
    }
    v
}

const COUNTER: &str = "\
cameleon: 1
name: count
operators:
  - id: zero
    type: const
    params:
      value: 0
  - id: loop
    type: merge
  - id: inc
    type: counter
    placement: remote
  - id: tap
    type: fork
  - id: check
    type: guard
    params:
      continue_if: {lt: 5}
    placement: remote
  - id: collect
    type: accumulator
    params:
      n: 5
    placement: remote
  - id: done
    type: sink
  - id: history
    type: sink
connections:
  - from: zero.out_data
    to: loop.in_a
  - from: check.out_continue
    to: loop.in_b
  - from: loop.out_data
    to: inc.in_data
  - from: inc.out_data
    to: tap.in_data
  - from: tap.out_a
    to: check.in_data
  - from: tap.out_b
    to: collect.in_data
  - from: check.out_exit
    to: done.in_data
  - from: collect.out_data
    to: history.in_data
";

fn effect_net(tag: &str, params: &str, settings: &str) -> String {
    format!(
        "\
cameleon: 1
name: effect
operators:
  - id: zero
    type: const
    params:
      value: 41
  - id: fx
    type: st_effect
    params:
      tag: {tag}
{params}
{settings}
    placement: remote
  - id: out
    type: sink
connections:
  - from: zero.out_data
    to: fx.in_data
  - from: fx.out_data
    to: out.in_data
"
    )
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread")]
async fn a_net_with_remote_stateful_operators_runs_as_it_does_locally() {
    let nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let (local_end, local) = run_cm(COUNTER, None).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let (end, cvm) = run_cm(COUNTER, Some(remote)).await;
    assert_eq!(local_end, EndState::Completed);
    assert_eq!(end, local_end);
    assert_eq!(firings(&cvm), firings(&local));
    assert_eq!(cvm.received("history")[0].to_json(), json!([1, 2, 3, 4, 5]));
    // inc 5 times, check 5 times, collect 5 times: all on the satellite.
    assert_eq!(a.executions(), 15);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_satellite_killed_mid_firing_is_replaced_and_the_effect_happens_once() {
    let nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let text = effect_net(
        "kill",
        "      hang_first: true",
        "    timeout_ms: 300\n    retry:\n      max: 2",
    );
    let run = tokio::spawn(async move { run_cm(&text, Some(remote)).await });
    // Rendezvous: the firing started on `a` (bounded wait).
    for _ in 0..1000 {
        if count(&STARTED, "kill") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(count(&STARTED, "kill"), 1, "the firing never reached `a`");
    a.kill().await;
    let b = satellite(&nats.url(), "b", 1000).await;
    let (end, cvm) = run.await.unwrap();
    assert_eq!(end, EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
    assert_eq!(count(&STARTED, "kill"), 2, "a second attempt ran on `b`");
    assert_eq!(count(&FINISHED, "kill"), 1, "the effect happened once");
    assert_eq!(b.executions(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_call_that_had_finished_is_answered_from_the_cache() {
    let nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let req = OpRequest {
        v: cameleon_nats::WIRE_VERSION,
        run: "run-1".into(),
        branch: 1,
        step: 2,
        instance: "fx".into(),
        key: "run-1/1/2/fx".into(),
        ty: "st_effect".into(),
        params: json!({"tag": "cache"}).as_object().unwrap().clone(),
        inputs: vec![WireInput {
            state: WireState::New,
            value: Some(TypedValue(Value::new(DataJSON(json!(1))))),
        }],
        outputs: vec![true],
        parallel: false,
        state: None,
        tools: None,
    };
    let limit = Duration::from_secs(10);
    let first = remote.fire(&req, limit).await.unwrap();
    let second = remote.fire(&req, limit).await.unwrap();
    assert!(first.ok && !first.cached);
    assert!(second.ok && second.cached, "{second:?}");
    assert_eq!(second.emitted[0].value.0.to_json(), json!(2));
    assert_eq!(count(&FINISHED, "cache"), 1);
    assert_eq!(a.executions(), 1);
    // Another key runs.
    let other = OpRequest {
        key: "run-1/2/2/fx".into(),
        ..req
    };
    assert!(!remote.fire(&other, limit).await.unwrap().cached);
    assert_eq!(count(&FINISHED, "cache"), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_firing_retried_while_its_first_attempt_runs_waits_for_it_instead_of_running_twice() {
    let nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    // The firing takes 400 ms; the instance times out after 100 and retries: the retries carry
    // the same key and are answered with the first attempt's result.
    let text = effect_net(
        "slow",
        "      ms: 400",
        "    timeout_ms: 100\n    retry:\n      max: 8\n      backoff_ms: 10",
    );
    let (end, cvm) = run_cm(&text, Some(remote)).await;
    assert_eq!(end, EndState::Completed, "{:?}", cvm.history());
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
    assert_eq!(count(&STARTED, "slow"), 1);
    assert_eq!(a.executions(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_satellite_for_a_type_is_an_error_naming_it() {
    let nats = server();
    // A satellite under another prefix (another tenant) does not count.
    let mut c = SatelliteConfig::new("other-tenant").all_ops();
    c.heartbeat = Duration::from_millis(1000);
    let _other = Satellite::start(&NatsOptions::new(nats.url()).prefix("tenant-b"), c)
        .await
        .unwrap();
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()).prefix("tenant-a"))
        .await
        .unwrap()
        .timeout(Duration::from_millis(200));
    let t0 = Instant::now();
    let (end, _) = run_cm(COUNTER, Some(remote)).await;
    let EndState::Error { op, error: message } = &end else {
        panic!("expected ERROR, got {end:?}");
    };
    assert_eq!(op, "inc");
    assert!(
        message.contains("no satellite hosts operator type `counter`")
            && message.contains("tenant-a.op.counter"),
        "{message}"
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "it waited its timeout"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_satellite_that_stops_heartbeating_leaves_within_three_heartbeats() {
    let nats = server();
    let hb = Duration::from_millis(50);
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let registry = Arc::new(Mutex::new(Registry::default()));
    let watch = remote.watch(Arc::clone(&registry)).await.unwrap();
    let a = satellite(&nats.url(), "a", 50).await;
    let b = satellite(&nats.url(), "b", 50).await;
    let seen_both = || {
        let r = registry.lock().unwrap();
        r.last_seen("a").is_some() && r.last_seen("b").is_some()
    };
    for _ in 0..1000 {
        if seen_both() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(seen_both());
    b.kill().await;
    // Let `b`'s last heartbeat arrive, then wait until `a` has been heard from 3 periods
    // after it.
    tokio::time::sleep(hb).await;
    let b_last = registry.lock().unwrap().last_seen("b").unwrap();
    for _ in 0..1000 {
        let a_last = registry.lock().unwrap().last_seen("a").unwrap();
        if a_last > b_last + hb * 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let names = |now: Instant| -> Vec<String> {
        registry
            .lock()
            .unwrap()
            .live_at(now)
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    // Two periods after its last heartbeat `b` still counts; three, and it is gone.
    assert_eq!(names(b_last + hb * 2), ["a", "b"]);
    assert_eq!(names(b_last + hb * 3), ["a"]);
    assert_eq!(names(Instant::now()), ["a"]);
    // The discovery of `satellites` lists the live one only.
    let listed: Vec<String> = remote
        .discover(Duration::from_millis(200))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, ["a"]);
    watch.abort();
    drop(a);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_tool_goes_through_the_gate_and_names_its_satellite() {
    let nats = server();
    let _a = satellite(&nats.url(), "tools-a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let manifests = remote
        .tool_manifests(Duration::from_millis(300))
        .await
        .unwrap();
    let shout = manifests
        .iter()
        .find(|m| m.name == "st_shout")
        .expect("st_shout advertised");
    // A tool's advertised effects are those it declares (`st_shout`: none) ...
    use cameleon::operator::capability::{Effect, ToolManifest};
    assert_eq!(shout.effects, Effect::None);
    // ... and a manifest that says none (an older satellite's) acts on the outside world.
    let silent: ToolManifest = serde_json::from_value(json!({
        "name": "old", "description": "", "input_schema": {}, "output_schema": {}
    }))
    .unwrap();
    assert_eq!(silent.effects, Effect::External);
    assert_eq!(
        manifests
            .iter()
            .find(|m| m.name == "calc")
            .map(|m| m.effects),
        Some(Effect::None)
    );
    // The caller has no local tools: every one comes from the satellite.
    let mut reg = ToolRegistry::new();
    for t in remote.remote_tools(manifests, &ToolRegistry::new()) {
        reg.insert(t).unwrap();
    }
    let gate = ToolGate::new(
        Arc::new(reg),
        Some(&cameleon::net::ToolPolicy::allow(["st_shout"])),
        ".",
    );
    let before = SHOUTS.load(Ordering::SeqCst);
    let r = gate
        .call(ToolCall::new("st_shout", json!({"text": "hi"})))
        .await;
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.content, json!("HI"));
    assert_eq!(r.meta.origin, "satellite:tools-a");
    assert_eq!(SHOUTS.load(Ordering::SeqCst), before + 1);
    // The run's policy applies before anything is sent: a denied call never runs.
    let denied = gate
        .call(ToolCall::new("calc", json!({"expr": "1 + 1"})))
        .await;
    assert_eq!(denied.status, ToolStatus::Denied);
    // Arguments are checked against the satellite's schema by the run's gate.
    let bad = gate
        .call(ToolCall::new("st_shout", json!({"txt": 1})))
        .await;
    assert_eq!(bad.status, ToolStatus::Error);
    assert_eq!(SHOUTS.load(Ordering::SeqCst), before + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_of_another_wire_version_is_refused_clearly() {
    let nats = server();
    let _a = satellite(&nats.url(), "a", 1000).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(cameleon_nats::wire::VERSION_HEADER, "2");
    let reply = client
        .request_with_headers("cameleon.op.counter", headers, "{}".into())
        .await
        .unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(reply["ok"], json!(false));
    assert_eq!(reply["kind"], json!("version"));
    assert!(
        reply["error"].as_str().unwrap().contains(
            "wire version mismatch: the request speaks version 2, this satellite version 1"
        ),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_graceful_shutdown_answers_the_calls_in_flight() {
    let nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let text = effect_net("graceful", "      ms: 200", "");
    let run = tokio::spawn(async move { run_cm(&text, Some(remote)).await });
    for _ in 0..1000 {
        if count(&STARTED, "graceful") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(count(&STARTED, "graceful"), 1);
    a.shutdown().await;
    assert_eq!(
        count(&FINISHED, "graceful"),
        1,
        "shutdown waited for the call"
    );
    let (end, cvm) = run.await.unwrap();
    assert_eq!(end, EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_nats_server_restarting_mid_firing_leaves_a_run_that_completes_without_running_twice() {
    let mut nats = server();
    let a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    // The firing takes 300 ms; its reply is lost with the server; the retries (same key) reach
    // the satellite once both have reconnected, and its cache answers.
    let text = effect_net(
        "restart",
        "      ms: 300",
        "    timeout_ms: 1000\n    retry:\n      max: 10\n      backoff_ms: 50",
    );
    let run = tokio::spawn(async move { run_cm(&text, Some(remote)).await });
    for _ in 0..1000 {
        if count(&STARTED, "restart") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(count(&STARTED, "restart"), 1);
    nats.restart().unwrap();
    let (end, cvm) = run.await.unwrap();
    assert_eq!(end, EndState::Completed, "{:?}", cvm.history());
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
    assert_eq!(count(&STARTED, "restart"), 1, "the firing ran once");
    assert_eq!(a.executions(), 1);
}

const TOOL_NET: &str = "\
cameleon: 1
name: tools
POLICY
operators:
  - id: args
    type: const
    params:
      value: {expr: 1 + 2}
  - id: sum
    type: tool
    params:
      name: calc
    placement: remote
  - id: out
    type: sink
connections:
  - from: args.out_data
    to: sum.in_args
  - from: sum.out_result
    to: out.in_data
";

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_firing_applies_the_tool_policy_sent_with_it() {
    let nats = server();
    let _a = satellite(&nats.url(), "a", 1000).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    let allowed = TOOL_NET.replace("POLICY", "tools:\n  allow: [calc]");
    let (end, cvm) = run_cm(&allowed, Some(remote.clone())).await;
    assert_eq!(end, EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!(3));
    // No `tools:` key: every tool denied, on the satellite too.
    let denied = TOOL_NET.replace("POLICY\n", "");
    let (end, _) = run_cm(&denied, Some(remote)).await;
    let EndState::Error { op, error } = &end else {
        panic!("expected ERROR, got {end:?}");
    };
    assert_eq!(op, "sum");
    assert!(error.contains("denied"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_passes_through_and_its_absence_is_a_clear_error() {
    let nats = NatsServer::start_with(&["--auth", "s3cret"]).unwrap_or_else(|e| panic!("{e}"));
    let mut with = NatsOptions::new(nats.url());
    with.token = Some("s3cret".into());
    let mut c = SatelliteConfig::new("secure").ops(["counter"]);
    c.heartbeat = Duration::from_millis(1000);
    let _a = Satellite::start(&with, c).await.unwrap();
    let remote = Remote::connect_async(&with).await.unwrap();
    let listed: Vec<String> = remote
        .discover(Duration::from_millis(200))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, ["secure"]);
    let e = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("cannot connect to NATS at `{}`", nats.url())),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_satellite_is_noticed_in_three_heartbeats_and_its_call_goes_to_a_live_one() {
    let nats = server();
    let hb = 100;
    let a = satellite(&nats.url(), "fo-a", hb).await;
    let b = satellite(&nats.url(), "fo-b", hb).await;
    let remote = Remote::connect_async(&NatsOptions::new(nats.url()))
        .await
        .unwrap();
    // Wait until the run has heard both: the failover needs a live one to go to.
    let r = remote.clone();
    tokio::time::timeout(test_support::WAIT_TIMEOUT, async move {
        while r.live().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both satellites heard");
    // No `retry:` and a long `timeout_ms`: only the heartbeats can save this firing.
    let text = effect_net(
        "failover",
        "      hang_first: true",
        "    timeout_ms: 600000",
    );
    let probe = remote.clone();
    let run = tokio::spawn(async move { run_cm(&text, Some(probe)).await });
    for _ in 0..1000 {
        if count(&STARTED, "failover") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(count(&STARTED, "failover"), 1, "the firing started");
    let (held, live) = if a.in_flight() == 1 { (a, b) } else { (b, a) };
    let lost = held.name().to_owned();
    held.kill().await;
    let (end, cvm) = run.await.unwrap();
    assert_eq!(end, EndState::Completed, "{:?}", cvm.history());
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
    assert_eq!(live.executions(), 1, "the live satellite ran it");
    let f = remote.failovers();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].from, lost);
    assert_eq!(f[0].to.as_deref(), Some(live.name()));
    // Counted in heartbeats: the lost one was silent 3 of its periods (never fewer), and the
    // run heard about 3 heartbeats of the live one meanwhile.
    assert!(f[0].silent >= f[0].period * 3, "{f:?}");
    assert!((2..=4).contains(&f[0].heartbeats_of_the_next), "{f:?}");
    eprintln!(
        "failover after {} ms of silence (heartbeat {} ms; limit 3 × heartbeat + 100 ms = {} ms)",
        f[0].silent.as_millis(),
        hb,
        3 * hb + 100
    );
}

/// How many `st_barrier` firings have started, and a signal when one starts.
static ARRIVED: AtomicUsize = AtomicUsize::new(0);
static ARRIVALS: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

/// Passes its input on once `n` firings of its type have started (on this process's
/// satellites): it ends only if they all run at the same time.
#[operator(id = "st_barrier", family = behavioral, exec = async)]
pub struct Barrier {
    #[param(default = 1)]
    n: u64,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl RunAsync for Barrier {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        ARRIVED.fetch_add(1, Ordering::SeqCst);
        ARRIVALS.notify_waiters();
        loop {
            let next = ARRIVALS.notified();
            if ARRIVED.load(Ordering::SeqCst) as u64 >= self.n {
                break;
            }
            next.await;
        }
        let v = cx.get(Self::in_data)?.0.clone();
        cx.emit(Self::out_data, DataJSON(v));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_remote_firings_of_a_parallel_step_are_sent_together() {
    let nats = server();
    let options = NatsOptions::new(nats.url());
    // Room for every firing of the step on the two satellites together.
    let mut sats = Vec::new();
    for name in ["wide-a", "wide-b"] {
        let mut c = SatelliteConfig::new(name).ops(["st_barrier"]);
        c.concurrency = 8;
        sats.push(Satellite::start(&options, c).await.unwrap());
    }
    let n = 8;
    let mut text = String::from("cameleon: 1\nname: wide\nconfig:\n  mode: parallel\noperators:\n");
    for i in 0..n {
        text += &format!(
            "  - id: c{i}\n    type: const\n    params:\n      value: {i}\n  - id: wait{i}\n    type: st_barrier\n    params:\n      n: {n}\n    placement: remote\n  - id: out{i}\n    type: sink\n"
        );
    }
    text += "connections:\n";
    for i in 0..n {
        text += &format!(
            "  - from: c{i}.out_data\n    to: wait{i}.in_data\n  - from: wait{i}.out_data\n    to: out{i}.in_data\n"
        );
    }
    let remote = Remote::connect_async(&options).await.unwrap();
    // Each firing ends only once all have started: a step that awaited a reply before sending
    // the next request would never end (its first firing waits for the others).
    let (end, cvm) = run_cm(&text, Some(remote)).await;
    assert_eq!(end, EndState::Completed);
    assert_eq!(ARRIVED.load(Ordering::SeqCst), n);
    let steps: Vec<u32> = firings(&cvm)
        .into_iter()
        .filter(|(_, op, _)| op.starts_with("wait"))
        .map(|(step, _, _)| step)
        .collect();
    assert_eq!(steps, vec![2; n], "one step fired them all");
    assert_eq!(cvm.received("out7")[0].to_json(), json!(7));
    let ran: u64 = sats.iter().map(Satellite::executions).sum();
    assert_eq!(ran, n as u64);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_inline_firing_answered_at_once_is_still_acknowledged_first() {
    use cameleon_nats::wire::{ACK_HEADER, OpReply, VERSION_HEADER, WANT_ACK_HEADER};
    use futures_util::StreamExt;
    let nats = server();
    let a = satellite(&nats.url(), "ack-a", 1000).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    // `counter` runs inline: the satellite answers it on the loop that takes it.
    let req = OpRequest {
        v: cameleon_nats::WIRE_VERSION,
        run: "run-ack".into(),
        branch: 1,
        step: 1,
        instance: "inc".into(),
        key: "run-ack/1/1/inc".into(),
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
    };
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(VERSION_HEADER, "1");
    headers.insert(WANT_ACK_HEADER, "1");
    client
        .publish_with_reply_and_headers(
            "cameleon.op.counter",
            inbox,
            headers,
            serde_json::to_vec(&req).unwrap().into(),
        )
        .await
        .unwrap();
    let ack = replies.next().await.unwrap();
    let acker = ack.headers.as_ref().and_then(|h| h.get(ACK_HEADER));
    assert_eq!(acker.map(|v| v.as_str()), Some("ack-a"), "{ack:?}");
    assert!(ack.payload.is_empty());
    let reply = replies.next().await.unwrap();
    let reply: OpReply = serde_json::from_slice(&reply.payload).unwrap();
    assert!(reply.ok && reply.satellite == "ack-a", "{reply:?}");
    assert_eq!(a.executions(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_hears_of_the_calls_held_and_gets_an_inline_answer_alone() {
    use cameleon_nats::wire::{ACK_HEADER, ACK_HELD, OpReply, VERSION_HEADER, WANT_ACK_HEADER};
    use futures_util::StreamExt;
    let nats = server();
    let a = satellite(&nats.url(), "held-a", 1000).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(format!("{inbox}.*")).await.unwrap();
    let request = |ty: &str, params: serde_json::Value, n: u32| OpRequest {
        v: cameleon_nats::WIRE_VERSION,
        run: "run-held".into(),
        branch: 1,
        step: n,
        instance: "x".into(),
        key: format!("run-held/1/{n}/x"),
        ty: ty.into(),
        params: params.as_object().cloned().unwrap_or_default(),
        inputs: vec![WireInput {
            state: WireState::New,
            value: Some(TypedValue(Value::new(DataJSON(json!(1))))),
        }],
        outputs: vec![true],
        parallel: false,
        state: None,
        tools: None,
    };
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(VERSION_HEADER, "1");
    headers.insert(WANT_ACK_HEADER, ACK_HELD);
    // `counter` runs inline, answered at once: the reply alone, naming the satellite.
    let send = |subject: &str, reply: String, req: OpRequest| {
        client.publish_with_reply_and_headers(
            subject.to_owned(),
            reply,
            headers.clone(),
            serde_json::to_vec(&req).unwrap().into(),
        )
    };
    send(
        "cameleon.op.counter",
        format!("{inbox}.1"),
        request("counter", json!({}), 1),
    )
    .await
    .unwrap();
    let first = replies.next().await.unwrap();
    assert!(
        first
            .headers
            .as_ref()
            .and_then(|h| h.get(ACK_HEADER))
            .is_none(),
        "no acknowledgement: {first:?}"
    );
    let reply: OpReply = serde_json::from_slice(&first.payload).unwrap();
    assert!(reply.ok && reply.satellite == "held-a", "{reply:?}");
    assert_eq!(reply.emitted[0].value.0.to_json(), json!(2));
    // `delay` runs on a task: held, so acknowledged first, then answered.
    send(
        "cameleon.op.delay",
        format!("{inbox}.2"),
        request("delay", json!({"ms": 1}), 2),
    )
    .await
    .unwrap();
    let ack = replies.next().await.unwrap();
    assert_eq!(ack.subject.as_str(), format!("{inbox}.2"));
    let acker = ack.headers.as_ref().and_then(|h| h.get(ACK_HEADER));
    assert_eq!(acker.map(|v| v.as_str()), Some("held-a"), "{ack:?}");
    let reply: OpReply = serde_json::from_slice(&replies.next().await.unwrap().payload).unwrap();
    assert!(reply.ok && reply.satellite == "held-a", "{reply:?}");
    assert_eq!(a.executions(), 2);
}
