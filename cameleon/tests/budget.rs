//! Token and cost budgets (docs/semantics.md §4.7): a run stops in `BUDGET` before the first
//! model request once its budget is spent — no request past it reaches the model —, with what
//! it spent; the stopped firing is not recorded but its tokens count; a raised budget lets the
//! run go on without asking again what was recorded; an agent's turns and the inner runs of
//! sub-nets and maps share the run's budget; a cost budget counts at the models' prices.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cameleon::Event;
use cameleon::capabilities::{CodeSource, Runtime, Section};
use cameleon::cm::Loader;
use cameleon::journal::{Journal, ResumeOptions, RunOptions};
use cameleon::models::Extractive;
use cameleon::operator::capability::{
    Budget, CapFuture, Capabilities, CapabilityError, ChatModel, ChatReply, ChatRequest, Price,
    ToolRequest, Usage, Usd,
};
use cameleon::prelude::*;
use serde_json::json;
use test_support::TempDir;

/// The offline extractive model, counting the requests that reach it.
#[derive(Debug)]
struct Counting {
    inner: Extractive,
    calls: Arc<AtomicUsize>,
}

impl ChatModel for Counting {
    fn kind(&self) -> &str {
        "extractive"
    }
    fn generative(&self) -> bool {
        false
    }
    fn chat<'a>(&'a self, r: &'a ChatRequest) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.chat(r)
    }
}

/// A runtime whose chat model `default` is a counting extractive model; its counter.
fn counting_runtime() -> (Runtime, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let rt = Runtime::builder()
        .source(CodeSource::new("counting", move |b| {
            b.chat(
                "default",
                Arc::new(Counting {
                    inner: Extractive::new(1),
                    calls: Arc::clone(&c),
                }),
            );
            Ok(())
        }))
        .build()
        .unwrap();
    (rt, calls)
}

/// Three questions, each asked of the model by its own `llm`, in order: `a` (step 2), `b`
/// (step 5), `c` (step 8), each answer to its own sink.
fn three_questions(budget: &str) -> Net {
    let text = format!(
        "name: three
config:
  budget: {budget}
operators:
  - {{id: qa, type: source, params: {{value: 'Why do chameleons change colour?'}}}}
  - {{id: a, type: llm}}
  - {{id: outa, type: sink}}
  - {{id: qb, type: source, params: {{value: 'Where do chameleons live?'}}}}
  - {{id: b, type: llm}}
  - {{id: outb, type: sink}}
  - {{id: qc, type: source, params: {{value: 'What do chameleons eat?'}}}}
  - {{id: c, type: llm}}
  - {{id: outc, type: sink}}
connections:
  - {{from: qa.out_data, to: a.in_prompt}}
  - {{from: a.out_text, to: outa.in_data}}
  - {{from: qb.out_data, to: b.in_prompt}}
  - {{from: b.out_text, to: outb.in_data}}
  - {{from: qc.out_data, to: c.in_prompt}}
  - {{from: c.out_text, to: outc.in_data}}
"
    );
    Net::from_cm(&text).unwrap()
}

/// The tokens one question costs the extractive model (it counts words), measured by a run
/// without a budget.
fn tokens_per_question() -> Vec<u64> {
    let (rt, _) = counting_runtime();
    let net = three_questions("{tokens: 1000000}");
    let mut cvm = rt.cvm(net, ".").build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    [2, 5, 8]
        .into_iter()
        .map(|step| {
            let u = cvm
                .history()
                .state_after(step, 0)
                .and_then(cameleon::ops::ai::usage_in)
                .expect("the extractive model reports usage");
            u.prompt_tokens + u.completion_tokens
        })
        .collect()
}

