//! A satellite *process* killed with SIGKILL in three phases of a call — before its effect,
//! after its effect but before its reply, after its reply — while a second satellite is already
//! running. Each time the run completes with the firings of a local run; the effect (the
//! idempotency key appended to a file) happens once, at most twice with the same key (the
//! documented at-least-once case), and once; the failover is counted in heartbeats.
//!
//! The satellites are this test binary itself, started as `satellite_process` (ignored when the
//! suite runs; the tests start it with `--ignored` and the environment saying what to do).

use std::io::Write;
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use cameleon::prelude::*;
use cameleon::types::DataJSON;
use cameleon_nats::{NatsOptions, NatsServer, Remote, Satellite, SatelliteConfig};
use serde_json::json;
use test_support::{Cmd, Proc, Signal, TempDir, WAIT_TIMEOUT, wait_until};

/// The heartbeat period of the satellites, in milliseconds.
const HEARTBEAT_MS: u64 = 200;

// ---------------------------------------------------------------------------------------------
// The operators

/// Appends its idempotency key to the file `log` (its effect) and passes its input on plus
/// one. In a satellite process whose `DT_HOLD` is `before` (or `after`), it stops before (after)
/// the effect until the file `release-<satellite>` appears in `marks` — the test kills it
/// meanwhile. It leaves `started-<satellite>` and `effected-<satellite>` in `marks` as it goes.
#[operator(id = "dt_effect", family = behavioral, exec = async)]
pub struct Effect {
    #[param]
    log: String,
    #[param]
    marks: String,
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

async fn hold_if(phase: &str, marks: &Path, me: &str) {
    if std::env::var("DT_HOLD").as_deref() != Ok(phase) {
        return;
    }
    while !marks.join(format!("release-{me}")).exists() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

impl RunAsync for Effect {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let me = std::env::var("DT_NAME").unwrap_or_else(|_| "local".into());
        let marks = Path::new(&self.marks);
        let mark = |what: &str| std::fs::write(marks.join(format!("{what}-{me}")), b"");
        mark("started").map_err(|e| OpError::new(e.to_string()))?;
        hold_if("before", marks, &me).await;
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| OpError::new(e.to_string()))?;
        writeln!(log, "{}", cx.idempotency_key()).map_err(|e| OpError::new(e.to_string()))?;
        drop(log);
        mark("effected").map_err(|e| OpError::new(e.to_string()))?;
        hold_if("after", marks, &me).await;
        let v = cx.get(Self::in_data)?.0.as_i64().unwrap_or(0);
        cx.emit(Self::out_data, DataJSON(json!(v + 1)));
        Ok(())
    }
}

static WAITING: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| tokio::sync::Semaphore::new(0));
static RELEASE: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| tokio::sync::Semaphore::new(0));

/// Passes its input on once the test releases it (it runs in the run's process).
#[operator(id = "dt_wait", family = behavioral, exec = async)]
pub struct Wait {
    #[input]
    in_data: In<DataJSON>,
    #[output]
    out_data: Out<DataJSON>,
}

impl RunAsync for Wait {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        WAITING.add_permits(1);
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
// The satellite process

/// The satellite process the tests start (this binary, with `--ignored`): hosts `dt_effect`
/// under the name `DT_NAME` on `DT_NATS`, until killed.
#[test]
#[ignore = "the satellite process the other tests of this file start"]
fn satellite_process() {
    let (Ok(url), Ok(name)) = (std::env::var("DT_NATS"), std::env::var("DT_NAME")) else {
        panic!("started by the tests of this file only (DT_NATS, DT_NAME)");
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = SatelliteConfig::new(name.clone()).ops(["dt_effect"]);
        c.heartbeat = Duration::from_millis(HEARTBEAT_MS);
        let _sat = Satellite::start(&NatsOptions::new(url), c).await.unwrap();
        eprintln!("satellite {name}: serving");
        std::future::pending::<()>().await;
    });
}

fn start_satellite(url: &str, name: &str, hold: &str) -> Proc {
    let exe = std::env::current_exe().expect("the test binary");
    let proc = Cmd::new(exe)
        .args(["--exact", "satellite_process", "--ignored", "--nocapture"])
        .env("DT_NATS", url)
        .env("DT_NAME", name)
        .env("DT_HOLD", hold)
        .spawn();
    let serving = format!("satellite {name}: serving");
    proc.wait_stderr(&serving, WAIT_TIMEOUT, |t| t.contains(&serving));
    proc
}

// ---------------------------------------------------------------------------------------------
// The run

fn net(log: &Path, marks: &Path) -> String {
    format!(
        "cameleon: 1\nname: death\noperators:\n  - id: zero\n    type: const\n    params:\n      value: 41\n  - id: fx\n    type: dt_effect\n    params:\n      log: '{}'\n      marks: '{}'\n    timeout_ms: 600000\n    placement: remote\n  - id: hold\n    type: dt_wait\n  - id: out\n    type: sink\nconnections:\n  - from: zero.out_data\n    to: fx.in_data\n  - from: fx.out_data\n    to: hold.in_data\n  - from: hold.out_data\n    to: out.in_data\n",
        log.display(),
        marks.display()
    )
}

/// What a trace shows of each firing: step, instance, emitted values.
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

fn run(text: String, remote: Option<Remote>) -> std::thread::JoinHandle<(EndState, Cvm)> {
    std::thread::spawn(move || {
        let mut net = cameleon::cm::Loader::new()
            .load_str(&text)
            .expect("a valid net");
        if let Some(r) = &remote {
            r.place(&mut net);
        }
        let mut cvm = Cvm::builder(net).build();
        let end = cvm.run().expect("the run ends");
        (end, cvm)
    })
}

