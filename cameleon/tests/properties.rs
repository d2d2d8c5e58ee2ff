//! Property tests of the engine's invariants over random valid nets (docs/semantics.md §4–§5):
//! (a) k steps forward then k back gives the initial marking exactly, at every k;
//! (b) two runs of the same net give identical firing sequences;
//! (c) replay after back gives the same markings as the original forward, without calling `run`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cameleon::ops::*;
use cameleon::prelude::*;
use common::{BoolSource, Counting, fired};
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Str,
    Json,
    /// A JSON list (an accumulator's output): not a number, so not fed to counters or tests.
    List,
}

/// Builds a random valid net from a list of choices, every operator wrapped to count its runs.
struct Gen {
    b: NetBuilder,
    open: Vec<(String, Ty)>,
    n: usize,
    calls: Arc<AtomicUsize>,
}

impl Gen {
    fn add(&mut self, kind: &str, op: impl Operator) -> String {
        self.n += 1;
        let name = format!("{kind}{}", self.n);
        self.b.add(name.clone(), Counting::wrap(op, &self.calls));
        name
    }

    fn take(&mut self, pick: u8) -> (String, Ty) {
        let i = pick as usize % self.open.len();
        self.open.remove(i)
    }

    fn take_of(&mut self, ty: Ty, pick: u8) -> Option<String> {
        let candidates: Vec<usize> = (0..self.open.len())
            .filter(|&i| self.open[i].1 == ty)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(
            self.open
                .remove(candidates[pick as usize % candidates.len()])
                .0,
        )
    }

    fn connect(&mut self, from: &str, to: &str) {
        self.b.connect(from, to);
    }

    fn source(&mut self, pick: u8) {
        if pick.is_multiple_of(2) {
            let s = self.add("src", Source::new(format!("s{pick}")));
            self.open.push((format!("{s}.out_data"), Ty::Str));
        } else {
            let s = self.add("num", Const::new(json!(pick % 7)));
            self.open.push((format!("{s}.out_data"), Ty::Json));
        }
    }

    fn step(&mut self, action: u8, p: u8, q: u8) {
        if self.open.is_empty() {
            self.source(p);
            return;
        }
        match action % 9 {
            0 => self.source(p),
            1 => {
                let (o, _) = self.take(p);
                let t = self.add("t", Transform::new());
                self.connect(&o, &format!("{t}.in_data"));
                self.open.push((format!("{t}.out_data"), Ty::Str));
            }
            2 => {
                let (o, ty) = self.take(p);
                let arity = 2 + (q % 2) as usize;
                let f = self.add("fork", Fork::<Any>::new(arity).unwrap());
                self.connect(&o, &format!("{f}.in_data"));
                for i in 0..arity {
                    self.open
                        .push((format!("{f}.{}", letter_port("out", i)), ty));
                }
            }
            3 | 4 => {
                // A two-input structural operator over two open outputs.
                if self.open.len() < 2 {
                    return self.source(p);
                }
                let (a, ta) = self.take(p);
                let b_ty = ta;
                let Some(bb) = self.take_of(b_ty, q) else {
                    self.open.push((a, ta));
                    return self.source(q);
                };
                let kind = (action / 9) % 3;
                let (name, outs): (String, Vec<(String, Ty)>) = match kind {
                    0 => {
                        let m = self.add("merge", Merge::<Any>::default());
                        (m.clone(), vec![(format!("{m}.out_data"), ta)])
                    }
                    1 => {
                        let j = self.add("join", Join::<Any>::default());
                        (j.clone(), vec![(format!("{j}.out_data"), ta)])
                    }
                    _ => {
                        let br = self.add("barrier", Barrier::<Any, Any>::default());
                        (
                            br.clone(),
                            vec![(format!("{br}.out_a"), ta), (format!("{br}.out_b"), b_ty)],
                        )
                    }
                };
                self.connect(&a, &format!("{name}.in_a"));
                self.connect(&bb, &format!("{name}.in_b"));
                self.open.extend(outs);
            }
            5 => {
                // A gate on a condition computed by a predicate over a JSON value (or a constant).
                let (d, ty) = self.take(p);
                let g = self.add("gate", Gate::<Any>::new());
                self.connect(&d, &format!("{g}.in_data"));
                let cond = match self.take_of(Ty::Json, q) {
                    Some(j) => {
                        let pr = self.add(
                            "pred",
                            Predicate::new(Test::parse(&json!({"lt": 3})).unwrap()),
                        );
                        self.connect(&j, &format!("{pr}.in_data"));
                        format!("{pr}.out_data")
                    }
                    None => {
                        let c = self.add("cond", BoolSource(q.is_multiple_of(2)));
                        format!("{c}.out_data")
                    }
                };
                self.connect(&cond, &format!("{g}.in_condition"));
                self.open.push((format!("{g}.out_true"), ty));
                self.open.push((format!("{g}.out_false"), ty));
            }
            6 => {
                // A counting loop: merge -> counter -> guard -> back to merge, exit open.
                let Some(j) = self.take_of(Ty::Json, p) else {
                    return self.source(1);
                };
                let m = self.add("loop", Merge::<Any>::default());
                let c = self.add("inc", Counter::new());
                let g = self.add(
                    "guard",
                    Guard::<Any>::new(Test::parse(&json!({"lt": 2 + q % 5})).unwrap()),
                );
                self.connect(&j, &format!("{m}.in_a"));
                self.connect(&format!("{m}.out_data"), &format!("{c}.in_data"));
                self.connect(&format!("{c}.out_data"), &format!("{g}.in_data"));
                self.connect(&format!("{g}.out_continue"), &format!("{m}.in_b"));
                self.open.push((format!("{g}.out_exit"), Ty::Json));
            }
            7 => {
                let Some(j) = self.take_of(Ty::Json, p) else {
                    return self.source(1);
                };
                let a = self.add("acc", Accumulator::new(1 + (q % 2) as usize));
                self.connect(&j, &format!("{a}.in_data"));
                self.open.push((format!("{a}.out_data"), Ty::List));
            }
            _ => {
                let Some(s) = self.take_of(Ty::Str, p) else {
                    return self.source(0);
                };
                let Some(s2) = self.take_of(Ty::Str, q) else {
                    self.open.push((s, Ty::Str));
                    return self.source(0);
                };
                let f = self.add("fmt", Format::default());
                self.connect(&s, &format!("{f}.in_main"));
                self.connect(&s2, &format!("{f}.in_meta"));
                self.open.push((format!("{f}.out_data"), Ty::Str));
            }
        }
    }
}

