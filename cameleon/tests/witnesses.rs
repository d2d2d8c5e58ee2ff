//! The verifier's witnesses replayed in the engine, not only in the verifier's own model
//! (docs/semantics.md §8.3): a `Cvm` driven along a deadlock witness ends in DEADLOCK with the
//! stuck tokens the report names; one driven along an option-to-complete witness reaches the
//! marking the verifier reports there.
//!
//! The engine fires the first enabled operator in declaration order (§4.2). To make it follow a
//! witness, the net is rebuilt — the same operators from the catalogue, the same params and
//! connections — with its operators declared in an order under which each firing of the
//! witness is the engine's own choice; where the engine picks an operator the witness fires a
//! little later, independently of what comes between, it fires it now (an equivalent
//! interleaving: same marking). The engine applies its own rules (§3–§6) and the operators run
//! on their data; where a gate or a guard goes the other way than the witness, its test is
//! negated — the verifier does not see data (§8.1), and the report of the steered net is
//! checked to be the same.

mod nets;

use cameleon::Params;
use cameleon::catalogue::BuildContext;
use cameleon::prelude::*;
use cameleon::verify::{Report, TraceEnd, VerifyOptions, follow, verify};
use nets::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::json;

/// Why a witness could not be followed in the engine.
#[derive(Debug)]
enum Stop {
    /// The operators' data took another emission set than the witness (a gate the other way):
    /// `op` emitted otherwise.
    Data { op: String, message: String },
    /// No declaration order lets the sequential engine take this interleaving (two operators
    /// would need each other's priority at different steps).
    Unschedulable(String),
    /// The engine and the verifier disagree: a real failure.
    Disagree(String),
}

/// `net` rebuilt with its operators declared in `order`; `overrides` replace some operators'
/// params.
fn reordered(net: &Net, order: &[usize], overrides: &[(String, Params)]) -> Net {
    let mut b = Net::builder(net.name());
    for &o in order {
        let node = &net.operators()[o];
        let params = overrides
            .iter()
            .find(|(n, _)| *n == node.name)
            .map_or_else(|| node.params(), |(_, p)| p.clone());
        let op = Catalogue::global()
            .build(&node.spec.type_id, &params, &BuildContext::default())
            .unwrap_or_else(|e| panic!("`{}` cannot be rebuilt: {e}", node.name));
        b.add_boxed(node.name.clone(), op);
    }
    for c in net.connections() {
        b.connect(net.output_name(c.from), net.input_name(c.to));
    }
    b.build().expect("the same net, reordered")
}

/// A declaration order (indices) with every `(a, b)` of `before` putting `a` before `b`, else
/// keeping the net's order; `None` if `before` has a cycle.
fn order_with(n: usize, before: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while order.len() < n {
        let next =
            (0..n).find(|&o| !placed[o] && !before.iter().any(|&(a, b)| b == o && !placed[a]))?;
        placed[next] = true;
        order.push(next);
    }
    Some(order)
}

/// The operator and the outputs a witness label names: `gate:out_true`, `collect:none`,
/// `fork` (its only emission set: not checked).
fn parse_label(label: &str) -> (&str, Option<Vec<&str>>) {
    match label.rsplit_once(':') {
        Some((op, "none")) => (op, Some(Vec::new())),
        Some((op, ports)) => (op, Some(ports.split('+').collect())),
        None => (label, None),
    }
}

/// The connections an operator reads or writes.
fn touched(net: &Net, o: usize) -> Vec<usize> {
    (0..net.connections().len())
        .filter(|&c| {
            let conn = &net.connections()[c];
            conn.from.op.index() == o || conn.to.op.index() == o
        })
        .collect()
}

/// Whether firings of `a` and `b` commute: distinct operators sharing no connection. Each one's
/// enabling and effect read only its own connections and state (docs/semantics.md §3), so
/// swapping two adjacent such firings reaches the same marking.
fn independent(net: &Net, a: usize, b: usize) -> bool {
    a != b && {
        let ta = touched(net, a);
        touched(net, b).iter().all(|c| !ta.contains(c))
    }
}

