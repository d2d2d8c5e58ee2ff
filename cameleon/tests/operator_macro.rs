//! Operators declared with `#[operator]` from outside the crate, as a user writes them: the
//! generated handles, spec, params, factory, state saving and rollback, async operators
//! (`exec = async`) and declared settings (`timeout_ms`, `retry`), under `deny(warnings)`.
#![deny(warnings)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cameleon::catalogue::{BuildContext, Catalogue, Catalogued};
use cameleon::dsl::{HasPorts, ports_of};
use cameleon::ops::{Const, Sink, Source};
use cameleon::prelude::*;
use cameleon::{OpSettings, Params, Retry};
use serde_json::json;

/// Repeats a text `times` times, separated by `sep`.
///
/// Counts its firings (internal state, restored by a backward step) and records compensations.
#[operator(id = "test_repeat", label = "Repeat", family = behavioral)]
#[derive(Debug, Default)]
pub struct Repeat {
    /// how many copies
    #[param(default = 2)]
    pub times: u32,
    /// put between the copies
    #[param(default = "-")]
    pub sep: String,
    /// words that are never repeated
    #[param(default = [])]
    pub keep: Vec<String>,
    /// an optional cap on the length
    #[param]
    pub max_len: Option<u64>,
    /// The firings so far.
    fired: u64,
    /// Where compensations are counted (shared with the test).
    #[context]
    undo: Undo,
    /// The text to repeat.
    #[input]
    in_text: In<DataString>,
    #[output]
    out_text: Out<DataString>,
}

#[derive(Clone, Debug, Default)]
struct Undo(Arc<AtomicUsize>);

impl cameleon::catalogue::FromContext for Undo {
    fn from_context(_: &BuildContext) -> Self {
        Undo::default()
    }
}

impl Run for Repeat {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_text)?.0;
        let out = if self.keep.contains(t) {
            t.clone()
        } else {
            vec![t.as_str(); self.times as usize].join(&self.sep)
        };
        let out = match self.max_len {
            Some(n) => out.chars().take(n as usize).collect(),
            None => out,
        };
        self.fired += 1;
        cx.emit(Self::out_text, DataString(out));
        Ok(())
    }

    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        assert!(emitted.get(Self::out_text).is_some());
        self.undo.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Passes its input on while a token is NEW on it, for a type chosen by the user.
#[operator(id = "test_relay", label = "Relay", family = structural, firing = custom)]
pub struct Relay<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Relay<T> {
    fn new() -> Self {
        Relay {
            __cameleon_ports: std::marker::PhantomData,
        }
    }
}

impl<T: PortType> CanFire for Relay<T> {
    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        e.inputs[0] == ConnState::New
    }
}

impl<T: PortType> Run for Relay<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_data, Self::out_data)
    }
}

#[test]
fn declared_operator_has_handles_named_after_its_ports() {
    assert_eq!(Repeat::in_text.index, 0);
    assert_eq!(Repeat::in_text.name, "in_text");
    assert_eq!(Repeat::out_text.name, "out_text");
    let ports = <Repeat as HasPorts>::ports();
    assert_eq!(ports.out_text.index, 0);
    let relay: Relay<DataString> = Relay::new();
    assert_eq!(ports_of(&relay).in_data.name, "in_data");
}

#[test]
fn declared_operator_is_in_the_catalogue_with_docs_params_and_policy() {
    let e = Catalogue::global()
        .get("test_repeat")
        .expect("registered by inventory");
    assert_eq!(e.label, "Repeat");
    assert_eq!(
        e.summary(),
        "Repeats a text `times` times, separated by `sep`."
    );
    assert!(e.doc.contains("Counts its firings"));
    let params: Vec<_> = e.params.iter().map(|p| (p.name, p.ty, p.default)).collect();
    assert_eq!(
        params,
        [
            ("times", "u32", Some("2")),
            ("sep", "string", Some("\"-\"")),
            ("keep", "list of string", Some("[]")),
            ("max_len", "u64 or null", Some("null")),
        ]
    );
    assert_eq!(e.params[0].doc, "how many copies");
    assert_eq!(Repeat::ENTRY.id, "test_repeat");
    // A port's doc comment is its catalogue doc; a port without one has none.
    assert_eq!(e.port_doc("in_text"), Some("The text to repeat."));
    assert_eq!(e.port_doc("out_text"), None);
    let port = e.ports.iter().find(|d| d.name == "in_text").unwrap();
    assert!(!port.group);

    let relay = Catalogue::global().get("test_relay").expect("registered");
    assert_eq!(relay.policy, Policy::Custom);
    assert_eq!((relay.spec)().inputs[0].ty, TypeRef::Var(0));
    // A concrete instantiation keeps its type.
    let typed = Relay::<DataString>::new().spec();
    assert_eq!(typed.outputs[0].ty, TypeRef::of::<DataString>());
}

