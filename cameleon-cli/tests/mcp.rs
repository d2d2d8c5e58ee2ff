//! MCP through the real binary (docs/mcp.md): the reference server's tools in `cameleon tools`,
//! `call` and `run`; a project's file that would start a server stops the run before anything
//! starts until the user trusts it (and `check` starts nothing); the servers of a `cameleon`
//! killed with SIGKILL are gone within 2 s; and `cameleon mcp` serving nets to the official
//! Python SDK.

use std::time::{Duration, Instant};

use test_support::mcp::{alive, everything, processes_with};
use test_support::{Bin, Signal, TempDir, code, stderr, stdout};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// A generous cap on waits: it only turns a hang into a failure.
const CAP: Duration = Duration::from_secs(60);

/// The reference server over stdio as `everything`, its command line carrying `marker`.
fn caps_text(marker: &str) -> String {
    format!(
        "mcp:\n  everything: {{command: node, args: [{:?}, stdio, {marker:?}]}}\n",
        everything().display().to_string()
    )
}

const NET: &str = r#"cameleon: 1
name: sum
tools:
  allow: [everything.get-sum]
operators:
  - {id: nums, type: const, params: {value: {a: 20, b: 22}}}
  - {id: sum, type: tool, params: {name: everything.get-sum}}
  - {id: out, type: sink}
connections:
  - {from: nums.out_data, to: sum.in_args}
  - {from: sum.out_result, to: out.in_data}
"#;

