//! The PNML export (docs/semantics.md §8) checked by an independent explorer: a small PNML reader and a
//! brute-force place/transition-net explorer that know nothing of Caméléon, agreeing with the
//! verifier on state counts, edge counts and deadlocks — for every example net and for random
//! nets.

mod nets;

use std::collections::HashMap;

use cameleon::ops::{Accumulator, Fork, Merge, Sink, Source};
use cameleon::prelude::*;
use cameleon::verify::{Reduction, VerifyOptions, to_pnml, verify};
use proptest::prelude::*;

/// A P/T net as read from PNML: places (ids), initial marking, transitions as pre/post places.
#[derive(Debug, Default)]
struct PtNet {
    places: Vec<String>,
    initial: Vec<u8>,
    pre: Vec<Vec<usize>>,
    post: Vec<Vec<usize>>,
}

fn attr<'a>(tag: &'a str, key: &str) -> Option<&'a str> {
    let at = tag.find(&format!(" {key}=\""))? + key.len() + 3;
    let end = tag[at..].find('"')? + at;
    Some(&tag[at..end])
}

/// Reads places, initial markings, transitions and arcs — the P/T core of PNML — with a
/// hand-written tag scanner.
fn read_pnml(xml: &str) -> PtNet {
    let mut net = PtNet::default();
    let mut place_of: HashMap<String, usize> = HashMap::new();
    let mut trans_of: HashMap<String, usize> = HashMap::new();
    let mut arcs: Vec<(String, String)> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        let gt = lt + rest[lt..].find('>').expect("tag closed");
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            if name == "text" && open.iter().any(|t| t == "initialMarking") {
                let n: u8 = text.trim().parse().expect("a number of tokens");
                *net.initial.last_mut().expect("inside a place") = n;
            }
            assert_eq!(open.pop().as_deref(), Some(name), "well nested");
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let name = tag.split_whitespace().next().unwrap_or("");
        match name {
            "place" => {
                let id = attr(tag, "id").expect("place id").to_owned();
                place_of.insert(id.clone(), net.places.len());
                net.places.push(id);
                net.initial.push(0);
            }
            "transition" => {
                let id = attr(tag, "id").expect("transition id").to_owned();
                trans_of.insert(id, net.pre.len());
                net.pre.push(Vec::new());
                net.post.push(Vec::new());
            }
            "arc" => arcs.push((
                attr(tag, "source").expect("arc source").to_owned(),
                attr(tag, "target").expect("arc target").to_owned(),
            )),
            _ => {}
        }
        if !self_closing {
            open.push(name.to_owned());
        }
    }
    assert!(open.is_empty(), "every element closed");
    for (s, t) in arcs {
        match (place_of.get(&s), trans_of.get(&t)) {
            (Some(&p), Some(&t)) => net.pre[t].push(p),
            _ => {
                let (t, p) = (trans_of[&s], place_of[&t]);
                net.post[t].push(p);
            }
        }
    }
    net
}

/// What brute force finds in a P/T net's reachability graph.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    states: u64,
    edges: u64,
    /// Dead markings in which a `*_NEW` place is marked.
    deadlocks: u64,
    /// From every marking, a dead marking with no `*_NEW` place marked is reachable.
    option_to_complete: bool,
    /// The reachability graph has a cycle.
    cycle: bool,
}

fn brute_force(net: &PtNet) -> Found {
    let new_places: Vec<usize> = (0..net.places.len())
        .filter(|&p| net.places[p].ends_with("_NEW"))
        .collect();
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut markings = vec![net.initial.clone()];
    index.insert(net.initial.clone(), 0);
    let mut succ: Vec<Vec<usize>> = Vec::new();
    let (mut edges, mut deadlocks) = (0, 0);
    let mut completed = Vec::new();
    let mut head = 0;
    while head < markings.len() {
        let m = markings[head].clone();
        let mut out = Vec::new();
        for t in 0..net.pre.len() {
            let mut next = m.clone();
            let mut enabled = true;
            for &p in &net.pre[t] {
                if next[p] == 0 {
                    enabled = false;
                    break;
                }
                next[p] -= 1;
            }
            if !enabled {
                continue;
            }
            for &p in &net.post[t] {
                next[p] += 1;
                assert!(next[p] <= 1, "the PNML net is 1-safe");
            }
            edges += 1;
            let id = *index.entry(next.clone()).or_insert_with(|| {
                markings.push(next);
                markings.len() - 1
            });
            out.push(id);
        }
        if out.is_empty() {
            if new_places.iter().any(|&p| m[p] > 0) {
                deadlocks += 1;
            } else {
                completed.push(head);
            }
        }
        succ.push(out);
        head += 1;
    }
    let n = markings.len();
    // Option to complete: fixpoint of "some successor can complete".
    let mut can = vec![false; n];
    for &c in &completed {
        can[c] = true;
    }
    let mut changed = true;
    while changed {
        changed = false;
        for v in 0..n {
            if !can[v] && succ[v].iter().any(|&w| can[w]) {
                can[v] = true;
                changed = true;
            }
        }
    }
    // Cycle: Kahn's algorithm leaves some marking unremoved.
    let mut indegree = vec![0usize; n];
    for out in &succ {
        for &w in out {
            indegree[w] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut removed = 0;
    while let Some(v) = ready.pop() {
        removed += 1;
        for &w in &succ[v] {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(w);
            }
        }
    }
    Found {
        states: n as u64,
        edges,
        deadlocks,
        option_to_complete: can.iter().all(|&c| c),
        cycle: removed < n,
    }
}

/// The verifier's full exploration and brute force on the exported PNML agree on `net`: the
/// same states and edges, the same verdicts; and so do the verdicts of the reduced exploration.
fn agree(net: &Net) -> Result<(), TestCaseError> {
    let opts = VerifyOptions::default().max_states(20_000);
    let r = verify(net, &opts.reduce(Reduction::None));
    if !r.complete {
        return Ok(()); // too large to compare by brute force
    }
    let xml = to_pnml(net).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let found = brute_force(&read_pnml(&xml));
    prop_assert!(!r.reduced);
    prop_assert_eq!(found.states, r.states, "states of {}", net.name());
    prop_assert_eq!(found.edges, r.edges, "edges of {}", net.name());
    prop_assert_eq!(found.deadlocks == 0, r.deadlock_free == Some(true));
    prop_assert_eq!(Some(found.option_to_complete), r.option_to_complete);
    prop_assert_eq!(Some(found.cycle), r.may_loop);
    let reduced = verify(net, &opts.reduce(Reduction::Stubborn));
    prop_assert!(reduced.reduced && reduced.complete);
    prop_assert!(reduced.states <= found.states);
    prop_assert_eq!(found.deadlocks == 0, reduced.deadlock_free == Some(true));
    prop_assert_eq!(Some(found.option_to_complete), reduced.option_to_complete);
    prop_assert_eq!(Some(found.cycle), reduced.may_loop);
    Ok(())
}

#[test]
fn pnml_of_every_example_has_the_verifiers_state_space() {
    let mut all: Vec<Net> = nets::wcp_nets().into_iter().map(|(_, n)| n).collect();
    all.push(nets::bad_xor_split_and_join());
    all.push(nets::bad_loop_without_exit());
    all.push(nets::bad_accumulator_never_done());
    all.push(nets::parallel_split(3));
    for net in &all {
        agree(net).unwrap_or_else(|e| panic!("{}: {e}", net.name()));
    }
}

#[test]
fn pnml_of_every_workflow_pattern_example_has_the_verifiers_state_space() {
    // Every operator of docs/semantics.md §10 appears in one of these (cancellations, partial
    // joins, mutex, milestone, trigger, thread split and merge, sub-nets, map).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "cm") {
            continue;
        }
        let net = cameleon::cm::Loader::new()
            .load_file(&p)
            .unwrap_or_else(|e| panic!("{e}"));
        agree(&net).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        seen += 1;
    }
    assert!(seen >= 36, "{seen} examples");
}