#[test]
fn factory_reads_every_param_type_and_writes_them_back() {
    let mut p = Params::new();
    p.insert("times".into(), json!(3));
    p.insert("keep".into(), json!(["a", "b"]));
    p.insert("max_len".into(), json!(10));
    let op = Catalogue::global()
        .build("test_repeat", &p, &BuildContext::default())
        .expect("valid params");
    assert_eq!(
        serde_json::Value::Object(op.params()),
        json!({"times": 3, "sep": "-", "keep": ["a", "b"], "max_len": 10})
    );
    p.insert("keep".into(), json!(["a", 2]));
    let e = Catalogue::global()
        .build("test_repeat", &p, &BuildContext::default())
        .err()
        .expect("ill-typed");
    assert!(
        e.to_string()
            .contains("param `keep` expects list of string"),
        "{e}"
    );
}

#[test]
fn backward_step_restores_internal_state_and_calls_rollback() {
    let undo = Undo::default();
    let mut b = Net::builder("repeat");
    b.add("src", Source::new("ab"));
    b.add(
        "rep",
        Repeat {
            times: 3,
            sep: "+".into(),
            undo: undo.clone(),
            ..Repeat::default()
        },
    );
    b.add("relay", Relay::<DataString>::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "rep.in_text")
        .connect("rep.out_text", "relay.in_data")
        .connect("relay.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().expect("valid net"));
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!("ab+ab+ab"));
    let fired = |cvm: &Cvm| {
        let net = cvm.net();
        let id = net.op_id("rep").expect("declared");
        net.operators()[id.index()]
            .downcast_ref::<Repeat>()
            .expect("a Repeat")
            .fired
    };
    assert_eq!(fired(&cvm), 1);

    cvm.back().expect("undo the sink");
    cvm.back().expect("undo the relay");
    assert_eq!(undo.0.load(Ordering::SeqCst), 0);
    assert_eq!(fired(&cvm), 1, "not undone yet");
    cvm.back().expect("undo the repeat");
    assert_eq!(
        undo.0.load(Ordering::SeqCst),
        1,
        "rollback compensated once"
    );
    assert_eq!(fired(&cvm), 0, "the counter reads its pre-firing value");
    assert_eq!(cvm.run().expect("replays"), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!("ab+ab+ab"));
    assert_eq!(
        fired(&cvm),
        1,
        "replay re-installs the state after the firing"
    );
    // Re-executed rather than replayed, the counter starts again from its pre-firing value.
    cvm.rewind();
    cvm.step().expect("replays the source");
    cvm.refire().expect("runs the repeat again");
    assert_eq!(
        fired(&cvm),
        1,
        "counted once, not on top of the undone firing"
    );
}

#[test]
fn generic_structural_operator_is_typed_by_its_parameter() {
    let mut b = Net::builder("typed");
    b.add("src", Const::new(json!(1)));
    b.add("relay", Relay::<DataString>::new());
    b.add("out", Sink::new());
    b.connect("src.out_data", "relay.in_data")
        .connect("relay.out_data", "out.in_data");
    let e = b.build().expect_err("DataJSON into a Relay<DataString>");
    assert!(e.to_string().contains("DataString"), "{e}");
}

#[test]
fn generic_operators_infer_their_type_from_typed_connections() {
    use cameleon::ops::{Fork, Format, Join, Merge};

    // Nothing names the fork's, the merge's or the join's type; the connections fix it (the
    // merge's from the fork upstream and the format downstream).
    let net = pipeline! {
        name = "inferred";
        let src = Source::new("x");
        let fork = Fork::new(2).expect("arity 2");
        let merge = Merge::default();
        let join = Join::new(3).expect("arity 3");
        let format = Format::default();
        let sink = Sink::new();
        src.out_data -> fork.in_data;
        fork.out_a -> merge.in_a;
        fork.out_b -> merge.in_b;
        merge.out_data -> format.in_main;
        src.out_data -> join.in_a;
        src.out_data -> join.in_b;                 // any type
        src.out_data -> join.in_c;
        join.out_data -> format.in_meta;
        format.out_data -> sink.in_data;           // accepts any type
    };
    let spec = |name: &str| &net.operators()[net.op_id(name).expect("declared").index()].spec;
    assert_eq!(spec("fork").outputs[1].ty, TypeRef::of::<DataString>());
    assert_eq!(spec("merge").inputs[1].ty, TypeRef::of::<DataString>());
    assert_eq!(spec("join").outputs[0].ty, TypeRef::of::<DataString>());
    assert_eq!(spec("join").inputs[2].ty, TypeRef::Var(2));
}

// ---------------------------------------------------------------------------------------------
// `exec = …`, `timeout_ms = …`, `retry(…)`