#[test]
fn a_run_stops_in_budget_before_the_first_request_past_it_and_reports_what_it_spent() {
    let per = tokens_per_question();
    // Enough for the first question, not for the first two: the second request starts (the
    // budget is not spent yet), the third does not.
    let budget = per[0] + 1;
    let (rt, calls) = counting_runtime();
    let net = three_questions(&format!("{{tokens: {budget}}}"));
    let mut cvm = rt.cvm(net, ".").build();
    let end = cvm.run().unwrap();
    let EndState::Budget { op, limit, usage } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(op, "c", "the third request is the one refused");
    assert_eq!(limit.tokens, Some(budget));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "no request after the budget"
    );
    assert_eq!(usage.requests, 2);
    assert_eq!(usage.total_tokens, per[0] + per[1]);
    assert_eq!(
        usage.total_tokens,
        usage.prompt_tokens + usage.completion_tokens
    );
    // The refused firing is not recorded: the seven before it are.
    assert_eq!(cvm.depth(), 7);
    assert_eq!(cvm.received("outb").len(), 1);
    assert!(cvm.received("outc").is_empty());
    // The end state says so, and serializes with the usage.
    assert!(end.to_string().starts_with("BUDGET: `c`"), "{end}");
    let j = serde_json::to_value(&end).unwrap();
    assert_eq!(j["end"], "BUDGET");
    assert_eq!(j["usage"]["requests"], 2);
    assert_eq!(j["limit"]["tokens"], budget);

    // A raised budget lets the same engine go on; nothing recorded is asked again.
    cvm.capabilities().meter().unwrap().set_limit(Budget {
        tokens: Some(1_000_000),
        cost_usd: None,
    });
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(cvm.received("outc").len(), 1);
}

#[test]
fn without_a_budget_usage_is_still_summed_per_run() {
    let (rt, calls) = counting_runtime();
    let mut cvm = rt.cvm(three_questions("{}"), ".").build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let spent = cvm.capabilities().meter().unwrap().spent();
    assert_eq!(spent.requests, 3);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        spent.total_tokens,
        tokens_per_question().iter().sum::<u64>()
    );
}

#[test]
fn a_journaled_run_stopped_by_its_budget_resumes_under_a_raised_one_without_asking_again() {
    let per = tokens_per_question();
    let dir = TempDir::new("budget-resume");
    let db = dir.join("runs.db");
    let (rt, calls) = counting_runtime();
    let net = three_questions(&format!("{{tokens: {}}}", per[0]));
    let mut cvm = rt.cvm(net, dir.path()).build();
    let journal = Journal::create(&db).unwrap();
    let id = journal
        .start(
            &mut cvm,
            &RunOptions {
                base_dir: Some(dir.path().to_path_buf()),
                ..RunOptions::default()
            },
        )
        .unwrap();
    let end = cvm.run().unwrap();
    assert_eq!(end.name(), "BUDGET", "{end}");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the second request is refused"
    );
    drop(cvm);
    // The journal lists the run with what it spent.
    let runs = journal.runs().unwrap();
    assert_eq!(runs[0].status, "BUDGET");
    let listed = runs[0].usage.expect("runs lists the usage");
    assert_eq!((listed.requests, listed.total_tokens), (1, per[0]));

    // Another process: the same model, a raised budget (what `resume --budget` does).
    let (rt, calls) = counting_runtime();
    let pin = |net: &mut Net, base: &Path| {
        let caps = rt.pin(net, base);
        caps.run_meter().set_limit(Budget {
            tokens: Some(1_000_000),
            cost_usd: None,
        });
        caps as Arc<dyn Capabilities>
    };
    let opts = ResumeOptions {
        base_dir: Some(dir.path().to_path_buf()),
        allow_outside: false,
    };
    let mut resumed = journal.resume_with_options(Some(&id), &opts, pin).unwrap();
    assert!(!resumed.is_finished(), "a BUDGET run goes on");
    let meter = Arc::clone(resumed.cvm.capabilities().meter().unwrap());
    assert_eq!(
        meter.spent().total_tokens,
        per[0],
        "what it spent before counts"
    );
    assert_eq!(resumed.cvm.run().unwrap(), EndState::Completed);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "only the two questions not recorded are asked"
    );
    assert_eq!(meter.spent().requests, 3);
    assert_eq!(meter.spent().total_tokens, per.iter().sum::<u64>());
    assert_eq!(resumed.cvm.received("outc").len(), 1);
    drop(resumed);
    let runs = journal.runs().unwrap();
    assert_eq!(runs[0].status, "COMPLETED");
    assert_eq!(runs[0].usage.unwrap().requests, 3);
    // Its end, stored with the usage beside it, reads back as the end it is.
    let (rt, calls) = counting_runtime();
    let again = journal
        .resume_with_options(Some(&id), &opts, |net: &mut Net, base: &Path| {
            rt.pin(net, base) as Arc<dyn Capabilities>
        })
        .unwrap();
    assert!(again.is_finished());
    assert_eq!(again.end, Some(EndState::Completed));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// A generative model that asks for `calc` on its first turn and answers on the next, each
/// turn reporting 40 tokens; it records how many turns it was asked.
#[derive(Debug, Default)]
struct Tooling {
    turns: Mutex<u32>,
}