fn join(h: std::thread::JoinHandle<(EndState, Cvm)>) -> (EndState, Cvm) {
    wait_until("the run ends", test_support::RUN_TIMEOUT, || {
        h.is_finished()
    });
    h.join().expect("the run's thread")
}

/// The firings of the same net run locally.
fn local_firings(dir: &Path) -> Vec<(u32, String, Vec<serde_json::Value>)> {
    let h = run(net(&dir.join("local.log"), dir), None);
    wait_until("the local run waits", WAIT_TIMEOUT, || {
        WAITING.try_acquire().map(|p| p.forget()).is_ok()
    });
    RELEASE.add_permits(1);
    let (end, cvm) = join(h);
    assert_eq!(end, EndState::Completed);
    firings(&cvm)
}

/// The phase of a call in which a satellite is killed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    BeforeEffect,
    AfterEffectBeforeReply,
    AfterReply,
}

/// Runs the net on two satellite processes, kills the one that takes the call in `phase`, and
/// returns how many times the effect happened, the failovers, and whether the trace was the
/// local one's.
fn kill_in(phase: Phase) -> (usize, Vec<cameleon_nats::Failover>) {
    let nats = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let dir = TempDir::new("sat-death");
    let local = local_firings(dir.path());
    let hold = match phase {
        Phase::BeforeEffect => "before",
        Phase::AfterEffectBeforeReply => "after",
        Phase::AfterReply => "none",
    };
    let mut sats = [
        ("death-a", start_satellite(&nats.url(), "death-a", hold)),
        ("death-b", start_satellite(&nats.url(), "death-b", hold)),
    ];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let remote = rt
        .block_on(Remote::connect_async(&NatsOptions::new(nats.url())))
        .unwrap();
    wait_until("the run hears both satellites", WAIT_TIMEOUT, || {
        remote.live().len() == 2
    });
    let log = dir.join("remote.log");
    let h = run(net(&log, dir.path()), Some(remote.clone()));
    let mark = match phase {
        Phase::BeforeEffect => "started",
        _ => "effected",
    };
    let taker = wait_for_taker(dir.path(), mark);
    let other = sats.iter().map(|(n, _)| *n).find(|n| *n != taker).unwrap();
    // The other one must not hold when the call comes to it.
    std::fs::write(dir.join(format!("release-{other}")), b"").unwrap();
    if phase == Phase::AfterReply {
        // The reply arrived: the run's next (local) operator is waiting.
        wait_until("the reply is applied", WAIT_TIMEOUT, || {
            WAITING.try_acquire().map(|p| p.forget()).is_ok()
        });
    }
    let (_, p) = sats.iter_mut().find(|(n, _)| *n == taker).unwrap();
    p.signal(Signal::Kill);
    p.wait(WAIT_TIMEOUT);
    if phase != Phase::AfterReply {
        wait_until("the run's next operator is reached", WAIT_TIMEOUT, || {
            WAITING.try_acquire().map(|p| p.forget()).is_ok()
        });
    }
    RELEASE.add_permits(1);
    let (end, cvm) = join(h);
    assert_eq!(end, EndState::Completed, "{phase:?}: {:?}", cvm.history());
    assert_eq!(
        firings(&cvm),
        local,
        "{phase:?}: the firings of a local run"
    );
    assert_eq!(cvm.received("out")[0].to_json(), json!(42));
    let text = std::fs::read_to_string(&log).unwrap();
    let keys: Vec<&str> = text.lines().collect();
    assert!(
        keys.windows(2).all(|w| w[0] == w[1]),
        "{phase:?}: every effect has the firing's one key: {keys:?}"
    );
    let failovers = remote.failovers();
    for f in &failovers {
        assert_eq!(f.from, taker);
        assert_eq!(f.to.as_deref(), Some(other));
    }
    (keys.len(), failovers)
}

/// The satellite that left mark `what`.
fn wait_for_taker(marks: &Path, what: &str) -> &'static str {
    test_support::wait_for(
        &format!("a satellite reaches `{what}`"),
        WAIT_TIMEOUT,
        || {
            ["death-a", "death-b"]
                .into_iter()
                .find(|n| marks.join(format!("{what}-{n}")).exists())
        },
    )
}

/// The failover counted in heartbeats: the lost satellite was silent 3 of its periods, never
/// fewer, and the run heard 3 (±1) heartbeats of the live one meanwhile.
fn assert_failover_in_heartbeats(f: &[cameleon_nats::Failover]) {
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].period, Duration::from_millis(HEARTBEAT_MS));
    assert!(f[0].silent >= f[0].period * 3, "{f:?}");
    assert!((2..=4).contains(&f[0].heartbeats_of_the_next), "{f:?}");
}

// The three phases share the statics of `dt_wait`: one test runs them in turn.
#[test]
fn a_satellite_process_killed_in_each_phase_of_a_call_leaves_a_run_that_completes() {
    let (effects, f) = kill_in(Phase::BeforeEffect);
    assert_eq!(
        effects, 1,
        "killed before its effect: the effect happens once, on the other"
    );
    assert_failover_in_heartbeats(&f);
    let (effects, f) = kill_in(Phase::AfterEffectBeforeReply);
    assert_eq!(
        effects, 2,
        "killed after its effect, before its reply: at least once — here twice, same key"
    );
    assert_failover_in_heartbeats(&f);
    let (effects, f) = kill_in(Phase::AfterReply);
    assert_eq!(effects, 1, "killed after its reply: nothing runs again");
    assert!(f.is_empty(), "{f:?}");
}