fn build(choices: &[(u8, u8, u8)], calls: &Arc<AtomicUsize>) -> Net {
    let mut g = Gen {
        b: Net::builder("random"),
        open: Vec::new(),
        n: 0,
        calls: calls.clone(),
    };
    g.source(0);
    for &(a, p, q) in choices {
        g.step(a, p, q);
    }
    for (o, _) in std::mem::take(&mut g.open) {
        let s = g.add("sink", Sink::new());
        g.connect(&o, &format!("{s}.in_data"));
    }
    g.b.build().expect("generated nets are valid")
}

fn choices() -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    prop::collection::vec(any::<(u8, u8, u8)>(), 0..14)
}

/// Runs to the end (or to an operator failure, which applies nothing), recording the marking
/// after every step (index = depth).
fn forward(cvm: &mut Cvm) -> Vec<cameleon::engine::Marking> {
    let mut m = vec![cvm.marking()];
    while let Ok(Step::Fired { .. }) = cvm.step() {
        m.push(cvm.marking());
    }
    m
}

fn engine(c: &[(u8, u8, u8)], calls: &Arc<AtomicUsize>, mode: Mode) -> Cvm {
    Cvm::builder(build(c, calls))
        .mode(mode)
        .max_steps(400)
        .build()
}

/// (a) k steps forward then k back gives the marking of depth k, at every k, and every firing
/// count back at 0.
fn back_restores_every_marking(c: &[(u8, u8, u8)], mode: Mode) -> Result<(), TestCaseError> {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut cvm = engine(c, &calls, mode);
    let markings = forward(&mut cvm);
    let n = cvm.depth();
    for k in (0..n).rev() {
        cvm.back().unwrap();
        prop_assert_eq!(cvm.depth(), k);
        prop_assert!(
            cvm.marking() == markings[k],
            "{:?}: marking differs after going back to depth {}",
            mode,
            k
        );
    }
    for op in 0..cvm.net().operators().len() {
        prop_assert_eq!(cvm.fire_count(OpId(op as u32)), 0);
    }
    Ok(())
}

/// (b) two runs of the same net fire the same sequence and end in the same values.
fn runs_are_deterministic(c: &[(u8, u8, u8)], mode: Mode) -> Result<(), TestCaseError> {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut a = engine(c, &calls, mode);
    let mut b = engine(c, &calls, mode);
    let (ea, eb) = (a.run().unwrap(), b.run().unwrap());
    prop_assert_eq!(ea, eb);
    prop_assert_eq!(fired(&a), fired(&b));
    let values = |cvm: &Cvm| -> Vec<_> {
        cvm.marking()
            .0
            .into_iter()
            .map(|(s, t)| (s, t.map(|t| t.value.to_json())))
            .collect()
    };
    prop_assert_eq!(values(&a), values(&b));
    Ok(())
}