impl ChatModel for Tooling {
    fn kind(&self) -> &str {
        "test_tooling"
    }
    fn chat<'a>(&'a self, r: &'a ChatRequest) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        *self.turns.lock().unwrap() += 1;
        let first = !r
            .messages
            .iter()
            .any(|m| m.role == cameleon::operator::capability::Role::Tool);
        let usage = Some(Usage {
            prompt_tokens: 30,
            completion_tokens: 10,
        });
        Box::pin(async move {
            Ok(if first {
                ChatReply {
                    tool_calls: vec![ToolRequest {
                        id: "1".into(),
                        name: "calc".into(),
                        args: json!({"expr": "6 * 7"}),
                    }],
                    usage,
                    ..ChatReply::default()
                }
            } else {
                ChatReply {
                    text: "42".into(),
                    usage,
                    ..ChatReply::default()
                }
            })
        })
    }
}

#[test]
fn an_agent_whose_turns_cross_the_budget_stops_mid_firing_records_nothing_and_its_tokens_count() {
    let model = Arc::new(Tooling::default());
    let m = Arc::clone(&model);
    let rt = Runtime::builder()
        .source(CodeSource::new("tooling", move |b| {
            b.chat("default", Arc::clone(&m) as Arc<dyn ChatModel>);
            Ok(())
        }))
        .build()
        .unwrap();
    let net = Net::from_cm(
        "name: agent
config:
  budget: {tokens: 30}
tools:
  allow: [calc]
operators:
  - {id: q, type: source, params: {value: 'What is 6 * 7?'}}
  - {id: agent, type: agent}
  - {id: out, type: sink}
connections:
  - {from: q.out_data, to: agent.in_prompt}
  - {from: agent.out_text, to: out.in_data}
",
    )
    .unwrap();
    let mut cvm = rt.cvm(net, ".").build();
    let end = cvm.run().unwrap();
    let EndState::Budget { op, usage, .. } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(op, "agent");
    // The first turn started (nothing spent yet) and spent 40; the second did not start.
    assert_eq!(*model.turns.lock().unwrap(), 1);
    assert_eq!((usage.requests, usage.total_tokens), (1, 40));
    // The agent's firing is not recorded: only the source's step is.
    assert_eq!(cvm.depth(), 1);
    assert!(cvm.received("out").is_empty());

    // Raised, the firing runs anew from its first turn; the 40 tokens of the stopped one
    // still count.
    cvm.capabilities().meter().unwrap().set_limit(Budget {
        tokens: Some(1000),
        cost_usd: None,
    });
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(*model.turns.lock().unwrap(), 3);
    let spent = cvm.capabilities().meter().unwrap().spent();
    assert_eq!((spent.requests, spent.total_tokens), (3, 120));
    assert_eq!(cvm.received("out")[0].to_json(), json!("42"));
}

