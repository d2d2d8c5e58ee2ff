//! The page shows what the net produced, in a real browser ([`browser`]): after Run on
//! `examples/rag.cm` the answer is on screen in the Outputs panel without hovering anything,
//! with the run's tokens; clicking the model's operator shows its prompt, answer and tokens
//! from the history, clicking a connection its value; the net opens fitted to its pane.

mod browser;

use serde_json::{Value, json};
use test_support::{Bin, Serve};

use browser::{browser, click, examples, js, screenshot, settled, until};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// Whether the element `css` is on screen: displayed, not empty, inside the window.
async fn on_screen(c: &fantoccini::Client, css: &str) -> Value {
    js(
        c,
        &format!(
            "const e = document.querySelector({css:?}); if (!e) return 'missing'; const r = e.getBoundingClientRect(); \
             return e.checkVisibility() && r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 \
             && r.bottom <= innerHeight && r.right <= innerWidth;"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_run_the_answer_is_on_screen_and_the_model_firing_can_be_inspected() {
    let rag = examples().join("rag.cm");
    let expected = test_support::json(&CAMELEON.run(&["run", rag.to_str().unwrap(), "--json"]));
    let answer = expected["sinks"]["out"][0].as_str().unwrap().to_owned();
    let server = Serve::start(CAMELEON, &rag, &[]);
    let url = server.url().to_owned();
    let (_driver, _profile, c) = browser("rag").await;
    c.goto(&url).await.unwrap();
    until(&c, "the page ready", "document.body.dataset.ready === '1'").await;

    // Fitted: the whole drawing inside its pane, as large as the pane allows.
    let fit = js(
        &c,
        "const v = document.getElementById('visual').getBoundingClientRect(); \
         const s = document.querySelector('#visual svg'); const b = s.getBoundingClientRect(); \
         const box = s.viewBox.baseVal; const scale = Math.min(v.width / box.width, v.height / box.height); \
         return {inside: b.left >= v.left - 1 && b.top >= v.top - 1 && b.right <= v.right + 1 && b.bottom <= v.bottom + 1, \
                 fills: Math.abs(b.width - v.width) < 2 || Math.abs(b.height - v.height) < 2, scale};",
    )
    .await;
    assert_eq!(
        (&fit["inside"], &fit["fills"]),
        (&json!(true), &json!(true)),
        "{fit}"
    );
    until(
        &c,
        "the empty sink",
        "document.querySelector('#outputs .sink[data-op=\"out\"]')",
    )
    .await;
    assert_eq!(
        js(
            &c,
            "return document.querySelector('#outputs .sink[data-op=\"out\"]').dataset.count;"
        )
        .await,
        "0"
    );

    click(&c, "#run").await;
    until(
        &c,
        "COMPLETED",
        "document.getElementById('status').textContent.includes('COMPLETED')",
    )
    .await;
    let v = settled(&c).await["version"].as_u64().unwrap();
    until(
        &c,
        "the outputs of the final state",
        &format!("Number(document.body.dataset.outputsVersion) >= {v}"),
    )
    .await;
    // The answer, as `run` prints it, is on screen — nothing hovered, the tooltip hidden.
    let shown = js(
        &c,
        "return document.querySelector('#outputs .sink[data-op=\"out\"] pre.value').textContent;",
    )
    .await;
    assert_eq!(shown, json!(answer));
    assert_eq!(
        on_screen(&c, "#outputs .sink[data-op=\"out\"] pre.value").await,
        true
    );
    assert_eq!(
        js(&c, "return document.getElementById('tooltip').hidden;").await,
        true
    );
    let usage = js(&c, "return document.getElementById('usage').textContent;").await;
    let completion = expected["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(
        usage
            .as_str()
            .unwrap()
            .contains(&format!(" + {completion} completion")),
        "{usage}"
    );
    screenshot(&c, "rag_outputs.png").await;

    // The model's operator: its prompt, its answer and its tokens.
    click(&c, "#visual g[data-op=\"answer\"]").await;
    until(
        &c,
        "the answer firing in the inspector",
        "document.querySelector('#inspector[data-name=\"answer\"] pre.answer')",
    )
    .await;
    let inspected = js(
        &c,
        "const i = document.getElementById('inspector'); return { \
           answer: i.querySelector('pre.answer').textContent, \
           user: i.querySelector('pre.message[data-role=\"user\"]').textContent, \
           passages: i.querySelectorAll('pre.passage').length, \
           text: i.textContent };",
    )
    .await;
    assert_eq!(inspected["answer"], json!(answer));
    assert_eq!(inspected["user"], "user: Why do chameleons change colour?");
    assert_eq!(inspected["passages"], 3);
    assert!(
        inspected["text"]
            .as_str()
            .unwrap()
            .contains(&format!("{completion} completion tokens")),
        "{inspected}"
    );
    assert_eq!(
        js(&c, "return document.querySelector('#visual g[data-op=\"answer\"]').classList.contains('selected');").await,
        true
    );
    screenshot(&c, "rag_inspect_answer.png").await;

    // A connection: its type and value.
    c.execute(
        "document.querySelector('#visual path[data-hit=\"question.out_data -> answer.in_prompt\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}));",
        vec![],
    )
    .await
    .unwrap();
    until(
        &c,
        "the connection in the inspector",
        "document.querySelector('#inspector[data-kind=\"connection\"] pre.value')",
    )
    .await;
    let value = js(
        &c,
        "return document.querySelector('#inspector pre.value').textContent;",
    )
    .await;
    assert_eq!(value, "Why do chameleons change colour?");
    c.close().await.unwrap();
}