/// (c) back to a depth `pick` chooses among the `n` depths reached, then forward again: the same
/// markings, without calling `run`.
fn replay_reproduces_the_markings(
    c: &[(u8, u8, u8)],
    pick: impl FnOnce(usize) -> usize,
    mode: Mode,
) -> Result<(), TestCaseError> {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut cvm = engine(c, &calls, mode);
    let markings = forward(&mut cvm);
    let executed = calls.load(Ordering::SeqCst);
    prop_assert_eq!(
        executed,
        cvm.history().recorded_firings(),
        "one run per fresh firing"
    );
    let back_to = pick(markings.len());
    while cvm.depth() > back_to {
        cvm.back().unwrap();
    }
    let replayed = forward(&mut cvm);
    prop_assert_eq!(
        calls.load(Ordering::SeqCst),
        executed,
        "replay must not call run"
    );
    prop_assert!(
        replayed[..] == markings[back_to..],
        "{:?}: replayed markings differ",
        mode
    );
    Ok(())
}

// Failures are not persisted to a file (a file of seeds silently stops meaning anything when
// the generator changes): a case proptest finds is pinned below as a plain test instead.
proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn k_steps_forward_then_k_back_restores_the_marking_exactly(c in choices()) {
        back_restores_every_marking(&c, Mode::Sequential)?;
    }

    #[test]
    fn two_runs_of_the_same_net_fire_the_same_sequence(c in choices()) {
        runs_are_deterministic(&c, Mode::Sequential)?;
    }

    #[test]
    fn replay_after_back_reproduces_the_markings_without_calling_run(c in choices(), k in any::<prop::sample::Index>()) {
        replay_reproduces_the_markings(&c, |n| k.index(n), Mode::Sequential)?;
    }
}

// The same properties in parallel mode (docs/semantics.md §7: a maximal step is one history
// entry, undone and replayed as a unit). Fewer cases: each behavioral firing goes through
// tokio's blocking pool.
proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parallel_k_steps_forward_then_k_back_restores_the_marking_exactly(c in choices()) {
        back_restores_every_marking(&c, Mode::Parallel)?;
    }

    #[test]
    fn parallel_two_runs_of_the_same_net_fire_the_same_sequence(c in choices()) {
        runs_are_deterministic(&c, Mode::Parallel)?;
    }

    #[test]
    fn parallel_replay_after_back_reproduces_the_markings_without_calling_run(c in choices(), k in any::<prop::sample::Index>()) {
        replay_reproduces_the_markings(&c, |n| k.index(n), Mode::Parallel)?;
    }
}

/// The cases proptest once shrank failures to (formerly in `properties.proptest-regressions`,
/// which `failure_persistence: None` kept from ever running), each through every property in
/// both modes.
const PINNED: &[&[(u8, u8, u8)]] = &[
    &[(57, 19, 0), (119, 0, 0), (115, 0, 152), (51, 0, 0)],
    &[(12, 31, 0), (124, 0, 68), (140, 104, 0)],
];

#[test]
fn pinned_regressions_still_hold() {
    for (i, c) in PINNED.iter().enumerate() {
        for mode in [Mode::Sequential, Mode::Parallel] {
            let check = |r: Result<(), TestCaseError>| {
                if let Err(e) = r {
                    panic!("pinned case {i} ({c:?}), {mode:?}: {e}");
                }
            };
            check(back_restores_every_marking(c, mode));
            check(runs_are_deterministic(c, mode));
            check(replay_reproduces_the_markings(c, |_| 0, mode));
            check(replay_reproduces_the_markings(c, |n| n / 2, mode));
            check(replay_reproduces_the_markings(c, |n| n - 1, mode));
        }
    }
}

#[test]
fn generated_nets_are_not_trivial() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut total, mut loops, mut deadlocks) = (0, 0, 0);
    for _ in 0..64 {
        let c = choices().new_tree(&mut runner).unwrap().current();
        let calls = Arc::new(AtomicUsize::new(0));
        let net = build(&c, &calls);
        loops += usize::from(net.operators().iter().any(|o| o.name.starts_with("loop")));
        let mut cvm = Cvm::builder(net).max_steps(400).build();
        deadlocks += usize::from(matches!(cvm.run().unwrap(), EndState::Deadlock { .. }));
        total += cvm.depth();
    }
    eprintln!("64 nets: {total} firings, {loops} with loops, {deadlocks} deadlocks");
    assert!(
        total / 64 >= 8,
        "nets should fire at least 8 times on average, got {}",
        total / 64
    );
    assert!(
        loops >= 4 && deadlocks >= 1,
        "the generator should cover loops and deadlocks"
    );
}
