//! The journal on NATS JetStream (docs/journal.md "Stores"), through the command line, on a
//! real `nats-server -js` (started per test on a free loopback port with its own store
//! folder): `run --journal nats://…` killed with SIGKILL at a seeded instant, then `resume`
//! from another folder — committed steps not run again (their effects' keys counted), the same
//! end and a byte-identical trace; one resumer at a time (the lease); the same records as a
//! SQLite journal of the same run.
//!
//! As in `journal.rs`, this test binary is also the command line (run with
//! `CAMELEON_CLI_TEST_CHILD_ARGS` set), so its `js_effect` operator — which appends its
//! firing's idempotency key to a file — is linked in.

use std::path::Path;

use cameleon_nats::{JetStreamJournal, NatsOptions, NatsServer};
use serde_json::Value;
use test_support::{Bin, TempDir, code, json, s, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

const CHILD_ARGS: &str = "CAMELEON_CLI_TEST_CHILD_ARGS";
const EFFECTS: &str = "CAMELEON_CLI_TEST_EFFECTS";
const HOLD_AT: &str = "CAMELEON_CLI_TEST_HOLD_AT";
const STDOUT_MARK: &str = "\n--- cameleon stdout ---\n";

mod effect {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use cameleon::prelude::*;

    static APPENDS: AtomicUsize = AtomicUsize::new(0);

    /// Appends its firing's idempotency key and a newline to `$CAMELEON_CLI_TEST_EFFECTS`, then
    /// passes its input on; its `$CAMELEON_CLI_TEST_HOLD_AT`-th append and later ones hold the
    /// firing until the process is killed.
    #[operator(id = "js_effect", family = behavioral)]
    pub struct Effect {
        #[input]
        in_data: In<DataJSON>,
        #[output]
        out_data: Out<DataJSON>,
    }

    impl Run for Effect {
        fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
            let v = cx.get(Self::in_data)?.clone();
            let path = std::env::var(super::EFFECTS).map_err(|_| "no effects file")?;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| e.to_string())?;
            f.write_all(format!("{}\n", cx.idempotency_key()).as_bytes())
                .map_err(|e| e.to_string())?;
            let n = APPENDS.fetch_add(1, Ordering::SeqCst) + 1;
            let hold: usize = std::env::var(super::HOLD_AT)
                .ok()
                .and_then(|h| h.parse().ok())
                .unwrap_or(usize::MAX);
            if n >= hold {
                std::thread::sleep(std::time::Duration::from_secs(300));
                std::process::exit(99);
            }
            cx.emit(Self::out_data, v);
            Ok(())
        }
    }
}

/// The child's entry (see the top of the file); run as a test, it does nothing.
#[test]
fn cli_child_process() {
    let Ok(args) = std::env::var(CHILD_ARGS) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).expect("the child's arguments");
    let mut out = Vec::new();
    let (mut err, mut input) = (std::io::stderr(), std::io::empty());
    let mut io = cameleon_cli::Io {
        stdout: &mut out,
        stderr: &mut err,
        stdin: &mut input,
        color: false,
        progress: false,
        prompt: false,
        interrupt: None,
    };
    let code = cameleon_cli::run_cli(std::iter::once("cameleon".to_owned()).chain(args), &mut io);
    use std::io::Write as _;
    let mut o = std::io::stdout();
    let _ = o.write_all(STDOUT_MARK.as_bytes());
    let _ = o.write_all(&out);
    let _ = o.flush();
    std::process::exit(code);
}