/// A sequential engine on `net` (reordered, with `overrides`) that has fired the witness `path`
/// — or an equivalent interleaving of it (commuting independent firings) — each firing
/// emitting on the outputs its label names.
fn drive(net: &Net, path: &[String], overrides: &[(String, Params)]) -> Result<Cvm, Stop> {
    let n = net.operators().len();
    let id = |name: &str| {
        net.op_id(name)
            .map(OpId::index)
            .ok_or_else(|| Stop::Disagree(format!("the witness names an unknown `{name}`")))
    };
    let mut before: Vec<(usize, usize)> = Vec::new();
    'order: loop {
        let order = order_with(n, &before).ok_or_else(|| {
            Stop::Unschedulable(format!(
                "no declaration order makes the engine follow {path:?} (constraints {before:?})"
            ))
        })?;
        let mut cvm = Cvm::builder(reordered(net, &order, overrides))
            .max_loop_iterations(u32::MAX)
            .build();
        let mut path: Vec<String> = path.to_vec();
        for k in 0..path.len() {
            let name = parse_label(&path[k]).0.to_owned();
            let fireable = cvm.fireable();
            if !fireable.contains(&name.as_str()) {
                return Err(Stop::Disagree(format!(
                    "step {}: the verifier fires `{}`, the engine can fire only {fireable:?} (after {:?})",
                    k + 1,
                    path[k],
                    &path[..k]
                )));
            }
            let first = fireable[0].to_owned();
            if first != name {
                // The engine picks `first`. If the witness fires it later, independently of
                // everything in between, fire it now: an equivalent interleaving.
                let f = id(&first)?;
                let later = (k + 1..path.len()).find(|&j| parse_label(&path[j]).0 == first);
                let commutes = later.is_some_and(|j| {
                    path[k..j]
                        .iter()
                        .all(|l| id(parse_label(l).0).is_ok_and(|o| independent(net, o, f)))
                });
                match later {
                    Some(j) if commutes => {
                        let moved = path.remove(j);
                        path.insert(k, moved);
                    }
                    _ => {
                        // Else declare `name` before it, and start again.
                        before.push((id(&name)?, f));
                        continue 'order;
                    }
                }
            }
            let (name, ports) = parse_label(&path[k]);
            match cvm.step() {
                Ok(Step::Fired { ops, .. }) if cvm.net().op(ops[0]).name == name => {}
                other => {
                    return Err(Stop::Disagree(format!(
                        "step {}: the engine did not fire `{name}`: {other:?}",
                        k + 1
                    )));
                }
            }
            if let Some(ports) = ports {
                // What an output with no connection emits is dropped (docs/semantics.md §1):
                // only the connected ones can be seen.
                let connected = |p: &&&str| {
                    net.connections()
                        .iter()
                        .any(|c| net.output_name(c.from) == format!("{name}.{p}"))
                };
                let mut emitted = emitted_ports(&cvm);
                let mut wanted: Vec<String> = ports
                    .iter()
                    .filter(connected)
                    .map(|p| (*p).to_owned())
                    .collect();
                emitted.sort();
                wanted.sort();
                if emitted != wanted {
                    return Err(Stop::Data {
                        op: name.to_owned(),
                        message: format!(
                            "step {}: `{name}` emitted on {emitted:?}, the witness says {wanted:?}",
                            k + 1
                        ),
                    });
                }
            }
        }
        return Ok(cvm);
    }
}

