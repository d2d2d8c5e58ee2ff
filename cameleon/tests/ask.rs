//! The `ask` operator and `WAITING` (docs/semantics.md §6.1): a run that can only go on through
//! an unanswered question stops; an answer of the right type lets it go on; the answer is
//! recorded, so going back and forward never asks again.

use cameleon::engine::{ProvideError, Waiting};
use cameleon::prelude::*;
use cameleon::verify::{Verdict, VerifyOptions, verify};

/// `name` asks for a text, a second `ask` (with its question's context) for a yes/no.
const REVIEW: &str = r#"
name: review
operators:
  - {id: draft, type: source, params: {value: "Dear Ada"}}
  - {id: name, type: ask, params: {prompt: "Who signs?"}}
  - {id: ok, type: ask, params: {prompt: "Send it?", type: DataBool}}
  - {id: signed, type: sink}
  - {id: sent, type: sink}
connections:
  - {from: draft.out_data, to: ok.in_context}
  - {from: name.out_data, to: signed.in_data}
  - {from: ok.out_data, to: sent.in_data}
"#;

fn waiting_ops(cvm: &Cvm) -> Vec<String> {
    cvm.waiting().into_iter().map(|w| w.op).collect()
}

#[test]
fn a_run_waits_for_every_unanswered_ask_then_goes_on() {
    let mut cvm = Cvm::new(Net::from_cm(REVIEW).unwrap());
    let end = cvm.run().unwrap();
    let EndState::Waiting { waiting } = &end else {
        panic!("expected WAITING, got {end}");
    };
    assert_eq!(
        waiting
            .iter()
            .map(|w| (w.op.as_str(), w.prompt.as_str(), w.ty.name))
            .collect::<Vec<_>>(),
        [
            ("name", "Who signs?", "DataString"),
            ("ok", "Send it?", "DataBool")
        ]
    );
    assert_eq!(
        serde_json::to_value(&end).unwrap(),
        serde_json::json!({"end": "WAITING", "waiting": [
            {"op": "name", "prompt": "Who signs?"}, {"op": "ok", "prompt": "Send it?"}]})
    );
    assert_eq!(cvm.depth(), 1, "the draft fired; nothing else could");
    assert!(cvm.fireable().is_empty(), "a waiting ask is not fireable");

    cvm.provide_text("name", "Grace").unwrap();
    assert_eq!(cvm.fireable(), ["name"]);
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    assert_eq!(waiting_ops(&cvm), ["ok"]);

    cvm.provide("ok", Value::new(DataBool(true))).unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("signed")[0].to_json(), "Grace");
    assert_eq!(cvm.received("sent")[0].to_json(), true);
    assert!(cvm.waiting().is_empty());
}

#[test]
fn an_answer_of_the_wrong_type_is_refused_and_the_run_stays_waiting() {
    let mut cvm = Cvm::new(Net::from_cm(REVIEW).unwrap());
    cvm.run().unwrap();
    let e = cvm.provide_text("ok", "perhaps").unwrap_err();
    assert!(matches!(e, ProvideError::Answer { .. }));
    assert!(e.to_string().contains("wrong answer for `ok`"), "{e}");
    assert!(e.to_string().contains("yes or no"), "{e}");
    let e = cvm
        .provide("ok", Value::new(DataString("yes".into())))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the answer is a DataString, but the question expects a DataBool"),
        "{e}"
    );
    let e = cvm
        .provide_json("ok", serde_json::json!("yes"))
        .unwrap_err();
    assert!(e.to_string().contains("is not a DataBool"), "{e}");
    let e = cvm.provide_text("sent", "x").unwrap_err();
    assert!(e.to_string().contains("`sent` asks no question"), "{e}");
    assert!(e.to_string().contains("`name`, `ok`"), "{e}");
    let e = cvm.provide_text("nobody", "x").unwrap_err();
    assert!(matches!(e, ProvideError::UnknownOperator { .. }), "{e}");
    assert_eq!(cvm.run().unwrap().name(), "WAITING");
    assert_eq!(waiting_ops(&cvm), ["name", "ok"]);
}

#[test]
fn back_and_replay_never_ask_again() {
    let mut cvm = Cvm::new(Net::from_cm(REVIEW).unwrap());
    cvm.provide_text("name", "Grace").unwrap();
    cvm.provide_json("ok", serde_json::json!(false)).unwrap();
    assert_eq!(
        cvm.run().unwrap(),
        EndState::Completed,
        "answers given in advance"
    );
    let end_marking = cvm.marking();
    let depth = cvm.depth();
    cvm.rewind();
    assert_eq!(cvm.depth(), 0);
    // Forward again: every step is replayed, the answers with them; nothing waits.
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.depth(), depth);
    assert_eq!(cvm.marking(), end_marking, "the very same answer tokens");
    assert_eq!(cvm.received("sent")[0].to_json(), false);
}

#[test]
fn refire_after_back_with_a_new_answer_takes_another_branch() {
    let net = Net::from_cm(
        "operators:\n  - {id: q, type: ask, params: {prompt: \"Colour?\"}}\n  - {id: out, type: sink}\nconnections:\n  - {from: q.out_data, to: out.in_data}\n",
    )
    .unwrap();
    let mut cvm = Cvm::new(net);
    cvm.provide_text("q", "red").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    cvm.back().unwrap();
    cvm.back().unwrap(); // before `q` fired: it holds its answer again
    assert!(cvm.waiting().is_empty());
    assert_eq!(cvm.fireable(), ["q"]);
    cvm.provide_text("q", "blue").unwrap();
    cvm.refire().unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), "blue");
    assert_eq!(
        cvm.branches().len(),
        2,
        "the `red` future is kept as a branch"
    );
}