/// Upper-cases a text after yielding to the runtime once; counts compensations.
#[operator(id = "test_later_upper", label = "Later upper", exec = async)]
#[derive(Debug, Default)]
pub struct LaterUpper {
    /// Where compensations are counted (shared with the test).
    #[context]
    undo: Undo,
    /// The firings so far (internal state).
    fired: u64,
    #[input]
    in_text: In<DataString>,
    #[output]
    out_text: Out<DataString>,
}

impl RunAsync for LaterUpper {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        tokio::task::yield_now().await;
        let t = cx.get(Self::in_text)?.0.to_uppercase();
        self.fired += 1;
        cx.emit(Self::out_text, DataString(t));
        Ok(())
    }

    fn rollback(&mut self, emitted: &Emitted<'_, Self>) {
        assert_eq!(
            emitted.get(Self::out_text).map(|s| s.0.as_str()),
            Some("AB")
        );
        self.undo.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn upper_net(op: LaterUpper, mode: Mode) -> Cvm {
    let mut b = Net::builder("later");
    b.add("src", Source::new("ab"));
    b.add("up", op);
    b.add("out", Sink::new());
    b.connect("src.out_data", "up.in_text")
        .connect("up.out_text", "out.in_data");
    Cvm::builder(b.build().expect("valid net"))
        .mode(mode)
        .build()
}

#[test]
fn an_async_operator_declares_itself_async_and_runs_in_both_modes() {
    let op = LaterUpper::default();
    assert_eq!(op.execution(), Execution::Async);
    let e = Catalogue::global()
        .get("test_later_upper")
        .expect("registered");
    assert_eq!(e.execution, Execution::Async);
    assert_eq!(e.settings, cameleon::OpSettings::NONE);

    // Sequential mode's synchronous API drives `RunAsync::run` to completion.
    let mut cvm = upper_net(LaterUpper::default(), Mode::Sequential);
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!("AB"));

    // Parallel mode awaits it.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut cvm = upper_net(LaterUpper::default(), Mode::Parallel);
    assert_eq!(
        rt.block_on(cvm.run_async()).expect("runs"),
        EndState::Completed
    );
    assert_eq!(cvm.received("out")[0].to_json(), json!("AB"));
}

#[test]
fn an_async_operator_rolls_back_through_run_async() {
    let undo = Undo::default();
    let mut cvm = upper_net(
        LaterUpper {
            undo: undo.clone(),
            ..LaterUpper::default()
        },
        Mode::Sequential,
    );
    cvm.run().expect("runs");
    let up = |cvm: &Cvm| {
        let net = cvm.net();
        let id = net.op_id("up").expect("declared");
        net.operators()[id.index()]
            .downcast_ref::<LaterUpper>()
            .expect("a LaterUpper")
            .fired
    };
    assert_eq!(up(&cvm), 1);
    cvm.back().expect("undo the sink");
    cvm.back().expect("undo the upper-casing");
    assert_eq!(undo.0.load(Ordering::SeqCst), 1, "RunAsync::rollback ran");
    assert_eq!(up(&cvm), 0, "internal state restored");
}

/// Fails its first `fail_first` firings (counted outside the operator, since a retry restores
/// its internal state), then passes its input on.
#[operator(
    id = "test_flaky",
    label = "Flaky",
    exec = inline,
    timeout_ms = 5000,
    retry(max = 2, backoff_ms = 1)
)]
#[derive(Debug, Default)]
pub struct Flaky {
    /// failures before the first success
    #[param(default = 0)]
    fail_first: usize,
    /// Attempts so far (shared with the test).
    #[context]
    attempts: Undo,
    #[input]
    in_data: In<DataString>,
    #[output]
    out_data: Out<DataString>,
}

impl Run for Flaky {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let n = self.attempts.0.fetch_add(1, Ordering::SeqCst);
        if n < self.fail_first {
            return Err(OpError::new(format!("attempt {n} fails")));
        }
        cx.forward(Self::in_data, Self::out_data)
    }
}

fn flaky_net(op: Flaky, instance: OpSettings) -> Net {
    let mut b = Net::builder("flaky");
    b.add("src", Source::new("x"));
    b.add("flaky", op).settings(instance);
    b.add("out", Sink::new());
    b.connect("src.out_data", "flaky.in_data")
        .connect("flaky.out_data", "out.in_data");
    b.build().expect("valid net")
}