/// [`drive`], steering the data where it takes another branch than the witness: the test of
/// the predicate deciding a gate, or of a guard, is negated. The verifier does not see data
/// (docs/semantics.md §8.1), so the steered net has the same report — checked. Returns the
/// engine and the overrides used.
fn drive_steering(
    net: &Net,
    path: &[String],
    overrides: &[(String, Params)],
) -> Result<(Cvm, Vec<(String, Params)>), Stop> {
    let mut overrides = overrides.to_vec();
    for _ in 0..8 {
        let op = match drive(net, path, &overrides) {
            Ok(cvm) => return Ok((cvm, overrides)),
            Err(Stop::Data { op, message }) => {
                steerable(net, &op).ok_or(Stop::Data { op, message })?
            }
            Err(e) => return Err(e),
        };
        let (name, key) = op;
        let node = &net.operators()[net.op_id(&name).unwrap().index()];
        let mut params = overrides
            .iter()
            .find(|(n, _)| *n == name)
            .map_or_else(|| node.params(), |(_, p)| p.clone());
        let test = params[key].clone();
        params[key] = match test.get("not") {
            Some(inner) if test.as_object().is_some_and(|m| m.len() == 1) => inner.clone(),
            _ => json!({ "not": test }),
        };
        overrides.retain(|(n, _)| *n != name);
        overrides.push((name, params));
    }
    Err(Stop::Data {
        op: String::new(),
        message: format!("the data cannot be steered along {path:?}"),
    })
}

/// The operator and param whose test decides where `op` emits: a gate's predicate, a guard.
fn steerable(net: &Net, op: &str) -> Option<(String, &'static str)> {
    let id = net.op_id(op)?;
    let node = net.op(id);
    match &*node.spec.type_id {
        "guard" => Some((op.to_owned(), "continue_if")),
        "gate" => {
            let cond = net.connections().iter().find(|c| {
                c.to.op == id && node.spec.inputs[c.to.port as usize].name == "in_condition"
            })?;
            let p = net.op(cond.from.op);
            (p.spec.type_id == "predicate").then(|| (p.name.clone(), "test"))
        }
        _ => None,
    }
}

/// The output ports the last firing emitted on.
fn emitted_ports(cvm: &Cvm) -> Vec<String> {
    let entry = cvm.history().last().expect("a step was taken");
    let f = &entry.firings[0];
    let node = cvm.net().op(f.op);
    let mut ports: Vec<String> = f
        .written
        .iter()
        .map(|(c, _)| {
            let from = cvm.net().connections()[c.index()].from;
            node.spec.outputs[from.port as usize].name.to_string()
        })
        .collect();
    ports.dedup();
    ports
}

/// The connections NEW in the engine's marking, by name, sorted.
fn new_conns(cvm: &Cvm) -> Vec<String> {
    let mut v: Vec<String> = cvm
        .net()
        .connections()
        .iter()
        .filter(|c| cvm.state_of(&c.name).map(|v| v.state) == Some(ConnState::New))
        .map(|c| c.name.clone())
        .collect();
    v.sort();
    v
}