#[test]
fn an_ask_with_a_context_asks_once_per_context() {
    // Two contexts through a merge: the ask waits twice.
    let net = Net::from_cm(
        r#"
operators:
  - {id: a, type: source, params: {value: "first"}}
  - {id: b, type: source, params: {value: "second"}}
  - {id: both, type: merge}
  - {id: q, type: ask, params: {prompt: "Keep?", type: DataBool}}
  - {id: out, type: sink}
connections:
  - {from: a.out_data, to: both.in_a}
  - {from: b.out_data, to: both.in_b}
  - {from: both.out_data, to: q.in_context}
  - {from: q.out_data, to: out.in_data}
"#,
    )
    .unwrap();
    let mut cvm = Cvm::new(net);
    let mut asked = 0;
    let end = loop {
        match cvm.run().unwrap() {
            EndState::Waiting { waiting } => {
                assert_eq!(waiting[0].op, "q");
                asked += 1;
                cvm.provide_text("q", if asked == 1 { "yes" } else { "no" })
                    .unwrap();
            }
            end => break end,
        }
        assert!(asked <= 2, "asked more than once per context");
    };
    assert_eq!(end, EndState::Completed);
    assert_eq!(asked, 2);
    let got: Vec<_> = cvm.received("out").iter().map(|v| v.to_json()).collect();
    assert_eq!(got, [true, false]);
}

#[test]
fn in_parallel_mode_other_branches_run_while_an_ask_waits() {
    let net = Net::from_cm(
        r#"
config: {mode: parallel}
operators:
  - {id: q, type: ask, params: {prompt: "Name?"}}
  - {id: s, type: source, params: {value: "x"}}
  - {id: t, type: transform}
  - {id: out_q, type: sink}
  - {id: out_s, type: sink}
connections:
  - {from: q.out_data, to: out_q.in_data}
  - {from: s.out_data, to: t.in_data}
  - {from: t.out_data, to: out_s.in_data}
"#,
    )
    .unwrap();
    let mut cvm = Cvm::new(net);
    let end = cvm.run().unwrap();
    assert_eq!(
        end,
        EndState::Waiting {
            waiting: vec![Waiting {
                op: "q".into(),
                prompt: "Name?".into(),
                ty: DataString::INFO
            }]
        }
    );
    assert_eq!(
        cvm.received("out_s").len(),
        1,
        "the other branch ran to its sink"
    );
    cvm.provide_text("q", "Ada").unwrap();
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
}

#[test]
fn the_ask_type_param_types_out_data_and_is_checked() {
    // A DataBool answer may drive a gate's condition.
    let ok = Net::from_cm(
        r#"
operators:
  - {id: v, type: source, params: {value: "payload"}}
  - {id: q, type: ask, params: {prompt: "Route?", type: DataBool}}
  - {id: g, type: gate}
  - {id: yes, type: sink}
  - {id: no, type: sink}
connections:
  - {from: v.out_data, to: g.in_data}
  - {from: q.out_data, to: g.in_condition}
  - {from: g.out_true, to: yes.in_data}
  - {from: g.out_false, to: no.in_data}
"#,
    );
    assert!(ok.is_ok(), "{:?}", ok.err().map(|e| e.to_string()));
    let bad = Net::from_cm(
        "operators:\n  - {id: q, type: ask, params: {prompt: \"?\", type: DataBol}}\n  - {id: out, type: sink}\nconnections:\n  - {from: q.out_data, to: out.in_data}\n",
    )
    .unwrap_err();
    let problems = serde_json::to_string(bad.problems()).unwrap();
    assert!(problems.contains("not `DataBol`"), "{problems}");
    assert!(problems.contains("did you mean `DataBool`?"), "{problems}");
    // A DataString answer cannot feed a DataBool input.
    let mismatch = Net::from_cm(
        r#"
operators:
  - {id: v, type: source, params: {value: "payload"}}
  - {id: q, type: ask, params: {prompt: "Route?"}}
  - {id: g, type: gate}
  - {id: yes, type: sink}
connections:
  - {from: v.out_data, to: g.in_data}
  - {from: q.out_data, to: g.in_condition}
  - {from: g.out_true, to: yes.in_data}
"#,
    )
    .unwrap_err();
    assert!(
        mismatch.to_string().contains("mismatch")
            || serde_json::to_string(mismatch.problems())
                .unwrap()
                .contains("DataString")
    );
}

#[test]
fn the_verifier_treats_an_ask_as_a_source_of_any_value_of_its_type() {
    // Without a context: fires once; a run through it completes.
    let net = Net::from_cm(REVIEW).unwrap();
    let r = verify(&net, &VerifyOptions::default());
    assert_eq!(r.verdict, Verdict::Holds, "{}", r.to_json());
    // A DataBool ask choosing a gate branch: both branches are explored (data abstracted), so
    // the join after a gate branch deadlocks on the branch not taken.
    let net = Net::from_cm(
        r#"
operators:
  - {id: v, type: source, params: {value: "payload"}}
  - {id: q, type: ask, params: {prompt: "Route?", type: DataBool}}
  - {id: g, type: gate}
  - {id: yes, type: sink}
  - {id: no, type: sink}
connections:
  - {from: v.out_data, to: g.in_data}
  - {from: q.out_data, to: g.in_condition}
  - {from: g.out_true, to: yes.in_data}
  - {from: g.out_false, to: no.in_data}
"#,
    )
    .unwrap();
    let r = verify(&net, &VerifyOptions::default());
    assert_eq!(r.verdict, Verdict::Holds, "{}", r.to_json());
    assert!(r.dead_operators.is_empty(), "both sinks are reachable");
    assert_eq!(r.may_loop, Some(false), "an ask without context fires once");
}