/// This test binary as the command line with `args`, in folder `cwd`.
fn child(args: &[&str], cwd: &Path, effects: &Path, hold: Option<usize>) -> test_support::Cmd {
    let mut c = test_support::Cmd::new(std::env::current_exe().expect("the test binary"))
        .args([
            "cli_child_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .current_dir(cwd)
        .env(CHILD_ARGS, serde_json::to_string(args).expect("JSON"))
        .env(EFFECTS, effects)
        .env_remove(HOLD_AT);
    if let Some(n) = hold {
        c = c.env(HOLD_AT, n.to_string());
    }
    c
}

fn child_json(o: &std::process::Output) -> Value {
    let out = stdout(o);
    let (_, after) = out
        .split_once(STDOUT_MARK)
        .unwrap_or_else(|| panic!("no output mark: {out}\n{}", stderr(o)));
    serde_json::from_str(after).unwrap_or_else(|e| panic!("not JSON ({e}): {after}\n{}", stderr(o)))
}

fn without_id(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("run_id");
    }
    v
}

/// A JetStream server storing into `dir`.
fn jetstream(dir: &Path) -> NatsServer {
    NatsServer::start_with(&["-js", "-sd", &s(dir)]).unwrap_or_else(|e| panic!("{e}"))
}

const ROUNDS: usize = 5;

/// A loop of `ROUNDS` rounds, two effects per round and an accumulator (internal state).
const NET: &str = "name: effects
operators:
  - {id: zero, type: const, params: {value: 0}}
  - {id: loop, type: merge}
  - {id: inc, type: counter}
  - {id: split, type: fork}
  - {id: a, type: js_effect}
  - {id: b, type: js_effect}
  - {id: check, type: guard, params: {continue_if: {lt: 5}}}
  - {id: collect, type: accumulator, params: {n: 4}}
  - {id: done, type: sink}
  - {id: batches, type: sink}
connections:
  - {from: zero.out_data, to: loop.in_a}
  - {from: check.out_continue, to: loop.in_b}
  - {from: loop.out_data, to: inc.in_data}
  - {from: inc.out_data, to: split.in_data}
  - {from: split.out_a, to: a.in_data}
  - {from: split.out_b, to: b.in_data}
  - {from: a.out_data, to: check.in_data}
  - {from: b.out_data, to: collect.in_data}
  - {from: check.out_exit, to: done.in_data}
  - {from: collect.out_data, to: batches.in_data}
";

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `RUN/BRANCH/STEP/OP` → the step.
fn step_of(key: &str) -> u64 {
    key.split('/')
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an idempotency key: {key}"))
}

/// Kills `run --journal nats://…` at a seeded effect, then resumes it from another folder.
fn crash_then_resume_elsewhere(mode: &str, durability: &str, seed: u64) {
    let d = TempDir::new(&format!("js-crash-{mode}-{durability}"));
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let (a, b) = (d.join("a"), d.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("effects.cm"), NET).unwrap();
    // The uninterrupted run, unjournaled.
    let reference = child(
        &[
            "run",
            "effects.cm",
            "--mode",
            mode,
            "--json",
            "--trace",
            "ref.jsonl",
        ],
        &a,
        &d.join("ref.effects"),
        None,
    )
    .run();
    assert_eq!(code(&reference), 0, "{}", stderr(&reference));
    let reference_json = child_json(&reference);
    let reference_trace = std::fs::read(a.join("ref.jsonl")).unwrap();

    let mut rng = test_support::Rng::new(seed);
    let hold = rng.between(2, 2 * ROUNDS);
    let context = format!("{mode} {durability}, held at effect {hold}");
    // In parallel mode the two effects of a round fire together: wait for both.
    let want = if mode == "parallel" {
        hold.div_ceil(2) * 2
    } else {
        hold
    };
    let effects = d.join("run.effects");
    let mut first = child(
        &[
            "run",
            "effects.cm",
            "--mode",
            mode,
            "--journal",
            &url,
            "--durability",
            durability,
            "--batch-ms",
            "5",
            "--lease-ms",
            "1500",
            "--json",
        ],
        &a,
        &effects,
        Some(hold),
    )
    .spawn();
    let id = first
        .stderr_line(1, test_support::WAIT_TIMEOUT)
        .strip_prefix("run ")
        .unwrap_or_else(|| panic!("{context}: no `run <ID>` first on stderr"))
        .to_owned();
    test_support::wait_until(&context, test_support::WAIT_TIMEOUT, || {
        lines(&effects).len() >= want
    });
    if durability == "batch" {
        // What waits in memory reaches the server within a few flushes of 5 ms: wait until
        // the history holds every step before the held one (the kill then cuts the held one).
        test_support::wait_until(&context, test_support::WAIT_TIMEOUT, || {
            let h = json(&CAMELEON.run(&["history", &url, &id, "--json"]));
            h["entries"].as_array().map_or(0, Vec::len) as u64
                >= step_of(lines(&effects).last().unwrap()) - 1
        });
    }
    let pid = first.pid();
    // A second process cannot go on with the run while its holder lives: exit 2, naming it.
    let second = child(&["resume", &url, &id, "--json"], &b, &effects, None).run();
    assert_eq!(code(&second), 2, "{context}: {}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!("process {pid} on")),
        "{context}: the holder is named: {}",
        stderr(&second)
    );
    assert_eq!(
        lines(&effects).len(),
        want,
        "{context}: the refused resumer ran nothing"
    );
    first.signal(test_support::Signal::Kill);
    first.wait(test_support::WAIT_TIMEOUT);
    let before = lines(&effects);
    let h = json(&CAMELEON.run(&["history", &url, &id, "--json"]));
    let committed = h["entries"].as_array().expect("entries").len() as u64;
    let held_step = step_of(before.last().unwrap());
    assert_eq!(
        committed,
        held_step - 1,
        "{context}: every step before the held one is on the server"
    );

    // After the lease's time to live, another process in another folder takes the run over.
    let trace = b.join("resumed.jsonl");
    let mut last = None;
    test_support::wait_until(
        &format!("{context}: the lease lapses"),
        test_support::WAIT_TIMEOUT,
        || {
            let o = child(
                &[
                    "resume",
                    &url,
                    &id,
                    "--json",
                    "--trace",
                    &s(&trace),
                    "--base",
                    &s(&b),
                ],
                &b,
                &effects,
                None,
            )
            .run();
            if code(&o) == 2 && stderr(&o).contains("is being resumed by") {
                return false;
            }
            last = Some(o);
            true
        },
    );
    let last = last.expect("the resume ran");
    assert_eq!(code(&last), 0, "{context}: {}", stderr(&last));
    assert_eq!(without_id(child_json(&last)), reference_json, "{context}");
    assert!(
        std::fs::read(&trace).unwrap() == reference_trace,
        "{context}: the resumed trace is the uninterrupted run's"
    );
    // Committed steps were restored, not run again.
    let all = lines(&effects);
    let after = &all[before.len()..];
    for key in &before {
        if step_of(key) <= committed {
            assert!(
                !after.contains(key),
                "{context}: `resume` ran committed step {} again ({key})",
                step_of(key)
            );
        }
    }
    let runs = json(&CAMELEON.run(&["runs", &url, "--json"]));
    assert_eq!(runs[0]["id"], id.as_str(), "{context}");
    assert_eq!(runs[0]["status"], "COMPLETED", "{context}");
    assert_eq!(runs[0]["steps"], reference_json["steps"], "{context}");
}

#[test]
fn sigkill_then_resume_from_another_folder_on_jetstream_sync() {
    crash_then_resume_elsewhere("sequential", "sync", 0x5eed_0026);
}

#[test]
fn sigkill_then_resume_from_another_folder_on_jetstream_parallel_sync() {
    crash_then_resume_elsewhere("parallel", "sync", 0x5eed_0028);
}

#[test]
fn sigkill_then_resume_from_another_folder_on_jetstream_batch() {
    crash_then_resume_elsewhere("sequential", "batch", 0x5eed_0027);
}

/// The same run journaled in a file and on JetStream: the same records, entry for entry.
#[test]
fn a_sqlite_journal_and_a_jetstream_journal_of_one_run_hold_the_same_records() {
    let d = TempDir::new("js-same-records");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let net = test_support::example("counter.cm");
    let db = d.join("runs.db");
    let o = CAMELEON.run(&["run", &net, "--journal", &s(&db), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let file_id = json(&o)["run_id"].as_str().unwrap().to_owned();
    let o = CAMELEON.run(&["run", &net, "--journal", &url, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let bus_id = json(&o)["run_id"].as_str().unwrap().to_owned();

    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT node, parent, step, branch, ops, body, keys FROM entries
             WHERE run = (SELECT seq FROM runs WHERE id = ?1) ORDER BY node",
        )
        .unwrap();
    type Row = (u32, Option<u32>, u32, u32, String, String, Option<Vec<u8>>);
    let file: Vec<Row> = st
        .query_map([&file_id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let journal = JetStreamJournal::connect(
        &NatsOptions::new(url.clone()),
        cameleon_nats::journal::DEFAULT_LEASE_TTL,
    )
    .unwrap();
    let bus: Vec<_> = journal
        .entries(&bus_id)
        .unwrap()
        .into_iter()
        .map(|e| (e.node, e.parent, e.step, e.branch, e.ops, e.body, e.keys))
        .collect();
    assert!(!file.is_empty());
    assert!(
        file.iter().any(|r| r.6.is_some()),
        "the run has reusable firings"
    );
    assert_eq!(bus, file, "the records (reuse keys included) differ");
    // The two listings agree too.
    let h_file = json(&CAMELEON.run(&["history", &s(&db), &file_id, "--json"]));
    let h_bus = json(&CAMELEON.run(&["history", &url, &bus_id, "--json"]));
    assert_eq!(h_bus, h_file);
}

/// A stream whose message for a run does not read as frames is reported, not trusted.
#[test]
fn a_damaged_run_on_the_bus_exits_2_naming_it() {
    let d = TempDir::new("js-damaged");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    // The stream exists once a journal connects; then a foreign message under a run's subject.
    let _ = JetStreamJournal::connect(
        &NatsOptions::new(url.clone()),
        cameleon_nats::journal::DEFAULT_LEASE_TTL,
    )
    .unwrap();
    let id = "0190f5e0-0000-7000-8000-000000000000";
    publish(&url, &format!("cameleon.journal.{id}"), b"{\"run\":42}\n");
    let o = CAMELEON.run(&["resume", &url, id, "--json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("damaged"), "{}", stderr(&o));
    let o = CAMELEON.run(&["history", &url, id, "--json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// Publishes `payload` to `subject` in NATS's own text protocol (a foreign writer), and waits
/// for the server's answer to a PING sent after it.
fn publish(url: &str, subject: &str, payload: &[u8]) {
    use std::io::{BufRead as _, Write as _};
    let addr = url.trim_start_matches("nats://");
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    let mut msg = format!(
        "CONNECT {{\"verbose\":false}}\r\nPUB {subject} {}\r\n",
        payload.len()
    )
    .into_bytes();
    msg.extend_from_slice(payload);
    msg.extend_from_slice(b"\r\nPING\r\n");
    conn.write_all(&msg).unwrap();
    let mut r = std::io::BufReader::new(conn);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the server hung up");
        if line.starts_with("PONG") {
            return;
        }
    }
}

/// A process that lost its lease cannot append: once another went on with the run, the
/// server refuses its next step (each append carries the run's last sequence it knows).
#[test]
fn a_holder_that_lost_its_lease_cannot_append_after_another_went_on() {
    use cameleon::journal::{Names, ResumeOptions, RunOptions};
    let d = TempDir::new("js-lost-lease");
    let server = jetstream(&d.join("store"));
    let o = NatsOptions::new(server.url());
    let ttl = cameleon_nats::journal::DEFAULT_LEASE_TTL;
    let net = cameleon::Net::from_cm(
        &std::fs::read_to_string(test_support::example("counter.cm")).unwrap(),
    )
    .unwrap();
    let mut first = cameleon::Cvm::new(net);
    let j1 = JetStreamJournal::connect(&o, ttl).unwrap();
    let (id, lease) = j1.start(&mut first, &RunOptions::default()).unwrap();
    first.step().unwrap();
    first.step().unwrap();
    // The lease is gone (as when it lapses): another process takes the run over and steps.
    drop(lease);
    let j2 = JetStreamJournal::connect(&o, ttl).unwrap();
    let pin = Box::new(|_: &mut cameleon::Net, _: &Path| {
        <dyn cameleon::operator::capability::Capabilities>::none()
    });
    let (mut second, lease2) = j2
        .resume(Some(&id), &ResumeOptions::default(), &Names::default(), pin)
        .unwrap();
    assert!(lease2.is_some());
    assert_eq!(second.cvm.depth(), 2);
    second.cvm.step().unwrap();
    // The first process's next step is refused by the server, and undone.
    let e = first
        .step()
        .expect_err("the stale holder's append is refused");
    assert!(e.to_string().contains("journal"), "{e}");
    // The run on the server is the second process's: three steps.
    assert_eq!(j2.history(&id).unwrap().entries.len(), 3);
}

/// `migrate` does not work on a journal on NATS yet: it says so, exit 2, touching nothing.
#[test]
fn migrate_on_a_nats_journal_exits_2_saying_it_is_not_supported_yet() {
    for extra in [&["--back"][..], &["--to", "new.cm"][..]] {
        let mut args = vec![
            "migrate",
            "nats://127.0.0.1:9",
            "0190f5e0-0000-7000-8000-000000000000",
        ];
        args.extend(extra);
        let o = CAMELEON.run(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("not supported") && stderr(&o).contains("nats://"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// With the server configuration docs/wire.md gives (plus JetStream), the `run` user journals
/// a run and resumes it; the `watcher` user cannot start one.
#[test]
fn with_the_documented_permissions_a_run_user_journals_and_a_watcher_cannot() {
    let d = TempDir::new("js-permissions");
    let doc = std::fs::read_to_string(test_support::root().join("docs/wire.md")).unwrap();
    let start = doc.find("```conf\n").expect("a ```conf block") + "```conf\n".len();
    let end = start + doc[start..].find("```").expect("the block ends");
    let conf = doc[start..end]
        .replace("$RUN_PASSWORD", "run-pw")
        .replace("$SATELLITE_PASSWORD", "sat-pw")
        .replace("$WATCHER_PASSWORD", "watch-pw");
    std::fs::write(d.join("nats-server.conf"), conf).unwrap();
    let server = NatsServer::start_with(&[
        "-js",
        "-sd",
        &s(&d.join("store")),
        "-c",
        &s(&d.join("nats-server.conf")),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    let as_run = format!("nats://run:run-pw@127.0.0.1:{port}");
    let net = test_support::example("counter.cm");
    let o = CAMELEON.run(&["run", &net, "--journal", &as_run, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = json(&o)["run_id"].as_str().unwrap().to_owned();
    let runs = json(&CAMELEON.run(&["runs", &as_run, "--json"]));
    assert_eq!(runs[0]["id"], id.as_str());
    let o = CAMELEON.run(&["resume", &as_run, &id, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let as_watcher = format!("nats://watcher:watch-pw@127.0.0.1:{port}");
    let o = CAMELEON.run(&["run", &net, "--journal", &as_watcher, "--json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// A loop of 60 rounds, each waiting 10 ms.
const SLOW: &str = "name: slow
operators:
  - {id: zero, type: const, params: {value: 0}}
  - {id: loop, type: merge}
  - {id: inc, type: counter}
  - {id: wait, type: delay, params: {ms: 10}}
  - {id: check, type: guard, params: {continue_if: {lt: 60}}}
  - {id: done, type: sink}
connections:
  - {from: zero.out_data, to: loop.in_a}
  - {from: check.out_continue, to: loop.in_b}
  - {from: loop.out_data, to: inc.in_data}
  - {from: inc.out_data, to: wait.in_data}
  - {from: wait.out_data, to: check.in_data}
  - {from: check.out_exit, to: done.in_data}
";

/// The server restarts (killed, started again on its store) in the middle of a `sync` run: what
/// was acknowledged before is still there, and the run ends as an uninterrupted one (going on
/// by itself once reconnected, or by `resume`).
#[test]
fn a_server_restart_mid_run_loses_nothing_committed_in_sync_mode() {
    let d = TempDir::new("js-restart");
    let mut server = jetstream(&d.join("store"));
    let url = server.url();
    std::fs::write(d.join("slow.cm"), SLOW).unwrap();
    let net = s(&d.join("slow.cm"));
    let reference = CAMELEON.run(&["run", &net, "--json", "--trace", &s(&d.join("ref.jsonl"))]);
    assert_eq!(code(&reference), 0, "{}", stderr(&reference));
    let mut run = CAMELEON
        .cmd()
        .args([
            "run",
            &net,
            "--journal",
            &url,
            "--json",
            "--lease-ms",
            "1000",
        ])
        .spawn();
    let id = run
        .stderr_line(1, test_support::WAIT_TIMEOUT)
        .strip_prefix("run ")
        .expect("`run <ID>` first")
        .to_owned();
    let entries = |url: &str| {
        let h = json(&CAMELEON.run(&["history", url, &id, "--json"]));
        h["entries"].as_array().map_or(0, Vec::len)
    };
    test_support::wait_until("30 steps on the server", test_support::WAIT_TIMEOUT, || {
        entries(&url) >= 30
    });
    let committed = entries(&url);
    server.restart().unwrap();
    test_support::wait_until(
        "the journal is served again",
        test_support::WAIT_TIMEOUT,
        || entries(&url) > 0,
    );
    assert!(
        entries(&url) >= committed,
        "the restarted server lost acknowledged steps"
    );
    let status = run.wait(test_support::WAIT_TIMEOUT);
    if status.code() != Some(0) {
        // The run stopped on the outage: `resume` finishes it.
        let mut last = None;
        test_support::wait_until("the lease lapses", test_support::WAIT_TIMEOUT, || {
            let o = CAMELEON.run(&[
                "resume",
                &url,
                &id,
                "--json",
                "--trace",
                &s(&d.join("t.jsonl")),
            ]);
            if code(&o) == 2 && stderr(&o).contains("is being resumed by") {
                return false;
            }
            last = Some(o);
            true
        });
        let o = last.unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let runs = json(&CAMELEON.run(&["runs", &url, "--json"]));
    assert_eq!(runs[0]["status"], "COMPLETED");
    assert_eq!(runs[0]["steps"], json(&reference)["steps"]);
    // The trace a resume prints of the finished run is the uninterrupted run's.
    let t = d.join("final.jsonl");
    let o = CAMELEON.run(&["resume", &url, &id, "--json", "--trace", &s(&t)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(std::fs::read(&t).unwrap() == std::fs::read(d.join("ref.jsonl")).unwrap());
}

/// `--subject-prefix` isolates journals on one server: its stream and lease bucket are its own.
#[test]
fn a_subject_prefix_has_its_own_journal() {
    let d = TempDir::new("js-prefix");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let net = test_support::example("counter.cm");
    let o = CAMELEON.run(&[
        "run",
        &net,
        "--journal",
        &url,
        "--subject-prefix",
        "team.a",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = json(&o)["run_id"].as_str().unwrap().to_owned();
    let mine = json(&CAMELEON.run(&["runs", &url, "--subject-prefix", "team.a", "--json"]));
    assert_eq!(mine[0]["id"], id.as_str());
    let others = json(&CAMELEON.run(&["runs", &url, "--json"]));
    assert_eq!(others, serde_json::json!([]));
    let o = CAMELEON.run(&[
        "run",
        &net,
        "--journal",
        &url,
        "--subject-prefix",
        "bad prefix",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("subject prefix"), "{}", stderr(&o));
}

/// Sub-nets' and `map`'s inner runs travel in their steps' records: a run on JetStream resumed
/// from another folder (the sub-net files given by `--base`) prints the plain run's trace.
#[test]
fn inner_runs_are_journaled_on_jetstream_and_resumed_elsewhere() {
    let d = TempDir::new("js-inner");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    for example in ["subnet.cm", "wcp/wcp14-mi-run-time.cm"] {
        let plain = d.join(format!("{}.plain.jsonl", example.replace('/', "-")));
        let net = test_support::example(example);
        let o = CAMELEON.run(&["run", &net, "--trace", &s(&plain)]);
        assert_eq!(code(&o), 0, "{example}: {}", stderr(&o));
        let o = CAMELEON.run(&["run", &net, "--journal", &url, "--json"]);
        assert_eq!(code(&o), 0, "{example}: {}", stderr(&o));
        let id = json(&o)["run_id"].as_str().unwrap().to_owned();
        let resumed = d.join(format!("{}.resumed.jsonl", example.replace('/', "-")));
        let o = CAMELEON
            .cmd()
            .args(["resume", &url, &id, "--trace", &s(&resumed)])
            .args(["--base", &s(Path::new(&net).parent().unwrap())])
            .current_dir(&d)
            .run();
        assert_eq!(code(&o), 0, "{example}: {}", stderr(&o));
        let plain = std::fs::read_to_string(&plain).unwrap();
        assert!(plain.contains("\"inner\":[{"), "{example}: {plain}");
        assert_eq!(
            std::fs::read_to_string(&resumed).unwrap(),
            plain,
            "{example}"
        );
    }
}

/// A run on JetStream that stops WAITING is resumed elsewhere with its answers (which are
/// journaled: a second resume of the finished run fires nothing and prints the same trace).
#[test]
fn a_waiting_run_on_jetstream_is_resumed_elsewhere_with_its_answers() {
    let d = TempDir::new("js-ask");
    let server = jetstream(&d.join("store"));
    let url = server.url();
    let net = test_support::example("ask.cm");
    let waiting = CAMELEON.run(&["run", &net, "--journal", &url, "--json"]);
    assert_eq!(code(&waiting), 6, "{}", stderr(&waiting));
    let id = json(&waiting)["run_id"].as_str().unwrap().to_owned();
    let runs = json(&CAMELEON.run(&["runs", &url, "--json"]));
    assert_eq!(runs[0]["status"], "WAITING");
    let answers = ["--answer", "approve=yes", "--answer", "reviewer=Ada"];
    let direct = d.join("direct.jsonl");
    let o = CAMELEON.run(
        &[
            &["run", net.as_str(), "--json", "--trace", &s(&direct)][..],
            &answers,
        ]
        .concat(),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let direct_json = without_id(json(&o));
    let trace = d.join("resumed.jsonl");
    let o = CAMELEON
        .cmd()
        .args(["resume", &url, &id, "--json", "--trace", &s(&trace)])
        .args(answers)
        .current_dir(&d)
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(without_id(json(&o)), direct_json);
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        std::fs::read(&direct).unwrap()
    );
    // The answers were journaled: the finished run reports the same, asking nothing.
    let again = d.join("again.jsonl");
    let o = CAMELEON.run(&["resume", &url, &id, "--json", "--trace", &s(&again)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(without_id(json(&o)), direct_json);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&direct).unwrap()
    );
}

/// A step whose frame is larger than the server's `max_payload` goes in chunks, and reads back
/// whole: the run resumed elsewhere prints the plain run's trace.
#[test]
fn a_step_larger_than_the_servers_max_payload_is_chunked_and_read_back() {
    let d = TempDir::new("js-chunks");
    std::fs::write(d.join("small.conf"), "max_payload: 4096\n").unwrap();
    let server = NatsServer::start_with(&[
        "-js",
        "-sd",
        &s(&d.join("store")),
        "-c",
        &s(&d.join("small.conf")),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let url = server.url();
    let big = "x".repeat(20_000);
    let net = format!(
        "name: big\noperators:\n  - {{id: src, type: source, params: {{value: \"{big}\"}}}}\n  - {{id: copy, type: fork}}\n  - {{id: out, type: sink}}\n  - {{id: out2, type: sink}}\nconnections:\n  - {{from: src.out_data, to: copy.in_data}}\n  - {{from: copy.out_a, to: out.in_data}}\n  - {{from: copy.out_b, to: out2.in_data}}\n"
    );
    std::fs::write(d.join("big.cm"), net).unwrap();
    let plain = d.join("plain.jsonl");
    let o = CAMELEON.run(&["run", &s(&d.join("big.cm")), "--trace", &s(&plain)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = CAMELEON.run(&["run", &s(&d.join("big.cm")), "--journal", &url, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = json(&o)["run_id"].as_str().unwrap().to_owned();
    let journal = JetStreamJournal::connect(
        &NatsOptions::new(url.clone()),
        cameleon_nats::journal::DEFAULT_LEASE_TTL,
    )
    .unwrap();
    let entries = journal.entries(&id).unwrap();
    assert!(
        entries.iter().any(|e| e.body.len() > 4096),
        "a record over max_payload"
    );
    let resumed = d.join("resumed.jsonl");
    let o = CAMELEON.run(&["resume", &url, &id, "--trace", &s(&resumed)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&resumed).unwrap(),
        std::fs::read(&plain).unwrap()
    );
}