/// Every connection's state in the engine, by name, sorted.
fn states(cvm: &Cvm) -> Vec<(String, ConnState)> {
    let mut v: Vec<(String, ConnState)> = cvm
        .net()
        .connections()
        .iter()
        .map(|c| (c.name.clone(), cvm.state_of(&c.name).unwrap().state))
        .collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// What was checked of a report's witnesses.
#[derive(Debug, Default, PartialEq)]
struct Checked {
    deadlocks: usize,
    options: usize,
    /// Witnesses the engine could not be made to follow: the data goes another way, or no
    /// declaration order leads it there.
    not_followed: Vec<String>,
}

impl Checked {
    fn add(&mut self, other: Checked) {
        self.deadlocks += other.deadlocks;
        self.options += other.options;
        self.not_followed.extend(other.not_followed);
    }
}

/// Drives the engine along the report's deadlock and option-to-complete witnesses and checks
/// where it ends against the report and the verifier's own replay ([`follow`]).
fn check_witnesses(net: &Net, report: &Report, overrides: &[(String, Params)]) -> Checked {
    let mut checked = Checked::default();
    let whole = |e: Stop| panic!("{}: {e:?}\n{}", net.name(), net.to_cm());
    let d = &report.properties.deadlock_free;
    let same_report = |steered: &[(String, Params)]| {
        if steered != overrides {
            let order: Vec<usize> = (0..net.operators().len()).collect();
            let other = verify(&reordered(net, &order, steered), &VerifyOptions::default());
            assert_eq!(
                other.to_json(),
                report.to_json(),
                "{}: steering changed the report",
                net.name()
            );
        }
    };
    if let Some(path) = &d.path {
        match drive_steering(net, path, overrides) {
            Ok((mut cvm, steered)) => {
                same_report(&steered);
                let abstract_end = follow(net, path).expect("the verifier replays its witness");
                // The engine, on its own, finds no firing left: DEADLOCK, the same tokens stuck.
                match cvm.step() {
                    Ok(Step::Ended(EndState::Deadlock { stuck })) => {
                        assert_eq!(new_conns(&cvm), sorted(d.new.clone()), "{}", net.name());
                        let TraceEnd::Deadlock { stuck: model } = abstract_end.end else {
                            panic!("{}: follow does not end in DEADLOCK", net.name());
                        };
                        assert_eq!(new_conns(&cvm), sorted(model), "{}", net.name());
                        // Each stuck consumer is named, and only those.
                        let mut named: Vec<String> = stuck.into_iter().map(|s| s.op).collect();
                        named.sort();
                        named.dedup();
                        let mut consumers: Vec<String> = d
                            .new
                            .iter()
                            .map(|c| {
                                let c = cvm.net().conn_id(c).unwrap();
                                let to = cvm.net().connections()[c.index()].to.op;
                                cvm.net().op(to).name.clone()
                            })
                            .collect();
                        consumers.sort();
                        consumers.dedup();
                        assert_eq!(named, consumers, "{}", net.name());
                    }
                    other => panic!(
                        "{}: after the deadlock witness {path:?} the engine goes on: {other:?}\n{}",
                        net.name(),
                        net.to_cm()
                    ),
                }
                assert_eq!(
                    states(&cvm),
                    sorted_states(abstract_end.marking),
                    "{}",
                    net.name()
                );
                checked.deadlocks += 1;
            }
            Err(Stop::Data { message, .. } | Stop::Unschedulable(message)) => {
                checked.not_followed.push(message)
            }
            Err(e) => whole(e),
        }
    }
    let c = &report.properties.option_to_complete;
    if let Some(path) = &c.path {
        match drive_steering(net, path, overrides) {
            Ok((cvm, steered)) => {
                same_report(&steered);
                let model = follow(net, path).expect("the verifier replays its witness");
                assert_eq!(states(&cvm), sorted_states(model.marking), "{}", net.name());
                assert_eq!(new_conns(&cvm), sorted(c.new.clone()), "{}", net.name());
                checked.options += 1;
            }
            Err(Stop::Data { message, .. } | Stop::Unschedulable(message)) => {
                checked.not_followed.push(message)
            }
            Err(e) => whole(e),
        }
    }
    checked
}

fn sorted_states(mut v: Vec<(String, ConnState)>) -> Vec<(String, ConnState)> {
    v.sort();
    v
}

fn report(net: &Net) -> Report {
    verify(net, &VerifyOptions::default())
}

fn value(v: serde_json::Value) -> Params {
    let mut p = Params::new();
    p.insert("value".into(), v);
    p
}

#[test]
fn the_xor_split_and_join_deadlock_witness_deadlocks_the_engine() {
    let net = bad_xor_split_and_join();
    let r = report(&net);
    let path = r.witness_path.clone().unwrap();
    assert_eq!(path, ["src", "split", "test", "choose:out_true", "a"]);
    assert_eq!(
        check_witnesses(&net, &r, &[]),
        Checked {
            deadlocks: 1,
            options: 1, // the initial marking itself: its witness is empty
            not_followed: vec![]
        }
    );
    // The engine's own report of that deadlock names the join and its EMPTY input.
    let mut cvm = drive(&net, &path, &[]).unwrap();
    match cvm.step().unwrap() {
        Step::Ended(EndState::Deadlock { stuck }) => {
            assert_eq!(stuck.len(), 1, "{stuck:?}");
            assert_eq!(stuck[0].op, "both");
            assert_eq!(stuck[0].input.as_deref(), Some("in_b"));
            assert_eq!(stuck[0].reason, cameleon::engine::StuckReason::Empty);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_livelock_witness_leads_the_engine_into_the_loop_it_reports() {
    let net = bad_loop_without_exit();
    let r = report(&net);
    let c = &r.properties.option_to_complete;
    assert_eq!(
        c.path.as_deref(),
        Some(&["src", "split", "test", "choose:out_false"].map(String::from)[..])
    );
    let path = c.path.clone().unwrap();
    // With the shipped value the gate goes `out_true`: the engine does not follow the witness
    // as it is...
    match drive(&net, &path, &[]) {
        Err(Stop::Data { op, message }) => {
            assert_eq!(op, "choose");
            assert!(message.contains("step 4"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // ... but does with a value the test rejects, or with the test negated (what
    // `check_witnesses` steers), and reaches the reported marking.
    let other = vec![("src".to_owned(), value(json!("y")))];
    let (_, steered) = drive_steering(&net, &path, &[]).unwrap();
    assert_eq!(steered.len(), 1);
    assert_eq!(steered[0].0, "test");
    assert_eq!(steered[0].1["test"], json!({"not": {"eq": "x"}}));
    for overrides in [&[][..], &other[..]] {
        assert_eq!(
            check_witnesses(&net, &r, overrides),
            Checked {
                deadlocks: 0,
                options: 1,
                not_followed: vec![]
            }
        );
    }
    // From there the engine spins until its loop bound: the livelock.
    let mut cvm = drive(&net, &path, &other).unwrap();
    cvm.set_max_loop_iterations(5);
    assert_eq!(
        cvm.run().unwrap(),
        EndState::LoopLimit {
            op: "spin".into(),
            limit: 5
        }
    );
}

/// A witness the engine cannot follow is reported, not glossed over: `choose` is not enabled
/// before `test` has fired.
#[test]
fn a_path_the_engine_cannot_take_is_refused() {
    let net = bad_xor_split_and_join();
    let path = ["src", "split", "choose:out_true"].map(String::from);
    match drive(&net, &path, &[]) {
        Err(Stop::Disagree(m)) => assert!(m.contains("step 3"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Every deadlock and option-to-complete witness the verifier reports on the shipped examples
/// (but those of `satellites/`, whose types only satellites host, and of `agents/`, whose
/// supervisor calls the net-tools its `cameleon.yaml` offers: `net_tools.rs` checks them).
#[test]
fn the_witnesses_of_the_shipped_examples_replay_in_the_engine() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    let mut todo = vec![dir];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir()
                && !p.join("Cargo.toml").exists()
                && !p.ends_with("satellites")
                && !p.ends_with("agents")
            {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "cm") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut total = Checked::default();
    for f in &files {
        let net = Net::from_cm_file(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        total.add(check_witnesses(&net, &report(&net), &[]));
    }
    eprintln!("{} examples: {total:?}", files.len());
    assert_eq!(total.not_followed, Vec::<String>::new());
    assert!(total.deadlocks >= 2 && total.options >= 2, "{total:?}");
}

/// Every deadlock and option-to-complete witness the verifier reports on random nets (those of
/// `verify.rs`'s engine-vs-abstraction property) replays in the engine.
#[test]
fn the_witnesses_of_random_nets_replay_in_the_engine() {
    let mut runner = TestRunner::deterministic();
    let strategy = (
        1usize..=2,
        proptest::collection::vec(kind(), 1..=10),
        proptest::collection::vec(0usize..64, 1..=32),
    );
    let mut total = Checked::default();
    for _ in 0..256 {
        let (sources, kinds, picks) = strategy.new_tree(&mut runner).unwrap().current();
        let net = random_net(sources, &kinds, &picks);
        let r = report(&net);
        if !r.complete {
            continue;
        }
        total.add(check_witnesses(&net, &r, &[]));
    }
    eprintln!("256 random nets: {total:?}");
    assert_eq!(total.not_followed, Vec::<String>::new());
    assert!(total.deadlocks >= 100 && total.options >= 100, "{total:?}");
}