#[test]
fn tools_call_and_run_reach_the_reference_servers_tools() {
    let dir = TempDir::new("cli-mcp-run");
    let marker = format!("server-run-{}", std::process::id());
    let caps = dir.write("caps.yaml", caps_text(&marker));
    let caps = caps.to_str().unwrap();

    let o = CAMELEON.run(&["tools", "--json", "--capabilities", caps]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let tools: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let echo = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything.echo")
        .expect("everything.echo listed");
    assert_eq!(echo["effects"], "read");

    let o = CAMELEON.run(&[
        "call",
        "everything.echo",
        r#"{"message": "salut"}"#,
        "--capabilities",
        caps,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(r["content"], "Echo: salut");
    assert_eq!(r["meta"]["origin"], "mcp:everything");

    let net = dir.write("sum.cm", NET);
    let o = CAMELEON.run(&["check", net.to_str().unwrap(), "--capabilities", caps]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = CAMELEON.run(&[
        "run",
        net.to_str().unwrap(),
        "--capabilities",
        caps,
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("The sum of 20 and 22 is 42."),
        "{}",
        stdout(&o)
    );
    // The run ended: its server is gone.
    test_support::wait_until("the server to be gone", CAP, || {
        processes_with(&marker).is_empty()
    });
}

#[test]
fn a_project_file_that_would_start_a_server_stops_the_run_until_trusted_and_check_starts_nothing() {
    let dir = TempDir::new("cli-mcp-trust");
    let config = TempDir::new("cli-mcp-trust-config");
    let marker = format!("server-trust-{}", std::process::id());
    let caps = dir.write("cameleon.yaml", caps_text(&marker));
    let net = dir.write("sum.cm", NET);
    let net = net.to_str().unwrap();

    for cmd in ["check", "run"] {
        let o = CAMELEON
            .cmd()
            .args([cmd, net])
            .config_dir(config.path())
            .run();
        assert_eq!(code(&o), 2, "{cmd}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("MCP server `everything` would run a program")
                && e.contains("cameleon.yaml")
                && e.contains("cameleon trust"),
            "{cmd}: {e}"
        );
        assert!(
            processes_with(&marker).is_empty(),
            "{cmd} started the server"
        );
    }
    // `check` of the trusted file starts nothing either.
    let o = CAMELEON
        .cmd()
        .args(["trust", caps.to_str().unwrap()])
        .config_dir(config.path())
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = CAMELEON
        .cmd()
        .args(["check", net])
        .config_dir(config.path())
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        processes_with(&marker).is_empty(),
        "check started the server"
    );
    let o = CAMELEON
        .cmd()
        .args(["run", net])
        .config_dir(config.path())
        .run();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("The sum of 20 and 22 is 42."),
        "{}",
        stdout(&o)
    );

    // A tool of a server nobody configured is a located error of `check`.
    let other = dir.write(
        "other.cm",
        NET.replace("everything.get-sum", "nowhere.get-sum"),
    );
    let o = CAMELEON
        .cmd()
        .args(["check", other.to_str().unwrap()])
        .config_dir(config.path())
        .run();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("names MCP server `nowhere`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_servers_of_a_cameleon_killed_with_sigkill_are_gone_within_two_seconds() {
    let dir = TempDir::new("cli-mcp-kill");
    let marker = format!("server-kill-{}", std::process::id());
    let keeper = format!("keeper-kill-{}", std::process::id());
    // As `npx` does, the command starts the server under a shell, with a child of its own
    // (`keeper`) that neither reads standard input nor ends by itself: only the end of the
    // whole process group ends it.
    let script = format!(
        "node -e 'setInterval(() => {{}}, 1000)' {keeper} & exec node {} stdio {marker}",
        everything().display()
    );
    let caps = dir.write(
        "caps.yaml",
        format!("mcp:\n  everything: {{command: sh, args: [\"-c\", {script:?}]}}\n"),
    );
    let net = dir.write(
        "long.cm",
        NET.replace(
            "everything.get-sum",
            "everything.trigger-long-running-operation",
        )
        .replace("{a: 20, b: 22}", "{duration: 600, steps: 600}"),
    );
    let mut run = CAMELEON
        .cmd()
        .args([
            "run",
            net.to_str().unwrap(),
            "--capabilities",
            caps.to_str().unwrap(),
        ])
        .spawn();
    let (server, kept) = test_support::wait_for("the server, its child and its guard", CAP, || {
        if let Some(status) = run.try_wait() {
            panic!("the run ended ({status}) before it was killed");
        }
        let (s, k) = (processes_with(&marker), processes_with(&keeper));
        let ([pid], [kept]) = (s.as_slice(), k.as_slice()) else {
            return None;
        };
        let guard = format!("cameleon-mcp-guard\u{0}{pid}\u{0}");
        (!processes_with(&guard).is_empty()).then_some((*pid, *kept))
    });
    run.signal(Signal::Kill);
    let killed = Instant::now();
    test_support::wait_until("the server and its child to be gone", CAP, || {
        !alive(server) && !alive(kept)
    });
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_secs(2),
        "the server outlived cameleon by {took:?}"
    );
}

/// `examples/mcp` of this checkout.
fn examples_mcp() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/mcp")
        .display()
        .to_string()
}

/// What the Python SDK's client saw (`tests/mcp/client.py`).
fn python_client(args: &[&str]) -> serde_json::Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let o = test_support::Cmd::new(test_support::mcp::python())
        .arg(&script)
        .args(args)
        .run();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

fn assert_served(seen: &serde_json::Value) {
    let tools = &seen["tools"];
    for t in ["shout", "calc", "review", "check", "catalogue"] {
        assert!(tools.get(t).is_some(), "{t} not listed: {tools}");
    }
    // Arguments: the inputs, typed by their data types' JSON schemas.
    assert_eq!(
        tools["shout"]["input_schema"]["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(
        tools["shout"]["input_schema"]["required"],
        serde_json::json!(["text"])
    );
    assert_eq!(seen["shout"]["is_error"], false, "{seen}");
    assert_eq!(seen["shout"]["structured"]["loud"], "BONJOUR", "{seen}");
    assert_eq!(seen["calc"]["structured"]["value"], 1024, "{seen}");
    // A net that asks a person: a tool error naming the question.
    assert_eq!(seen["review"]["is_error"], true, "{seen}");
    assert!(
        seen["review"]["text"]
            .as_str()
            .unwrap()
            .contains("Publish this text?"),
        "{seen}"
    );
    assert_eq!(seen["check"]["structured"]["valid"], false, "{seen}");
}

#[test]
fn the_python_sdk_lists_and_calls_the_nets_of_cameleon_mcp_over_stdio() {
    let nets = examples_mcp();
    let seen = python_client(&["stdio", CAMELEON.path(), "mcp", "--nets", &nets]);
    assert_served(&seen);
}

#[test]
fn the_python_sdk_calls_cameleon_mcp_over_streamable_http_with_its_token() {
    let nets = examples_mcp();
    let mut server = CAMELEON
        .cmd()
        .args(["mcp", "--nets", &nets, "--port", "0"])
        .spawn();
    let printed = server.wait_stdout("the endpoint and token", test_support::WAIT_TIMEOUT, |t| {
        t.lines().any(|l| l.starts_with("token "))
    });
    let line = |prefix: &str| {
        printed
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {printed}"))
            .to_owned()
    };
    let (url, token) = (line("MCP endpoint "), line("token "));
    let seen = python_client(&["http", &url, &token]);
    assert_served(&seen);
    // Without the token: 401, and nothing runs.
    let o = test_support::Cmd::new(test_support::mcp::python())
        .args([
            "-c",
            "import sys, httpx2; r = httpx2.post(sys.argv[1], json={}); print(r.status_code)",
            &url,
        ])
        .run();
    assert_eq!(stdout(&o).trim(), "401", "{}", stderr(&o));
    server.signal(Signal::Term);
    let status = server.wait(test_support::WAIT_TIMEOUT);
    assert_eq!(status.code(), Some(0));
}
