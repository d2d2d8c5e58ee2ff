//! `cameleon satellite`, `cameleon satellites` and `run --nats`, through the real binary, on a
//! real NATS server (Debian's `nats-server`, started per test on a free loopback port; a
//! missing binary fails the test with the install command).

use cameleon::prelude::*;
use cameleon::types::{DataJSON, DataString};
use cameleon_nats::{NatsOptions, NatsServer, Satellite, SatelliteConfig};
use serde_json::Value;
use test_support::{Bin, Proc, Signal, TempDir, WAIT_TIMEOUT, code};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `cameleon ARGS… --json`, which must exit 0; the JSON it prints.
fn run_json(args: &[&str]) -> Value {
    let o = CAMELEON.run(&[args, &["--json"]].concat());
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn server() -> NatsServer {
    NatsServer::start().unwrap_or_else(|e| panic!("{e}"))
}

/// A `cameleon satellite` process, killed (SIGKILL) when dropped unless it was stopped.
struct Sat {
    proc: Proc,
    /// How much of its standard error [`Sat::wait_for`] has read.
    read: usize,
}

impl Sat {
    /// Starts one hosting every operator type and `calc`, and waits for its "serving" line.
    fn start(url: &str, name: &str, heartbeat_ms: u64) -> Sat {
        Sat::start_with(url, name, heartbeat_ms, &["--all-ops", "--tools", "calc"])
    }

    /// Starts one with `args` (what it hosts, credentials…), and waits for its "serving" line.
    fn start_with(url: &str, name: &str, heartbeat_ms: u64, args: &[&str]) -> Sat {
        let proc = CAMELEON
            .cmd()
            .args(["satellite", "--nats", url, "--name", name])
            .args(["--heartbeat-ms", &heartbeat_ms.to_string()])
            .args(["--log", "cameleon_nats=info"])
            .args(args)
            .env("NO_COLOR", "1")
            .spawn();
        let serving = format!("satellite {name}: serving");
        proc.wait_stderr(&serving, WAIT_TIMEOUT, |t| {
            t.lines().next().is_some_and(|l| l.contains(&serving))
        });
        Sat { proc, read: 0 }
    }

    /// Waits for the next complete line of its standard error that contains `what` (failing
    /// the test when the stream ends first or nothing comes in time); that line.
    fn wait_for(&mut self, what: &str) -> String {
        let from = self.read;
        let find = |t: &str| {
            let rest = t.get(from..)?;
            let mut at = from;
            for line in rest.split_inclusive('\n') {
                at += line.len();
                if line.ends_with('\n') && line.contains(what) {
                    return Some((line.trim_end().to_owned(), at));
                }
            }
            None
        };
        let text = self
            .proc
            .wait_stderr(&format!("a line with `{what}`"), WAIT_TIMEOUT, |t| {
                find(t).is_some()
            });
        let (line, at) = find(&text).expect("the line just found");
        self.read = at;
        line
    }
}

/// Eight `delay`s of `ms` fanned out and joined, each `placement:` as given.
fn fan_out(ms: u64, placement: &str) -> String {
    let mut s = String::from(
        "cameleon: 1\nname: fan-out\nconfig:\n  mode: parallel\noperators:\n  - id: src\n    type: source\n    params:\n      value: hello\n  - id: fork\n    type: fork\n    params:\n      arity: 8\n",
    );
    for i in 0..8 {
        s += &format!(
            "  - id: wait_{i}\n    type: delay\n    params:\n      ms: {ms}\n    placement: {placement}\n"
        );
    }
    s += "  - id: join\n    type: join\n    params:\n      arity: 8\n  - id: out\n    type: sink\nconnections:\n  - from: src.out_data\n    to: fork.in_data\n";
    for (i, p) in "abcdefgh".chars().enumerate() {
        s += &format!(
            "  - from: fork.out_{p}\n    to: wait_{i}.in_data\n  - from: wait_{i}.out_data\n    to: join.in_{p}\n"
        );
    }
    s += "  - from: join.out_data\n    to: out.in_data\n";
    s
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

#[test]
fn remote_and_local_runs_write_byte_identical_traces() {
    let nats = server();
    let url = nats.url();
    let _a = Sat::start(&url, "trace-a", 1000);
    let _b = Sat::start(&url, "trace-b", 1000);
    let dir = TempDir::new("cli-sat-trace");
    for (name, net) in [
        ("counter", COUNTER.to_owned()),
        ("fan", fan_out(20, "remote")),
    ] {
        let file = dir.join(format!("{name}.cm"));
        std::fs::write(&file, net).unwrap();
        let file = file.to_str().unwrap();
        let local = dir.join(format!("{name}-local.jsonl"));
        let remote = dir.join(format!("{name}-remote.jsonl"));
        let l = CAMELEON.run(&["run", file, "--trace", local.to_str().unwrap()]);
        assert_eq!(code(&l), 0, "{}", text(&l.stderr));
        let r = CAMELEON.run(&[
            "run",
            file,
            "--nats",
            &url,
            "--trace",
            remote.to_str().unwrap(),
        ]);
        assert_eq!(code(&r), 0, "{}{}", text(&r.stdout), text(&r.stderr));
        let (l, r) = (
            std::fs::read(&local).unwrap(),
            std::fs::read(&remote).unwrap(),
        );
        assert!(!l.is_empty());
        assert_eq!(text(&l), text(&r), "{name}: the traces differ");
    }
}

#[test]
fn satellites_json_lists_the_live_ones_and_not_a_killed_one() {
    let nats = server();
    let url = nats.url();
    let a = Sat::start(&url, "list-a", 100);
    let mut b = Sat::start(&url, "list-b", 100);
    let o = CAMELEON.run(&["satellites", "--nats", &url, "--json"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list-a", "list-b"]);
    let first = &v[0];
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "ops", "tools", "last_seen_ms"]);
    assert!(
        first["ops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "delay")
    );
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "calc")
    );
    assert!(first["last_seen_ms"].is_u64());
    // Killed at once (SIGKILL): no goodbye, no more answers nor heartbeats.
    b.proc.signal(Signal::Kill);
    let o = CAMELEON.run(&["satellites", "--nats", &url, "--json", "--wait-ms", "400"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list-a"]);
    let t = CAMELEON.run(&["satellites", "--nats", &url]);
    assert!(text(&t.stdout).contains("list-a"), "{}", text(&t.stdout));
    drop(a);
}

#[test]
fn sigterm_lets_a_satellite_answer_its_call_in_flight() {
    let nats = server();
    let url = nats.url();
    let mut a = Sat::start(&url, "term-a", 1000);
    let dir = TempDir::new("cli-sat-term");
    let file = dir.join("slow.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: slow\noperators:\n  - id: src\n    type: source\n    params:\n      value: hi\n  - id: wait\n    type: delay\n    params:\n      ms: 400\n    placement: remote\n  - id: out\n    type: sink\nconnections:\n  - from: src.out_data\n    to: wait.in_data\n  - from: wait.out_data\n    to: out.in_data\n",
    )
    .unwrap();
    let run = CAMELEON
        .cmd()
        .args(["run", file.to_str().unwrap(), "--nats", &url, "--json"])
        .spawn();
    // Rendezvous: the satellite took the call.
    let line = a.wait_for("call taken");
    assert!(line.contains("cameleon.op.delay"), "{line}");
    a.proc.signal(Signal::Term);
    a.wait_for("stopping: finishing 1 call(s) in flight");
    a.wait_for("stopped");
    let status = a.proc.wait(WAIT_TIMEOUT);
    assert_eq!(status.code(), Some(0));
    let out = run.wait_output(WAIT_TIMEOUT);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["end"], "COMPLETED", "{v}");
}

#[test]
fn run_nats_without_a_satellite_ends_in_error_naming_the_type() {
    let nats = server();
    let dir = TempDir::new("cli-sat-none");
    let file = dir.join("counter.cm");
    std::fs::write(&file, COUNTER).unwrap();
    let o = CAMELEON.run(&[
        "run",
        file.to_str().unwrap(),
        "--nats",
        &nats.url(),
        "--nats-timeout-ms",
        "200",
    ]);
    assert_eq!(code(&o), 5, "{}{}", text(&o.stdout), text(&o.stderr));
    let all = text(&o.stdout) + &text(&o.stderr);
    assert!(
        all.contains("no satellite hosts operator type `counter` (instance `inc`)"),
        "{all}"
    );
}

#[test]
fn bad_satellite_arguments_and_an_unreachable_server_are_reported() {
    let o = CAMELEON.run(&[
        "satellite",
        "--nats",
        "nats://127.0.0.1:1",
        "--name",
        "a.b",
        "--ops",
        "counter",
    ]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("satellite name `a.b`"),
        "{}",
        text(&o.stderr)
    );
    let o = CAMELEON.run(&["satellites", "--nats", "nats://127.0.0.1:1"]);
    assert_eq!(code(&o), 5);
    assert!(
        text(&o.stderr).contains("cannot connect to NATS at `nats://127.0.0.1:1`"),
        "{}",
        text(&o.stderr)
    );
    let o = CAMELEON.run(&["satellites"]);
    assert_eq!(code(&o), 2);
    assert!(text(&o.stderr).contains("--nats URL is required"));
}

#[test]
fn a_satellite_told_nothing_to_host_says_what_it_could_and_exits_2() {
    // No NATS needed: it refuses before connecting.
    let o = CAMELEON.run(&["satellite", "--nats", "nats://127.0.0.1:1"]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("nothing to host"), "{err}");
    assert!(
        err.contains("--ops TYPE") && err.contains("--tools NAME"),
        "{err}"
    );
    assert!(
        err.contains("counter") && err.contains("write_file"),
        "{err}"
    );
    // A file reader or a file tool without `--base`: refused, naming the flag.
    for args in [["--ops", "text_file"], ["--tools", "write_file"]] {
        let o = CAMELEON.run(&[&["satellite", "--nats", "nats://127.0.0.1:1"][..], &args].concat());
        assert_eq!(code(&o), 2, "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("--base DIR"),
            "{}",
            text(&o.stderr)
        );
    }
    // A type this program lacks.
    let o = CAMELEON.run(&[
        "satellite",
        "--nats",
        "nats://127.0.0.1:1",
        "--ops",
        "countr",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("did you mean `counter`"),
        "{}",
        text(&o.stderr)
    );
}

/// A one-instance net: `counter` on a satellite.
const ONE_COUNTER: &str = "cameleon: 1\nname: one\noperators:\n  - id: zero\n    type: const\n    params:\n      value: 0\n  - id: inc\n    type: counter\n    placement: remote\n  - id: out\n    type: sink\nconnections:\n  - from: zero.out_data\n    to: inc.in_data\n  - from: inc.out_data\n    to: out.in_data\n";

#[test]
fn credentials_files_let_runs_and_satellites_in_and_an_unpermitted_user_gets_no_call_answered() {
    use test_support::nats::{Authority, Permissions};
    let dir = TempDir::new("cli-sat-creds");
    let auth = Authority::new();
    let conf = dir.join("nats-server.conf");
    std::fs::write(&conf, auth.server_conf()).unwrap();
    let nats =
        NatsServer::start_with(&["-c", conf.to_str().unwrap()]).unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();
    let creds = |name: &str, p: Permissions| {
        let f = dir.join(format!("{name}.creds"));
        std::fs::write(&f, auth.user_creds(name, &p)).unwrap();
        f.to_str().unwrap().to_owned()
    };
    let sat = creds(
        "satellite",
        Permissions::new(
            &["cameleon.heartbeat.>"],
            &[
                "cameleon.op.>",
                "cameleon.tool.>",
                "cameleon.sat.>",
                "cameleon.discover",
                "$SRV.>",
            ],
        )
        .answering(2),
    );
    let run = creds(
        "run",
        Permissions::new(
            &[
                "cameleon.op.>",
                "cameleon.tool.>",
                "cameleon.sat.>",
                "cameleon.discover",
            ],
            &["_INBOX.>", "cameleon.heartbeat.>"],
        ),
    );
    let watcher = creds(
        "watcher",
        Permissions::new(
            &["cameleon.discover"],
            &["_INBOX.>", "cameleon.heartbeat.>"],
        ),
    );
    let mut a = Sat::start_with(
        &url,
        "creds-a",
        1000,
        &["--ops", "counter", "--nats-creds", &sat],
    );
    let file = dir.join("one.cm");
    std::fs::write(&file, ONE_COUNTER).unwrap();
    let file = file.to_str().unwrap();
    // Without credentials: no connection at all.
    let o = CAMELEON.run(&["run", file, "--nats", &url]);
    assert_eq!(code(&o), 5, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("cannot connect to NATS"),
        "{}",
        text(&o.stderr)
    );
    // The run's credentials: answered.
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--nats-creds", &run, "--json"]);
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    a.wait_for("call taken");
    // A watcher lists the satellite but its call is refused by the server: nothing answers.
    let o = CAMELEON.run(&[
        "satellites",
        "--nats",
        &url,
        "--nats-creds",
        &watcher,
        "--json",
    ]);
    assert!(text(&o.stdout).contains("creds-a"), "{}", text(&o.stdout));
    let o = CAMELEON.run(&[
        "run",
        file,
        "--nats",
        &url,
        "--nats-creds",
        &watcher,
        "--nats-timeout-ms",
        "300",
    ]);
    assert_eq!(code(&o), 5, "{}{}", text(&o.stdout), text(&o.stderr));
    // The satellite took one call only: the run's.
    let log = a.proc.stderr_text();
    assert_eq!(log.matches("call taken").count(), 1, "{log}");
}

#[test]
fn a_token_and_a_password_in_the_url_are_exercised_from_the_command_line() {
    let nats = NatsServer::start_with(&["--auth", "s3cret"]).unwrap_or_else(|e| panic!("{e}"));
    let url = nats.url();
    let _a = Sat::start_with(
        &url,
        "token-a",
        1000,
        &["--ops", "counter", "--nats-token", "s3cret"],
    );
    let dir = TempDir::new("cli-sat-token");
    let file = dir.join("one.cm");
    std::fs::write(&file, ONE_COUNTER).unwrap();
    let file = file.to_str().unwrap();
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--nats-token", "s3cret"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--nats-token", "wrong"]);
    assert_eq!(code(&o), 5, "{}", text(&o.stderr));
    assert!(
        !text(&o.stderr).contains("wrong"),
        "the token is not echoed"
    );
    // The same token in the URL's user part.
    let in_url = url.replace("nats://", "nats://s3cret@");
    let o = CAMELEON.run(&["run", file, "--nats", &in_url]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    // A user and password: the documented configuration's `run` user.
    drop(nats);
    let conf_dir = TempDir::new("cli-sat-pw");
    let doc = std::fs::read_to_string(test_support::root().join("docs/wire.md")).unwrap();
    let start = doc.find("```conf\n").unwrap() + 8;
    let end = start + doc[start..].find("```").unwrap();
    let conf = doc[start..end]
        .replace("$RUN_PASSWORD", "run-pw")
        .replace("$SATELLITE_PASSWORD", "sat-pw")
        .replace("$WATCHER_PASSWORD", "watch-pw");
    let conf_file = conf_dir.join("nats-server.conf");
    std::fs::write(&conf_file, conf).unwrap();
    let nats = NatsServer::start_with(&["-c", conf_file.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let as_user = |u: &str| nats.url().replace("nats://", &format!("nats://{u}@"));
    let _b = Sat::start_with(
        &as_user("satellite:sat-pw"),
        "pw-b",
        1000,
        &["--ops", "counter"],
    );
    let o = CAMELEON.run(&["run", file, "--nats", &as_user("run:run-pw")]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("run-pw"));
    let o = CAMELEON.run(&["run", file, "--nats", &as_user("run:nope")]);
    assert_eq!(code(&o), 5, "{}", text(&o.stderr));
    assert!(
        !text(&o.stderr).contains("nope"),
        "the password is not echoed: {}",
        text(&o.stderr)
    );
}

#[test]
fn a_satellite_whose_nats_server_is_gone_still_stops_on_sigterm() {
    let nats = server();
    let mut a = Sat::start_with(
        &nats.url(),
        "orphan",
        100,
        &["--ops", "counter", "--drain-ms", "300"],
    );
    drop(nats);
    // It notices and reconnects meanwhile; SIGTERM must still stop it.
    a.proc.signal(Signal::Term);
    a.wait_for("stopping");
    let status = a.proc.wait(WAIT_TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", a.proc.stderr_text());
    assert!(
        a.proc.stderr_text().contains("satellite orphan: stopped"),
        "{}",
        a.proc.stderr_text()
    );
}

/// The arguments of `cli_shout`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ShoutArgs {
    /// What to shout.
    pub text: String,
}

/// Upper-cases `text`: a tool of this test binary, which the `cameleon` binary does not have.
#[tool(name = "cli_shout", effects = none)]
fn cli_shout(args: ShoutArgs) -> Result<String, ToolError> {
    Ok(args.text.to_uppercase())
}

const REMOTE_TOOL: &str = "cameleon: 1\nname: remote-tool\ntools:\n  allow: [cli_shout]\noperators:\n  - id: args\n    type: const\n    params:\n      value: {text: hi}\n  - id: call\n    type: tool\n    params:\n      name: cli_shout\n  - id: out\n    type: sink\nconnections:\n  - from: args.out_data\n    to: call.in_args\n  - from: call.out_result\n    to: out.in_data\n";

#[test]
fn a_tool_only_a_satellite_hosts_can_be_named_in_a_cm_file_with_nats() {
    let nats = server();
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _sat = rt
        .block_on(Satellite::start(
            &NatsOptions::new(url.clone()),
            SatelliteConfig::new("shouter").tools(["cli_shout"]),
        ))
        .unwrap();
    let dir = TempDir::new("cli-sat-tool");
    let file = dir.join("remote_tool.cm");
    std::fs::write(&file, REMOTE_TOOL).unwrap();
    let file = file.to_str().unwrap();
    // Without `--nats`: an unknown tool, and the hint says how to reach a satellite's.
    let o = CAMELEON.run(&["check", file]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("unknown tool `cli_shout` in `tools: allow:`"),
        "{err}"
    );
    assert!(
        err.contains("a satellite may host it: with `--nats URL`"),
        "{err}"
    );
    // With it: valid, and the run calls it on the satellite.
    let o = CAMELEON.run(&["check", file, "--nats", &url]);
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    let v = run_json(&["run", file, "--nats", &url]);
    assert_eq!(v["sinks"]["out"], serde_json::json!(["HI"]), "{v}");
}

/// Posts `text` somewhere (a tool of no declared effects: it counts as acting on the outside
/// world).
#[tool(name = "cli_post")]
fn cli_post(args: ShoutArgs) -> Result<String, ToolError> {
    Ok(format!("posted {}", args.text))
}

#[test]
fn a_remote_tool_that_acts_on_the_world_runs_under_allow_only_when_the_user_grants_it() {
    let nats = server();
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _sat = rt
        .block_on(Satellite::start(
            &NatsOptions::new(url.clone()),
            SatelliteConfig::new("poster").tools(["cli_post"]),
        ))
        .unwrap();
    let dir = TempDir::new("cli-sat-grant");
    let file = dir.join("post.cm");
    std::fs::write(&file, REMOTE_TOOL.replace("cli_shout", "cli_post")).unwrap();
    let file = file.to_str().unwrap();
    // The satellite advertises no effects for it: the `.cm` file's `allow:` cannot let it run,
    // so the run asks a person first (WAITING) and nothing is posted.
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--json"]);
    assert_eq!(code(&o), 6, "{}{}", text(&o.stdout), text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["end"], "WAITING", "{v}");
    assert!(
        v["waiting"][0]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("--grant cli_post")),
        "{v}"
    );
    // The user's grant lets it run on the satellite.
    let v = run_json(&["run", file, "--nats", &url, "--grant", "cli_post"]);
    assert_eq!(v["sinks"]["out"], serde_json::json!(["posted hi"]), "{v}");
}

#[test]
fn a_journaled_run_with_remote_instances_resumes_with_them_remote() {
    let nats = server();
    let url = nats.url();
    let mut a = Sat::start_with(&url, "resume-a", 1000, &["--ops", "counter,delay"]);
    let dir = TempDir::new("cli-sat-resume");
    let file = dir.join("ask.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: ask-between\noperators:\n  - id: zero\n    type: const\n    params:\n      value: 0\n  - id: inc\n    type: counter\n    placement: remote\n  - id: ask\n    type: ask\n    params:\n      prompt: go on?\n  - id: wait\n    type: delay\n    params:\n      ms: 1\n    placement: remote\n  - id: out\n    type: sink\nconnections:\n  - from: zero.out_data\n    to: inc.in_data\n  - from: inc.out_data\n    to: ask.in_context\n  - from: ask.out_data\n    to: wait.in_data\n  - from: wait.out_data\n    to: out.in_data\n",
    )
    .unwrap();
    let db = dir.join("runs.db");
    let (file, db) = (file.to_str().unwrap(), db.to_str().unwrap());
    let o = CAMELEON.run(&["run", file, "--journal", db, "--nats", &url]);
    assert_eq!(
        code(&o),
        6,
        "WAITING: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    a.wait_for("cameleon.op.counter");
    let v = run_json(&["resume", db, "--nats", &url, "--answer", "ask=yes"]);
    assert_eq!(v["sinks"]["out"], serde_json::json!(["yes"]), "{v}");
    // The resumed run fired `wait` on the satellite; `inc` was restored, not fired again.
    a.wait_for("cameleon.op.delay");
    assert_eq!(a.proc.stderr_text().matches("call taken").count(), 2);
}

/// Counts the words of `in_text` that have at least `min_len` letters, and keeps a running
/// total: an operator type of this test binary, which the `cameleon` binary does not link
/// (`examples/satellites/python/satellite.py` hosts its twin).
#[operator(id = "word_tally", family = behavioral)]
pub struct WordTally {
    /// the shortest word counted
    #[param(default = 1)]
    min_len: u64,
    #[input]
    in_text: In<DataString>,
    #[output]
    out_count: Out<DataJSON>,
    total: u64,
}

impl Run for WordTally {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let text = cx.get(Self::in_text)?.0.clone();
        let n = text
            .split_whitespace()
            .filter(|w| w.chars().count() as u64 >= self.min_len)
            .count() as u64;
        self.total += n;
        cx.emit(
            Self::out_count,
            DataJSON(serde_json::json!({"words": n, "total": self.total})),
        );
        Ok(())
    }
}

/// The arguments of `reverse_text`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ReverseArgs {
    /// The text to reverse.
    pub text: String,
}

/// Reverses `text`, character by character.
#[tool(name = "reverse_text", effects = none)]
fn reverse_text(args: ReverseArgs) -> Result<String, ToolError> {
    Ok(args.text.chars().rev().collect())
}

/// A net using an operator type and a tool that only satellites host.
/// A net using an operator type and a tool that only satellites host.
fn polyglot() -> String {
    std::fs::read_to_string(test_support::root().join("examples/satellites/polyglot.cm"))
        .expect("examples/satellites/polyglot.cm")
}

/// Runs POLYGLOT (in `dir`) with `--nats url`: the summary and the trace.
fn run_polyglot(dir: &TempDir, url: &str, tag: &str) -> (Value, String) {
    let file = dir.join("polyglot.cm");
    std::fs::write(&file, polyglot()).unwrap();
    let trace = dir.join(format!("{tag}.jsonl"));
    let o = CAMELEON.run(&[
        "run",
        file.to_str().unwrap(),
        "--nats",
        url,
        "--json",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{tag}: {}{}", text(&o.stdout), text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    (v, std::fs::read_to_string(trace).unwrap())
}

/// An in-process satellite of this test binary hosting `word_tally` and `reverse_text`.
fn rust_twin(rt: &tokio::runtime::Runtime, url: &str) -> Satellite {
    rt.block_on(Satellite::start(
        &NatsOptions::new(url),
        SatelliteConfig::new("twin")
            .ops(["word_tally"])
            .tools(["reverse_text"]),
    ))
    .unwrap()
}

#[test]
fn an_operator_type_only_a_satellite_hosts_is_checked_and_placed_from_its_description() {
    let nats = server();
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _twin = rust_twin(&rt, &url);
    let dir = TempDir::new("cli-sat-types");
    let (v, _) = run_polyglot(&dir, &url, "rust");
    assert_eq!(
        v["sinks"]["out"],
        serde_json::json!([[{"words": 4, "total": 4}, {"words": 2, "total": 6}]]),
        "{v}"
    );
    assert_eq!(
        v["sinks"]["reversed"],
        serde_json::json!(["noélémac"]),
        "{v}"
    );
    let file = dir.join("polyglot.cm");
    let file = file.to_str().unwrap();
    // Without `--nats`: an unknown type, whose hint says a satellite may host it.
    let o = CAMELEON.run(&["check", file]);
    assert_eq!(code(&o), 2);
    let err = text(&o.stderr);
    assert!(err.contains("unknown operator type `word_tally`"), "{err}");
    assert!(err.contains("a satellite may host it"), "{err}");
    // With it, `check` validates the params against the satellite's schema…
    let o = CAMELEON.run(&["check", file, "--nats", &url]);
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    let bad = dir.join("bad.cm");
    std::fs::write(&bad, polyglot().replace("min_len: 2", "min_len: two")).unwrap();
    let o = CAMELEON.run(&["check", bad.to_str().unwrap(), "--nats", &url]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("do not match the schema its satellite gives"),
        "{}",
        text(&o.stderr)
    );
    // …and its ports: a connection of the wrong type is refused as for a local type.
    let wrong = dir.join("wrong.cm");
    std::fs::write(
        &wrong,
        polyglot().replace(
            "from: both.out_data\n    to: tally.in_text",
            "from: args.out_data\n    to: tally.in_text",
        ),
    )
    .unwrap();
    let o = CAMELEON.run(&["check", wrong.to_str().unwrap(), "--nats", &url]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("DataJSON") && text(&o.stderr).contains("DataString"),
        "{}",
        text(&o.stderr)
    );
    // An instance of such a type must be placed remote.
    let local = dir.join("local.cm");
    std::fs::write(&local, polyglot().replace("    placement: remote\n", "")).unwrap();
    let o = CAMELEON.run(&["run", local.to_str().unwrap(), "--nats", &url]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("`tally` (word_tally)")
            && text(&o.stderr).contains("placement: remote"),
        "{}",
        text(&o.stderr)
    );
}

/// The Python of the tests' environment, with nats-py (`scripts/packages` makes it).
fn python() -> std::path::PathBuf {
    let venv = std::env::var_os("CAMELEON_VENV")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| test_support::root().join("target/venv"));
    let py = venv.join("bin/python");
    let ok = py.is_file()
        && std::process::Command::new(&py)
            .args(["-c", "import nats"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the Python satellite needs Python with nats-py: run scripts/packages (it makes {} with nats-py from PyPI)",
        venv.display()
    );
    py
}

#[test]
fn a_python_satellite_written_from_the_wire_document_runs_a_net_as_its_rust_twin_does() {
    let nats = server();
    let url = nats.url();
    let dir = TempDir::new("cli-sat-python");
    // The net on the Rust twin, which then leaves.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let twin = rust_twin(&rt, &url);
    let (rust, rust_trace) = run_polyglot(&dir, &url, "rust");
    rt.block_on(twin.shutdown());
    // The same net on the Python satellite, under the same name.
    let script = test_support::root().join("examples/satellites/python/satellite.py");
    let mut py = test_support::Cmd::new(python())
        .arg(&script)
        .args(["--nats", &url, "--name", "twin", "--heartbeat-ms", "200"])
        .spawn();
    py.wait_stderr("the Python satellite serving", WAIT_TIMEOUT, |t| {
        t.contains("satellite twin: serving")
    });
    let (python, python_trace) = run_polyglot(&dir, &url, "python");
    assert_eq!(python["sinks"], rust["sinks"], "{python}");
    assert_eq!(python_trace, rust_trace, "the traces differ");
    assert_eq!(python["sinks"]["reversed"], serde_json::json!(["noélémac"]));
    // `cameleon satellites` lists it like any other.
    let o = CAMELEON.run(&["satellites", "--nats", &url, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["ops"], serde_json::json!(["word_tally"]), "{v}");
    assert_eq!(v[0]["tools"], serde_json::json!(["reverse_text"]), "{v}");
    py.signal(Signal::Term);
    let status = py.wait(WAIT_TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", py.stderr_text());
}

#[test]
fn an_approve_tool_of_a_remote_firing_is_asked_at_the_run_before_anything_is_sent() {
    let nats = server();
    let url = nats.url();
    let mut a = Sat::start_with(
        &url,
        "approve-a",
        1000,
        &["--ops", "tool", "--tools", "calc"],
    );
    let dir = TempDir::new("cli-sat-approve");
    let file = dir.join("approve.cm");
    std::fs::write(
        &file,
        "cameleon: 1\nname: approve\ntools:\n  approve: [calc]\noperators:\n  - id: args\n    type: const\n    params:\n      value: {expr: 6 * 7}\n  - id: sum\n    type: tool\n    params:\n      name: calc\n    placement: remote\n  - id: out\n    type: sink\nconnections:\n  - from: args.out_data\n    to: sum.in_args\n  - from: sum.out_result\n    to: out.in_data\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    // Nobody answers: the run waits, and nothing was sent.
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--json"]);
    assert_eq!(code(&o), 6, "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(
        text(&o.stdout).contains("allow tool `calc`"),
        "{}",
        text(&o.stdout)
    );
    // Refused: the satellite is told so and runs nothing.
    let o = CAMELEON.run(&["run", file, "--nats", &url, "--answer", "sum=false"]);
    assert_eq!(code(&o), 5, "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(
        text(&o.stdout).contains("a person denied the call"),
        "{}",
        text(&o.stdout)
    );
    // Approved at the run: the approval travels with the firing and the satellite runs it.
    let v = run_json(&["run", file, "--nats", &url, "--answer", "sum=true"]);
    assert_eq!(v["sinks"]["out"], serde_json::json!([42]), "{v}");
    a.wait_for("call taken");
    assert_eq!(
        a.proc.stderr_text().matches("call taken").count(),
        2,
        "the refused firing and the approved one"
    );
}

#[test]
fn a_satellite_told_to_want_approval_runs_a_tool_only_with_the_one_the_run_obtained() {
    let nats = server();
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _sat = rt
        .block_on(Satellite::start(
            &NatsOptions::new(url.clone()),
            SatelliteConfig::new("careful")
                .tools(["cli_shout"])
                .approve(["cli_shout"]),
        ))
        .unwrap();
    let dir = TempDir::new("cli-sat-wants-approval");
    let file = dir.join("shout.cm");
    // The net lets it run unasked: the satellite refuses, naming what it wants.
    std::fs::write(&file, REMOTE_TOOL).unwrap();
    let o = CAMELEON.run(&["run", file.to_str().unwrap(), "--nats", &url]);
    assert_eq!(code(&o), 5, "{}{}", text(&o.stdout), text(&o.stderr));
    let all = text(&o.stdout) + &text(&o.stderr);
    assert!(
        all.contains("runs it only with a person's approval obtained by the run"),
        "{all}"
    );
    // Under `approve:`, asked at the run, approved: the approval travels and the tool runs.
    std::fs::write(
        &file,
        REMOTE_TOOL.replace("allow: [cli_shout]", "approve: [cli_shout]"),
    )
    .unwrap();
    let o = CAMELEON.run(&["run", file.to_str().unwrap(), "--nats", &url]);
    assert_eq!(
        code(&o),
        6,
        "asked first: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v = run_json(&[
        "run",
        file.to_str().unwrap(),
        "--nats",
        &url,
        "--answer",
        "call=true",
    ]);
    assert_eq!(v["sinks"]["out"], serde_json::json!(["HI"]), "{v}");
}

#[test]
fn serve_fires_remote_instances_on_satellites_and_its_history_says_where_each_ran() {
    let nats = server();
    let url = nats.url();
    let _a = Sat::start_with(&url, "serve-a", 1000, &["--ops", "counter,accumulator"]);
    let dir = TempDir::new("cli-sat-serve");
    let file = dir.join("counter.cm");
    std::fs::write(&file, COUNTER).unwrap();
    let serve = test_support::Serve::start(CAMELEON, &file, &["--nats", &url]);
    // Step until the net ends (each Step fires one step, remote instances on the satellite).
    for _ in 0..100 {
        let (code, v) = serve.post("/api/step", "{}");
        assert_eq!(code, 200, "{v}");
        let (_, s) = serve.get("/api/state");
        if s["end"] == "COMPLETED" {
            break;
        }
    }
    let (_, s) = serve.get("/api/state");
    assert_eq!(s["end"], "COMPLETED", "{s}");
    let (_, h) = serve.get("/api/history");
    let mut remote = 0;
    for e in h["entries"].as_array().unwrap() {
        let ops = e["ops"].as_array().unwrap();
        let on = e["ran_on"].as_array().cloned().unwrap_or_default();
        for (i, op) in ops.iter().enumerate() {
            let where_ = on.get(i).cloned().unwrap_or(Value::Null);
            match op.as_str().unwrap() {
                "inc" | "collect" => {
                    assert_eq!(where_, "serve-a", "{e}");
                    remote += 1;
                }
                _ => assert!(where_.is_null(), "{e}"),
            }
        }
    }
    assert_eq!(
        remote, 10,
        "inc and collect fired 5 times each, on the satellite: {h}"
    );
}

#[test]
fn remote_instances_inside_subnet_and_map_inner_nets_fire_on_satellites() {
    let nats = server();
    let url = nats.url();
    let mut a = Sat::start_with(&url, "inner-a", 1000, &["--ops", "counter"]);
    let dir = TempDir::new("cli-sat-inner");
    std::fs::write(
        dir.join("inc.cm"),
        "cameleon: 1\nname: inc\noperators:\n  - id: n\n    type: input\n    params:\n      name: n\n  - id: inc\n    type: counter\n    placement: remote\n  - id: m\n    type: output\n    params:\n      name: m\nconnections:\n  - from: n.out_data\n    to: inc.in_data\n  - from: inc.out_data\n    to: m.in_data\n",
    )
    .unwrap();
    let outer = dir.join("outer.cm");
    std::fs::write(
        &outer,
        "cameleon: 1\nname: outer\noperators:\n  - id: one\n    type: const\n    params:\n      value: 1\n  - id: sub\n    type: subnet\n    params:\n      net: inc.cm\n  - id: single\n    type: sink\n  - id: items\n    type: const\n    params:\n      value: [1, 2, 3]\n  - id: each\n    type: map\n    params:\n      net: inc.cm\n  - id: all\n    type: sink\nconnections:\n  - from: one.out_data\n    to: sub.in_n\n  - from: sub.out_m\n    to: single.in_data\n  - from: items.out_data\n    to: each.in_items\n  - from: each.out_results\n    to: all.in_data\n",
    )
    .unwrap();
    let v = run_json(&["run", outer.to_str().unwrap(), "--nats", &url]);
    assert_eq!(v["sinks"]["single"], serde_json::json!([2]), "{v}");
    assert_eq!(v["sinks"]["all"], serde_json::json!([[2, 3, 4]]), "{v}");
    // The sub-net's one firing and the map's three items: all on the satellite.
    for _ in 0..4 {
        a.wait_for("cameleon.op.counter");
    }
    assert_eq!(a.proc.stderr_text().matches("call taken").count(), 4);
}

/// A net of an operator type and a tool only satellites host, stopped mid-way by an `ask`: the
/// first text is tallied and the tool called before the run waits; the answer is tallied after.
const RESUMABLE: &str = "cameleon: 1
name: resumable
tools:
  allow: [reverse_text]
operators:
  - id: first
    type: source
    params:
      value: the quick brown fox
  - id: second
    type: source
    params:
      value: a lazy dog
  - id: gate
    type: ask
    params:
      prompt: another text?
  - id: both
    type: merge
  - id: tally
    type: word_tally
    params:
      min_len: 2
    placement: remote
  - id: counts
    type: accumulator
    params:
      n: 2
  - id: out
    type: sink
  - id: args
    type: const
    params:
      value: {text: caméléon}
  - id: rev
    type: tool
    params:
      name: reverse_text
  - id: reversed
    type: sink
connections:
  - from: first.out_data
    to: both.in_a
  - from: second.out_data
    to: gate.in_context
  - from: gate.out_data
    to: both.in_b
  - from: both.out_data
    to: tally.in_text
  - from: tally.out_count
    to: counts.in_data
  - from: counts.out_data
    to: out.in_data
  - from: args.out_data
    to: rev.in_args
  - from: rev.out_result
    to: reversed.in_data
";

#[test]
fn a_journaled_run_of_a_satellites_own_type_and_tool_resumes_with_nats_without_repeating_them() {
    let nats = server();
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let twin = rust_twin(&rt, &url);
    let dir = TempDir::new("cli-sat-resume-own");
    let file = dir.join("resumable.cm");
    std::fs::write(&file, RESUMABLE).unwrap();
    let db = dir.join("runs.db");
    let trace = dir.join("resumed.jsonl");
    let first = dir.join("first.jsonl");
    let (file, db) = (file.to_str().unwrap(), db.to_str().unwrap());
    // The run tallies the first text and calls the tool on the satellite, then waits.
    let o = CAMELEON.run(&[
        "run",
        file,
        "--journal",
        db,
        "--nats",
        &url,
        "--json",
        "--trace",
        first.to_str().unwrap(),
    ]);
    assert_eq!(
        code(&o),
        6,
        "WAITING: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_eq!(
        twin.executions(),
        2,
        "one tally, one tool call before the stop"
    );
    // Without `--nats`, the stored net does not load: its type is unknown here, and the error
    // says a satellite may host it.
    let o = CAMELEON.run(&["resume", db, "--answer", "gate=one two three"]);
    assert_eq!(code(&o), 2, "{}{}", text(&o.stdout), text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("unknown operator type `word_tally`"), "{err}");
    assert!(err.contains("unknown tool `reverse_text`"), "{err}");
    assert!(err.contains("a satellite may host it"), "{err}");
    assert_eq!(twin.executions(), 2, "a refused resume runs nothing");
    // With it, the run goes on: the tally's state (4 words so far) comes back from the journal,
    // only the answer is tallied on the satellite, and neither the first tally nor the tool
    // call runs again.
    let v = run_json(&[
        "resume",
        db,
        "--nats",
        &url,
        "--answer",
        "gate=one two three",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(v["end"], "COMPLETED", "{v}");
    assert_eq!(
        v["sinks"]["out"],
        serde_json::json!([[{"words": 4, "total": 4}, {"words": 3, "total": 7}]]),
        "{v}"
    );
    assert_eq!(
        twin.executions(),
        3,
        "the resumed run tallied the answer alone"
    );
    // The resumed trace is the whole run's: the steps of the first run, then the answer's.
    let first = std::fs::read_to_string(&first).unwrap();
    let resumed = std::fs::read_to_string(&trace).unwrap();
    let before: Vec<&str> = first
        .lines()
        .filter(|l| l.starts_with("{\"step\""))
        .collect();
    let after: Vec<&str> = resumed.lines().collect();
    assert_eq!(before.len(), 8, "{first}");
    assert_eq!(after[..8], before[..], "{resumed}");
    assert!(after[8].contains("\"op\":\"gate\""), "{resumed}");
    assert_eq!(
        after
            .iter()
            .filter(|l| l.contains("\"op\":\"tally\""))
            .count(),
        2,
        "{resumed}"
    );
}