#[test]
fn a_cost_budget_counts_at_the_models_prices() {
    let calls = Arc::new(AtomicUsize::new(0));
    let k = Arc::clone(&calls);
    let rt = Runtime::builder()
        .source(CodeSource::new("priced", move |b| {
            b.chat(
                "default",
                Arc::new(Counting {
                    inner: Extractive::new(1),
                    calls: Arc::clone(&k),
                }),
            );
            // $1 per prompt token, $2 per completion token.
            b.price(
                Section::Chat,
                "default",
                Price {
                    prompt_per_mtok: 1_000_000.0,
                    completion_per_mtok: 2_000_000.0,
                },
            );
            Ok(())
        }))
        .build()
        .unwrap();
    // Without a bound: the cost of the three questions.
    let mut cvm = rt.cvm(three_questions("{}"), ".").build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let all = cvm.capabilities().meter().unwrap().spent();
    assert_eq!(
        all.cost_usd.0,
        (all.prompt_tokens + 2 * all.completion_tokens) as f64
    );
    // A bound just above the cost of the first question stops the run before the third.
    calls.store(0, Ordering::SeqCst);
    let net = three_questions("{cost_usd: 1.5}");
    assert_eq!(net.config().budget.cost_usd, Some(Usd(1.5)));
    let mut cvm = rt.cvm(net, ".").build();
    let end = cvm.run().unwrap();
    let EndState::Budget { usage, .. } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(
        usage.requests, 1,
        "the first question already costs more than $1.50"
    );
    assert!(usage.cost_usd.0 >= 1.5, "{usage}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_capabilities_file_prices_models_and_refuses_a_bad_price_at_its_key() {
    let ok = "chat:\n  default: {kind: extractive, price_usd: {prompt_per_mtok: 0.15, completion_per_mtok: 0.6}}\nembedders:\n  default: {kind: hash, price_usd: {prompt_per_mtok: 0.02}}\n";
    cameleon::capabilities::load_config_str("caps.yaml", ok).unwrap();
    for (bad, line, says) in [
        (
            "chat:\n  default:\n    kind: extractive\n    price_usd: {prompt_per_mtok: -1}\n",
            4,
            "`prompt_per_mtok` must be a number of US dollars, 0 or more",
        ),
        (
            "chat:\n  default:\n    kind: extractive\n    price_usd: {input: 1}\n",
            4,
            "`price_usd` of chat model `default`",
        ),
        (
            "memories:\n  default:\n    kind: flat\n    price_usd: {prompt_per_mtok: 1}\n",
            4,
            "memory `default` has no price",
        ),
    ] {
        let e = cameleon::capabilities::load_config_str("caps.yaml", bad).unwrap_err();
        assert_eq!(e.problems()[0].line, line, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[test]
fn a_budget_in_a_cm_file_is_checked_at_its_key_and_kept_by_the_canonical_form() {
    let net = Net::from_cm("config:\n  budget: {tokens: 500, cost_usd: 0.25}\noperators:\n  - {id: v, type: const, params: {value: 1}}\n  - {id: s, type: sink}\nconnections:\n  - {from: v.out_data, to: s.in_data}\n").unwrap();
    assert_eq!(
        net.config().budget,
        Budget {
            tokens: Some(500),
            cost_usd: Some(Usd(0.25))
        }
    );
    let again = Net::from_cm(&net.to_cm()).unwrap();
    assert_eq!(
        again.config().budget,
        net.config().budget,
        "{}",
        net.to_cm()
    );
    for (budget, says) in [
        ("{tokens: 0}", "`budget: tokens` must be at least 1"),
        (
            "{tokens: -5}",
            "`tokens` must be a whole number of tokens, at least 1, not -5",
        ),
        (
            "{tokens: lots}",
            "`tokens` must be a whole number of tokens, at least 1, not \"lots\"",
        ),
        (
            "{cost_usd: free}",
            "`cost_usd` must be an amount of US dollars",
        ),
        (
            "{cost_usd: 0}",
            "`budget: cost_usd` must be an amount of US dollars above 0",
        ),
        ("{cost_usd: -1.5}", "`budget: cost_usd` must be an amount"),
        ("{dollars: 3}", "dollars"),
        ("12", "budget"),
    ] {
        let text = format!(
            "config:\n  budget: {budget}\noperators:\n  - {{id: s, type: source, params: {{value: x}}}}\n"
        );
        let e = Net::from_cm(&text).unwrap_err();
        let p = &e.problems()[0];
        assert_eq!(p.line, 2, "{budget}: {e}");
        assert!(e.to_string().contains(says), "{budget}: {e}");
    }
}

/// `inner.cm` in `dir`: asks the model its item's `q`.
fn write_inner(dir: &Path) {
    std::fs::write(
        dir.join("inner.cm"),
        "name: inner
operators:
  - {id: item, type: input, params: {name: item}}
  - {id: text, type: source, params: {value: '{{q}}'}}
  - {id: question, type: template}
  - {id: ask, type: llm}
  - {id: result, type: output, params: {name: result}}
connections:
  - {from: item.out_data, to: question.in_data}
  - {from: text.out_data, to: question.in_template}
  - {from: question.out_data, to: ask.in_prompt}
  - {from: ask.out_text, to: result.in_data}
",
    )
    .unwrap();
}

#[test]
fn a_map_whose_items_cross_the_budget_stops_the_run_even_with_its_error_connected() {
    let per = tokens_per_question();
    let dir = TempDir::new("budget-map");
    write_inner(dir.path());
    let outer = format!(
        "name: outer
config:
  budget: {{tokens: {}}}
operators:
  - {{id: items, type: const, params: {{value: [{{q: 'Why do chameleons change colour?'}}, {{q: 'Where do chameleons live?'}}, {{q: 'What do chameleons eat?'}}]}}}}
  - {{id: m, type: map, params: {{net: inner.cm}}}}
  - {{id: results, type: sink}}
  - {{id: failed, type: sink}}
connections:
  - {{from: items.out_data, to: m.in_items}}
  - {{from: m.out_results, to: results.in_data}}
  - {{from: m.error, to: failed.in_data}}
",
        per[0]
    );
    let net = Loader::new()
        .base_dir(dir.path())
        .file_name("outer.cm")
        .load_str(&outer)
        .unwrap();
    let (rt, calls) = counting_runtime();
    let mut cvm = rt.cvm(net, dir.path()).build();
    let end = cvm.run().unwrap();
    let EndState::Budget { op, usage, .. } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(op, "m", "the map's inner run made the refused request");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the inner runs share the budget"
    );
    assert_eq!(usage.requests, 1);
    assert!(
        cvm.received("failed").is_empty(),
        "not caught as a failed item"
    );
    assert_eq!(cvm.depth(), 1, "the map's firing is not recorded");
}

#[test]
fn in_parallel_mode_the_step_whose_request_is_refused_is_discarded_and_the_run_stops_in_budget() {
    // `b` asks the model `a`'s answer: two steps apart, whatever the mode.
    let net = Net::from_cm(
        "name: chain
config:
  mode: parallel
  budget: {tokens: 1}
operators:
  - {id: q, type: source, params: {value: 'Why do chameleons change colour?'}}
  - {id: a, type: llm}
  - {id: b, type: llm}
  - {id: out, type: sink}
connections:
  - {from: q.out_data, to: a.in_prompt}
  - {from: a.out_text, to: b.in_prompt}
  - {from: b.out_text, to: out.in_data}
",
    )
    .unwrap();
    let (rt, calls) = counting_runtime();
    let mut cvm = rt.cvm(net, ".").build();
    let end = cvm.run().unwrap();
    let EndState::Budget { op, usage, .. } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(op, "b");
    assert_eq!((usage.requests, calls.load(Ordering::SeqCst)), (1, 1));
    assert_eq!(cvm.depth(), 2, "`q`, then `a`; `b`'s step is not recorded");
}

/// A question to the model, whose answer is then embedded by `retrieve` (the offline `hash`
/// embedder, which reports no tokens).
fn ask_then_retrieve(budget: &str) -> Net {
    Net::from_cm(&format!(
        "name: embed
config:
  budget: {budget}
operators:
  - {{id: q, type: source, params: {{value: 'Why do chameleons change colour?'}}}}
  - {{id: a, type: llm}}
  - {{id: r, type: retrieve}}
  - {{id: out, type: sink}}
connections:
  - {{from: q.out_data, to: a.in_prompt}}
  - {{from: a.out_text, to: r.in_query}}
  - {{from: r.out_data, to: out.in_data}}
"
    ))
    .unwrap()
}

#[test]
fn embedding_requests_are_checked_and_counted_their_tokens_when_reported() {
    let (rt, _) = counting_runtime();
    // Unbounded: two requests, the embedder's without tokens.
    let mut cvm = rt.cvm(ask_then_retrieve("{}"), ".").build();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let spent = cvm.capabilities().meter().unwrap().spent();
    assert_eq!(spent.requests, 2);
    assert_eq!(spent.total_tokens, tokens_per_question()[0]);
    // Bounded: the embedding request is the one refused.
    let mut cvm = rt.cvm(ask_then_retrieve("{tokens: 1}"), ".").build();
    let end = cvm.run().unwrap();
    let EndState::Budget { op, usage, .. } = &end else {
        panic!("BUDGET expected, got {end}");
    };
    assert_eq!(op, "r");
    assert_eq!(usage.requests, 1);
}

#[test]
fn a_request_refused_by_the_budget_is_not_retried() {
    let net = Net::from_cm(
        "name: retried
config:
  budget: {tokens: 1}
operators:
  - {id: q, type: source, params: {value: 'Why do chameleons change colour?'}}
  - {id: a, type: llm}
  - {id: b, type: llm, retry: {max: 3}}
  - {id: out, type: sink}
connections:
  - {from: q.out_data, to: a.in_prompt}
  - {from: a.out_text, to: b.in_prompt}
  - {from: b.out_text, to: out.in_data}
",
    )
    .unwrap();
    let (rt, _) = counting_runtime();
    let retries = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&retries);
    let mut cvm = rt
        .cvm(net, ".")
        .on_event(move |e| {
            if matches!(e, Event::FiringRetrying { .. }) {
                r.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build();
    let end = cvm.run().unwrap();
    assert_eq!(end.name(), "BUDGET", "{end}");
    assert_eq!(
        retries.load(Ordering::SeqCst),
        0,
        "a spent budget is not an outage"
    );
}