#[test]
fn declared_settings_are_the_type_defaults_that_instances_override() {
    let declared = OpSettings {
        timeout_ms: Some(5000),
        retry: Some(Retry {
            max: 2,
            backoff_ms: 1,
        }),
    };
    assert_eq!(Flaky::default().settings(), declared);
    assert_eq!(Flaky::default().execution(), Execution::Inline);
    let e = Catalogue::global().get("test_flaky").expect("registered");
    assert_eq!((e.settings, e.execution), (declared, Execution::Inline));
    let j = Catalogue::global().to_json();
    let flaky = j["operators"]
        .as_array()
        .and_then(|ops| ops.iter().find(|o| o["id"] == "test_flaky"))
        .expect("exported");
    assert_eq!(flaky["exec"], "inline");
    assert_eq!(
        flaky["settings"],
        json!({"timeout_ms": 5000, "retry": {"max": 2, "backoff_ms": 1}})
    );
    assert!(
        Catalogue::global()
            .to_markdown()
            .contains("- exec: `inline` · timeout 5000 ms · retry: max 2, backoff 1 ms")
    );

    // An instance overrides field by field.
    let net = flaky_net(
        Flaky::default(),
        OpSettings {
            timeout_ms: Some(40),
            retry: None,
        },
    );
    assert_eq!(
        net.operators()[1].effective_settings(),
        OpSettings {
            timeout_ms: Some(40),
            ..declared
        }
    );
}

#[test]
fn the_declared_retries_absorb_failures_and_an_instance_can_turn_them_off() {
    let op = |attempts: &Undo| Flaky {
        fail_first: 2,
        attempts: attempts.clone(),
    };
    // Two failures, two declared retries: the third attempt succeeds.
    let attempts = Undo::default();
    let mut cvm = Cvm::new(flaky_net(op(&attempts), OpSettings::NONE));
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    assert_eq!(attempts.0.load(Ordering::SeqCst), 3);
    assert_eq!(cvm.received("out")[0].to_json(), json!("x"));

    // `retry: {max: 0}` on the instance: the first failure counts.
    let attempts = Undo::default();
    let no_retry = OpSettings {
        timeout_ms: None,
        retry: Some(Retry {
            max: 0,
            backoff_ms: 0,
        }),
    };
    let mut cvm = Cvm::new(flaky_net(op(&attempts), no_retry));
    match cvm.run().expect("runs") {
        EndState::Error { op, error } => {
            assert_eq!(op, "flaky");
            assert!(error.contains("attempt 0 fails"), "{error}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(attempts.0.load(Ordering::SeqCst), 1);
}

/// Waits far longer than its declared timeout.
#[operator(id = "test_stuck", label = "Stuck", exec = "async", timeout_ms = 30)]
#[derive(Debug, Default)]
pub struct Stuck {
    #[input]
    in_data: In<DataString>,
}

impl RunAsync for Stuck {
    async fn run(&mut self, _cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        Ok(())
    }
}

#[test]
fn a_declared_timeout_cuts_an_async_firing_short() {
    assert_eq!(Stuck.execution(), Execution::Async, "`exec = \"async\"`");
    let mut b = Net::builder("stuck");
    b.add("src", Source::new("x"));
    b.add("stuck", Stuck);
    b.connect("src.out_data", "stuck.in_data");
    let mut cvm = Cvm::new(b.build().expect("valid net"));
    match cvm.run().expect("runs") {
        EndState::Error { op, error } => {
            assert_eq!(op, "stuck");
            assert!(error.contains("timed out after 30 ms"), "{error}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// Counts its firings (internal state) and has neither params nor context.
#[operator(id = "test_tally", label = "Tally", family = structural)]
#[derive(Debug, Default)]
pub struct Tally<T: PortType = Any> {
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
    /// The firings so far.
    seen: u64,
}

impl<T: PortType> Run for Tally<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        self.seen += 1;
        cx.forward(Self::in_data, Self::out_data)
    }
}

#[test]
fn an_operator_without_params_makes_a_fresh_instance_of_its_own_type_in_its_initial_state() {
    let mut b = Net::builder("tally");
    b.add("src", Source::new("x"));
    b.add(
        "tally",
        Tally::<DataString> {
            seen: 0,
            __cameleon_ports: std::marker::PhantomData,
        },
    );
    b.add("out", Sink::new());
    b.connect("src.out_data", "tally.in_data")
        .connect("tally.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().expect("valid net"));
    assert_eq!(cvm.run().expect("runs"), EndState::Completed);
    let id = cvm.net().op_id("tally").expect("declared");
    let op = cvm.net().op(id).operator();
    let seen = |op: &dyn Operator| {
        let any: &dyn std::any::Any = op;
        any.downcast_ref::<Tally<DataString>>().map(|t| t.seen)
    };
    assert_eq!(seen(op), Some(1), "the run's instance fired once");
    let fresh = op.fresh().expect("made without the catalogue");
    assert_eq!(
        seen(&*fresh),
        Some(0),
        "of the same type (its type parameter kept), its state at its initial value"
    );
    // An operator with params is rebuilt from them through the catalogue.
    assert!(Repeat::default().fresh().is_none());
}
