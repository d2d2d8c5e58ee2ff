//! `cameleon serve` in a real browser: Debian's `chromium` driven through `chromedriver` by
//! fantoccini ([`browser`]). Every page is opened at the address the server printed, token
//! included: the page trades it for its cookie. Steps and goes back on a fork/join net and
//! checks every connection's `data-state` against `Cvm::state_of`; loads, streams and steps
//! with a token of `+ / = % &`; edits the Code view and sees the problem at its line; answers
//! an `ask` through the page; measures page readiness on a 200-operator net and the
//! event-to-screen latency of a 10 000-step run (printed, not asserted), and checks that run's
//! flushes: never more than 256 engine events each, the rest summed up.
//!
//! A missing browser fails the test with the command that installs it.

mod browser;

use fantoccini::Locator;
use serde_json::{Value, json};
use test_support::{Bin, Serve, TempDir};

use browser::{
    browser, click, examples, js, page_states, screenshot, server_state, settled, until,
};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_steps_and_goes_back_in_step_with_the_engine() {
    let dir = TempDir::new("serve-browser-fork-join");
    let file = dir.join("fork_join.cm");
    std::fs::copy(examples().join("fork_join.cm"), &file).unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let url = server.url().to_owned();
    let (_driver, _profile, c) = browser("fork-join").await;

    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;
    // A second tab, open before anything happens: it follows through the event stream only.
    let first = c.window().await.unwrap();
    let second = c.new_window(true).await.unwrap();
    c.switch_to_window(second.handle.clone()).await.unwrap();
    c.goto(&url).await.unwrap();
    until(
        &c,
        "the second tab ready",
        "document.body.dataset.ready === '1'",
    )
    .await;
    c.switch_to_window(first).await.unwrap();

    for k in 1..=3 {
        click(&c, "#step").await;
        until(
            &c,
            &format!("step {k}"),
            &format!("document.body.dataset.step === '{k}'"),
        )
        .await;
    }
    click(&c, "#back").await;
    until(&c, "back at step 2", "document.body.dataset.step === '2'").await;
    let state = settled(&c).await;
    assert_eq!(state["step"], 2);

    // The engine, stepped twice, as the truth.
    let net = cameleon::Net::from_cm_file(&file).unwrap();
    let names: Vec<String> = net.connections().iter().map(|c| c.name.clone()).collect();
    let mut cvm = cameleon::Cvm::new(net);
    cvm.step().unwrap();
    cvm.step().unwrap();
    let shown = page_states(&c).await;
    assert_eq!(
        shown.as_object().unwrap().len(),
        names.len(),
        "one path per connection: {shown}"
    );
    for name in &names {
        let expected = match cvm.state_of(name).unwrap().state {
            cameleon::connection::ConnState::Empty => "EMPTY",
            cameleon::connection::ConnState::New => "NEW",
            cameleon::connection::ConnState::Old => "OLD",
        };
        assert_eq!(shown[name], expected, "`{name}` on the page: {shown}");
    }
    assert!(
        shown.as_object().unwrap().values().any(|v| v == "NEW"),
        "after 2 steps some token is NEW: {shown}"
    );
    // Enabled operators are marked.
    let enabled = js(&c, "return [...document.querySelectorAll('#visual g[data-op].enabled')].map(g => g.getAttribute('data-op'));").await;
    assert_eq!(enabled, json!(cvm.fireable()));
    screenshot(&c, "fork_join_step2.png").await;

    // The second tab saw the same, through events alone.
    c.switch_to_window(second.handle).await.unwrap();
    until(
        &c,
        "the second tab at step 2",
        "document.body.dataset.step === '2'",
    )
    .await;
    settled(&c).await;
    assert_eq!(
        page_states(&c).await,
        shown,
        "the second tab shows the same marking"
    );
    c.close_window().await.unwrap();
    let remaining = c.windows().await.unwrap();
    c.switch_to_window(remaining[0].clone()).await.unwrap();

    // The timeline lists the steps; clicking step 1 goes there.
    until(
        &c,
        "the timeline",
        "document.querySelector('#timeline li[data-step=\"2\"].current')",
    )
    .await;
    click(&c, "#timeline li[data-step=\"1\"]").await;
    until(&c, "step 1", "document.body.dataset.step === '1'").await;

    // Code view: an unknown port, typed in, is shown at its line.
    click(&c, "#view-code").await;
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = text.replacen("from: copy.out_a", "from: copy.out_x", 1);
    let line = edited
        .lines()
        .position(|l| l.contains("copy.out_x"))
        .unwrap()
        + 1;
    c.execute(
        "const e = document.getElementById('editor'); e.value = arguments[0]; e.dispatchEvent(new Event('input'));",
        vec![json!(edited)],
    )
    .await
    .unwrap();
    until(
        &c,
        &format!("a problem at line {line}"),
        &format!("document.querySelector('#gutter .line.problem[data-line=\"{line}\"]')"),
    )
    .await;
    let problem = js(
        &c,
        &format!(
            "return document.querySelector('#problems li[data-line=\"{line}\"]').textContent;"
        ),
    )
    .await;
    let problem = problem.as_str().unwrap();
    assert!(problem.contains("has no output `out_x`"), "{problem}");
    assert!(problem.contains("did you mean `out_a`?"), "{problem}");
    screenshot(&c, "fork_join_code_problem.png").await;
    // Nothing was written: only Save writes, and only a valid net.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_reserved_characters_opens_the_page_which_streams_and_steps() {
    let dir = TempDir::new("serve-browser-token");
    let file = dir.join("fork_join.cm");
    std::fs::copy(examples().join("fork_join.cm"), &file).unwrap();
    let server = Serve::start(CAMELEON, &file, &["--token", "a+b/c=d%e&f"]);
    let url = server.url().to_owned();
    assert!(url.ends_with("/?token=a%2Bb%2Fc%3Dd%25e%26f"), "{url}");
    let (_driver, _profile, c) = browser("token").await;
    c.goto(&url).await.unwrap();
    // The page loaded: its script and style came with the cookie the address was traded for.
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;
    assert_eq!(
        js(&c, "return location.pathname + location.search;").await,
        "/",
        "the token left the address bar"
    );
    assert_eq!(
        js(
            &c,
            "return getComputedStyle(document.querySelector('header')).display;"
        )
        .await,
        "flex",
        "page.css applied"
    );
    assert_eq!(
        js(&c, "return document.cookie;").await,
        "",
        "the cookie is HttpOnly: the page's scripts never see the token"
    );
    // The event stream runs: the state comes through it, then a step's events and state.
    until(
        &c,
        "a state from the stream",
        "window.cameleon.streamVersion >= 0",
    )
    .await;
    click(&c, "#step").await;
    until(&c, "step 1", "document.body.dataset.step === '1'").await;
    let v = settled(&c).await["version"].as_u64().unwrap();
    until(
        &c,
        "step 1 through the stream",
        &format!("window.cameleon.streamVersion >= {v} && window.cameleon.events >= 4"),
    )
    .await;
    assert_eq!(server_state(&c).await["step"], 1);
    // A second page load with the cookie alone, no token in the address.
    c.goto(&format!("http://{}/", server.addr())).await.unwrap();
    until(
        &c,
        "the page ready again",
        "document.body.dataset.ready === '1'",
    )
    .await;
    assert_eq!(js(&c, "return document.body.dataset.step;").await, "1");
    screenshot(&c, "token_reserved_characters.png").await;
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_answered_through_the_page() {
    let dir = TempDir::new("serve-browser-ask");
    let file = dir.join("ask.cm");
    std::fs::copy(examples().join("ask.cm"), &file).unwrap();
    let server = Serve::start(CAMELEON, &file, &[]);
    let url = server.url().to_owned();
    let (_driver, _profile, c) = browser("ask").await;
    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;

    click(&c, "#run").await;
    until(
        &c,
        "WAITING",
        "document.getElementById('status').textContent.includes('WAITING')",
    )
    .await;
    until(
        &c,
        "the question",
        "document.querySelector('.ask[data-op=\"approve\"]')",
    )
    .await;
    let context = js(
        &c,
        "return document.querySelector('.ask[data-op=\"approve\"] .context').textContent;",
    )
    .await;
    assert_eq!(context, json!("\"Dear Grace, the pipeline is ready.\""));
    screenshot(&c, "ask_waiting.png").await;

    // A wrong answer is refused on the page; the run stays WAITING.
    c.execute(
        "fetch('/api/provide/approve', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({value: 'sure'})}).then(r => r.json()).then(j => window.refused = j);",
        vec![],
    )
    .await
    .unwrap();
    until(&c, "the refusal", "window.refused").await;
    let refused = js(&c, "return window.refused.error;").await;
    assert!(
        refused.as_str().unwrap().contains("is not a DataBool"),
        "{refused}"
    );
    assert_eq!(server_state(&c).await["end"], "WAITING");

    click(
        &c,
        ".ask[data-op=\"approve\"] .provide[data-value=\"true\"]",
    )
    .await;
    until(&c, "the reviewer's question alone", "document.querySelectorAll('.ask').length === 1 && document.querySelector('.ask[data-op=\"reviewer\"]')").await;
    let input = c
        .find(Locator::Css(".ask[data-op=\"reviewer\"] input.answer"))
        .await
        .unwrap();
    input.send_keys("Ada").await.unwrap();
    click(&c, ".ask[data-op=\"reviewer\"] .provide").await;
    until(
        &c,
        "COMPLETED",
        "document.getElementById('status').textContent.includes('COMPLETED')",
    )
    .await;
    let state = settled(&c).await;
    assert_eq!(state["end"], "COMPLETED");
    assert_eq!(
        state["values"]["reviewer.out_data -> reviewers.in_data"],
        json!("\"Ada\"")
    );
    assert_eq!(
        state["values"]["send.out_true -> sent.in_data"],
        json!("\"Dear Grace, the pipeline is ready.\"")
    );
    screenshot(&c, "ask_answered.png").await;

    // Going back over the answers and forward again replays them: nobody is asked.
    for _ in 0..3 {
        click(&c, "#back").await;
    }
    click(&c, "#run").await;
    until(
        &c,
        "COMPLETED again",
        "document.getElementById('status').textContent.includes('COMPLETED')",
    )
    .await;
    assert_eq!(settled(&c).await["waiting"], json!([]));
    c.close().await.unwrap();
}

/// Run in the page: a second subscription to the event stream that records each flush (the
/// engine events between two `state` messages, and where a `coalesced` summary came), and a
/// count of the states the page's own `receive` gets.
const FLUSH_PROBE: &str = "
const f = (window.flushes = { batches: [], receives: 0, version: -1, current: { events: 0, skipped: null, marker_at: null } });
const es = new EventSource('/api/events');
es.onmessage = (m) => {
  const e = JSON.parse(m.data);
  if (e.event === 'coalesced') {
    f.current.skipped = e.skipped;
    f.current.marker_at = f.current.events;
  } else {
    f.current.events++;
  }
};
es.addEventListener('state', (m) => {
  f.version = Math.max(f.version, JSON.parse(m.data).version);
  f.batches.push(f.current);
  f.current = { events: 0, skipped: null, marker_at: null };
});
const receive = window.receive;
window.receive = function (s) {
  f.receives++;
  return receive(s);
};
return 0;
";

/// A net of `n` operators: a source, a fork into `n/4` chains of transforms, merged pairwise
/// into sinks.
fn big_net(n: usize) -> String {
    let chains = 12;
    let per = (n - 2 - chains) / chains;
    let mut ops = String::from("  - {id: src, type: source, params: {value: x}}\n");
    ops.push_str(&format!(
        "  - {{id: split, type: fork, params: {{arity: {chains}}}}}\n"
    ));
    let mut conns = String::from("  - {from: src.out_data, to: split.in_data}\n");
    for c in 0..chains {
        let letter = (b'a' + c as u8) as char;
        let mut prev = format!("split.out_{letter}");
        for i in 0..per {
            ops.push_str(&format!("  - {{id: t{c}_{i}, type: transform}}\n"));
            conns.push_str(&format!("  - {{from: {prev}, to: t{c}_{i}.in_data}}\n"));
            prev = format!("t{c}_{i}.out_data");
        }
        ops.push_str(&format!("  - {{id: out{c}, type: sink}}\n"));
        conns.push_str(&format!("  - {{from: {prev}, to: out{c}.in_data}}\n"));
    }
    format!("name: big\noperators:\n{ops}connections:\n{conns}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn performance_figures_of_the_page() {
    // Page ready for a 200-operator net.
    let dir = TempDir::new("serve-browser-perf");
    let file = dir.join("big.cm");
    let text = big_net(200);
    std::fs::write(&file, &text).unwrap();
    let ops = cameleon::Net::from_cm(&text).unwrap().operators().len();
    assert!(ops >= 190, "{ops} operators");
    let server = Serve::start(CAMELEON, &file, &[]);
    let url = server.url().to_owned();
    let (_driver, _profile, c) = browser("perf").await;
    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;
    let ready = js(&c, "return window.cameleon.readyAt;").await;
    let drawn = js(
        &c,
        "return document.querySelectorAll('#visual g[data-op]').length;",
    )
    .await;
    assert_eq!(drawn, json!(ops));
    eprintln!("figure: page ready for a {ops}-operator net: {ready} ms after navigation start");
    screenshot(&c, "big_net.png").await;
    drop(server);

    // Event-to-screen latency while running a 10 000-step loop.
    let loop_file = dir.join("loop.cm");
    std::fs::write(
        &loop_file,
        "name: spin\noperators:\n  - {id: zero, type: const, params: {value: 0}}\n  - {id: loop, type: merge}\n  - {id: inc, type: counter}\n  - {id: check, type: guard, params: {continue_if: {lt: 3334}}}\n  - {id: done, type: sink}\nconnections:\n  - {from: zero.out_data, to: loop.in_a}\n  - {from: check.out_continue, to: loop.in_b}\n  - {from: loop.out_data, to: inc.in_data}\n  - {from: inc.out_data, to: check.in_data}\n  - {from: check.out_exit, to: done.in_data}\n",
    )
    .unwrap();
    let server = Serve::start(CAMELEON, &loop_file, &[]);
    let url = server.url().to_owned();
    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;
    // A listener of the test's own on the same event stream records every flush: the engine
    // events of each batch (a batch ends with its `state`), and the page's `receive` is counted.
    js(&c, FLUSH_PROBE).await;
    until(
        &c,
        "the probe's first state",
        "window.flushes.batches.length >= 1",
    )
    .await;
    js(&c, "window.flushes.batches = []; window.flushes.receives = 0; window.cameleon.latency = {count: 0, last: 0, max: 0, sum: 0}; window.cameleon.renders = 0; return 0;").await;
    click(&c, "#run").await;
    until(
        &c,
        "COMPLETED",
        "document.getElementById('status').textContent.includes('COMPLETED')",
    )
    .await;
    let state = settled(&c).await;
    let steps = state["step"].as_u64().unwrap();
    assert!(steps >= 10_000, "{steps} steps");
    // The final state also comes through the event stream, and is drawn.
    let v = state["version"].as_u64().unwrap();
    until(
        &c,
        "the final state from the stream",
        &format!("window.cameleon.streamVersion >= {v}"),
    )
    .await;
    until(
        &c,
        "the final state drawn",
        &format!("Number(document.body.dataset.version) >= {v}"),
    )
    .await;
    until(
        &c,
        "the final state on the probe's stream",
        &format!("window.flushes.version >= {v}"),
    )
    .await;
    let stats = js(&c, "return window.cameleon;").await;
    let flushes = js(&c, "return window.flushes;").await;
    // Bursts are coalesced, whatever the machine's speed: every flush sends at most 256 engine
    // events — past them, the oldest are summed up in one `coalesced` message first, and then
    // exactly the newest 256 follow — and a run hands its events to the stream a slice at a
    // time, each slice at least 200 steps (of 4 events) unless it is the last, so the flush
    // after the first slice is coalesced. No clock is read.
    let batches = flushes["batches"].as_array().unwrap();
    assert!(!batches.is_empty(), "{flushes}");
    let mut coalesced = 0;
    for b in batches {
        let (events, skipped) = (b["events"].as_u64().unwrap(), &b["skipped"]);
        assert!(events <= 256, "a flush of {events} engine events: {b}");
        if let Some(n) = skipped.as_u64() {
            assert!(
                n > 0 && events == 256,
                "a coalesced flush sends the newest 256: {b}"
            );
            assert_eq!(b["marker_at"], 0, "the summary comes first: {b}");
            coalesced += 1;
        } else {
            assert_eq!(b["marker_at"], Value::Null, "{b}");
        }
    }
    assert!(
        coalesced > 0,
        "no flush of the 10 000-step run was coalesced: {flushes}"
    );
    // The page draws at most once per state it receives (one per flush, and the run's answer).
    let renders = stats["renders"].as_u64().unwrap();
    let receives = flushes["receives"].as_u64().unwrap();
    assert!(
        renders <= receives,
        "{renders} redraws for {receives} states received"
    );
    assert!(
        receives <= batches.len() as u64 + 1,
        "{receives} states received for {} flushes",
        batches.len()
    );
    let l = &stats["latency"];
    let count = l["count"].as_u64().unwrap().max(1);
    eprintln!(
        "figure: {steps}-step run: {} flushes ({coalesced} coalesced), {renders} redraws, {} engine events received; event-to-screen latency mean {:.1} ms, max {} ms, last {} ms",
        batches.len(),
        stats["events"],
        l["sum"].as_f64().unwrap() / count as f64,
        l["max"],
        l["last"],
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_file_opens_on_the_code_view_with_its_problems() {
    let dir = TempDir::new("serve-browser-invalid");
    let file = dir.join("broken.cm");
    let text = std::fs::read_to_string(examples().join("fork_join.cm"))
        .unwrap()
        .replacen("type: format", "type: formatt", 1);
    std::fs::write(&file, &text).unwrap();
    let line = text.lines().position(|l| l.contains("formatt")).unwrap() + 1;
    let server = Serve::start(CAMELEON, &file, &[]);
    let url = server.url().to_owned();
    let (_driver, _profile, c) = browser("invalid").await;
    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;
    assert_eq!(js(&c, "return document.body.dataset.view;").await, "code");
    let problem = js(
        &c,
        &format!(
            "return document.querySelector('#problems li[data-line=\"{line}\"]').textContent;"
        ),
    )
    .await;
    assert!(
        problem
            .as_str()
            .unwrap()
            .contains("unknown operator type `formatt`"),
        "{problem}"
    );
    // The Visual view shows what could be read: every operator, as a sketch.
    click(&c, "#view-split").await;
    let drawn = js(
        &c,
        "return document.querySelectorAll('#visual g[data-op]').length;",
    )
    .await;
    assert_eq!(drawn, json!(9));
    let note = js(
        &c,
        "return document.querySelector('#visual .sketch').textContent;",
    )
    .await;
    assert!(
        note.as_str().unwrap().contains("not a valid net yet"),
        "{note}"
    );
    // Nothing to step until the net is valid.
    assert_eq!(
        js(&c, "return document.getElementById('step').disabled;").await,
        json!(true)
    );
    screenshot(&c, "invalid_split.png").await;
    c.close().await.unwrap();
}