#[test]
fn pnml_counts_deadlocks_like_the_verifier() {
    // Two deadlocks: one per branch the gate can take.
    let xml = to_pnml(&nets::bad_xor_split_and_join()).unwrap();
    assert_eq!(brute_force(&read_pnml(&xml)).deadlocks, 2);
}

#[test]
fn pnml_is_a_well_formed_pt_net_document() {
    let xml = to_pnml(&nets::wcp4_exclusive_choice()).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    assert!(xml.contains("<pnml xmlns=\"http://www.pnml.org/version-2009/grammar/pnml\">"));
    assert!(xml.contains("type=\"http://www.pnml.org/version-2009/grammar/ptnet\""));
    // Connection names are escaped (`->`), never raw.
    assert!(xml.contains("src.out_data -&gt; split.in_data EMPTY"));
    assert!(!xml.contains("-> "));
    let pt = read_pnml(&xml);
    // Three places per connection, one marked: every connection starts EMPTY.
    let conns = nets::wcp4_exclusive_choice().connections().len();
    assert_eq!(pt.places.len(), 3 * conns);
    assert_eq!(pt.initial.iter().map(|&n| n as usize).sum::<usize>(), conns);
    // The gate contributes one transition per emission set for its one enabling combination
    // of (data NEW, condition NEW, outputs EMPTY) — among others.
    assert!(xml.contains("choose:out_true when"));
    assert!(xml.contains("choose:out_false when"));
}

#[test]
fn accumulator_control_is_exported_as_places() {
    let mut b = Net::builder("acc");
    b.add("src", Source::new("x"));
    b.add("split", Fork::<Any>::default());
    b.add("both", Merge::<Any>::default());
    b.add("collect", Accumulator::new(2));
    b.add("out", Sink::new());
    b.connect("src.out_data", "split.in_data")
        .connect("split.out_a", "both.in_a")
        .connect("split.out_b", "both.in_b")
        .connect("both.out_data", "collect.in_data")
        .connect("collect.out_data", "out.in_data");
    let net = b.build().unwrap();
    let xml = to_pnml(&net).unwrap();
    assert!(xml.contains("<place id=\"q3_0\">"));
    assert!(xml.contains("<place id=\"q3_1\">"));
    agree(&net).unwrap();
}

#[test]
fn operators_too_large_to_enumerate_export_the_combinations_met() {
    // A source feeding 13 sinks reads 13 connections: 3^13 combinations, more than are
    // enumerated. Its transitions come from the explored state space; the graph is the same.
    let mut b = Net::builder("wide");
    b.add("src", Source::new("x"));
    for i in 0..13 {
        b.add(format!("out{i}"), Sink::new());
        b.connect("src.out_data", format!("out{i}.in_data"));
    }
    let net = b.build().unwrap();
    let xml = to_pnml(&net).unwrap();
    // One combination enables the source (every output EMPTY).
    assert_eq!(xml.matches(">src when ").count(), 1);
    agree(&net).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Random nets

proptest! {
    // No failure file: a failing case is printed, minimal, in the test output.
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn pnml_agrees_with_the_verifier_on_random_nets(
        sources in 1usize..=2,
        kinds in proptest::collection::vec(nets::kind(), 1..=10),
        picks in proptest::collection::vec(0usize..64, 1..=32),
    ) {
        let net = nets::random_net(sources, &kinds, &picks);
        agree(&net)?;
    }
}
