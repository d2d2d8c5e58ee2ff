//! Unit tests of the verifier's internals: state packing and the state table.

use super::model::Model;
use super::store::{ROOT, Store, hash};
use crate::net::Net;
use crate::ops::{Accumulator, Sink, Source};

/// `src` feeds `fan` sinks and an accumulator of `n`, which feeds `out`.
fn fan_out(fan: usize, n: usize) -> Net {
    let mut b = Net::builder("fan");
    b.add("src", Source::new("x"));
    b.add("acc", Accumulator::new(n));
    b.add("out", Sink::new());
    for i in 0..fan {
        b.add(format!("s{i}"), Sink::new());
        b.connect("src.out_data", format!("s{i}.in_data"));
    }
    b.connect("src.out_data", "acc.in_data")
        .connect("acc.out_data", "out.in_data");
    b.build().expect("valid")
}

#[test]
fn connection_fields_are_two_bits_and_control_fields_never_straddle_words() {
    // 31 connections take 62 bits; the accumulator's 10-bit control field goes to word 1.
    let net = fan_out(29, 1000);
    let m = Model::new(&net);
    assert_eq!(m.n_conns, 31);
    assert_eq!((m.fields[30].word, m.fields[30].shift), (0, 60));
    let control = m.fields[31];
    assert_eq!((control.word, control.shift, control.radix), (1, 0, 1000));
    assert_eq!(m.words, 2);
    let mut s = vec![0u64; m.words];
    control.set(&mut s, 999);
    m.fields[30].set(&mut s, 2);
    m.fields[0].set(&mut s, 1);
    assert_eq!(
        (m.fields[0].get(&s), m.fields[30].get(&s), control.get(&s)),
        (1, 2, 999)
    );
    assert!(m.any_new(&s));
    m.fields[0].set(&mut s, 2);
    assert!(
        !m.any_new(&s),
        "a control value is never read as a NEW connection"
    );
}

#[test]
fn the_store_finds_every_state_across_growth_and_chunks() {
    // 150 000 states span three chunks and many doublings of the table, the tags shorter
    // after each.
    {
        let words = 3;
        let mut t = Store::new(words);
        let state = |i: u64| [i, i.wrapping_mul(0x9e37_79b9), !i];
        for i in 0..150_000u64 {
            let s = state(i);
            let h = hash(&s);
            let slot = t.find(&s, h).expect_err("not stored yet");
            let parent = if i == 0 { ROOT } else { (i / 2) as u32 };
            assert_eq!(t.put(slot, &s, h, parent), i as u32);
        }
        assert_eq!(t.len(), 150_000);
        for i in (0..150_000u64).rev() {
            let s = state(i);
            assert_eq!(t.find(&s, hash(&s)), Ok(i as u32));
            assert_eq!(t.state(i as u32), &s[..]);
        }
        let absent = state(150_000);
        assert!(t.find(&absent, hash(&absent)).is_err());
        assert_eq!(
            t.path_to(100_000),
            [
                0, 1, 3, 6, 12, 24, 48, 97, 195, 390, 781, 1562, 3125, 6250, 12500, 25000, 50000,
                100_000
            ]
        );
        // Three full chunks' worth of states at most, and the table: no doubling slack on the
        // states themselves.
        assert!(
            t.bytes() < 150_000 * (3 * 8 + 4) + (1 << 18) * 4 + 65_536 * (3 * 8 + 4),
            "{}",
            t.bytes()
        );
    }
}

#[test]
fn appended_runs_cover_the_new_numbers_once_in_order_across_chunks() {
    // Shares of a level as the numbering hands them to threads: some empty, some within a
    // chunk, some spanning two or three chunks (65 536 states each).
    let words = 2;
    let mut t = Store::new(words);
    let state = |i: usize| [i as u64, !(i as u64)];
    for i in 0..1000 {
        t.states.push(&state(i), ROOT);
    }
    let counts = [0, 70_000, 0, 5, 140_000, 1, 0];
    let runs = t.states.append(&counts);
    assert_eq!(runs.len(), counts.len());
    let mut next = 1000;
    for (share, (runs, &count)) in runs.into_iter().zip(&counts).enumerate() {
        assert_eq!(
            runs.iter().map(|r| r.parents.len()).sum::<usize>(),
            count,
            "share {share}"
        );
        for r in runs {
            assert_eq!(r.first, next, "share {share}: runs are consecutive");
            assert_eq!(r.words.len(), r.parents.len() * words);
            assert!(
                (r.first >> 16) == ((r.first + r.parents.len() - 1) >> 16),
                "a run stays in its chunk"
            );
            next += r.parents.len();
            for (i, (w, p)) in r.words.chunks_exact_mut(words).zip(r.parents).enumerate() {
                w.copy_from_slice(&state(r.first + i));
                *p = (r.first + i) as u32 / 2;
            }
        }
    }
    assert_eq!((t.len(), next), (1000 + 210_006, 1000 + 210_006));
    for id in 0..t.len() {
        assert_eq!(t.state(id as u32), state(id));
        let parent = if id < 1000 { ROOT } else { id as u32 / 2 };
        assert_eq!(t.parent(id as u32), parent);
    }
}

// ---------------------------------------------------------------------------------------------
// The conditions of the stubborn sets (docs/semantics.md §8.6), checked one by one on every
// reachable state of random nets.

#[path = "../../tests/nets/mod.rs"]
mod nets;

use super::explore::Explored;
use super::model::Blames;
use super::parallel::explore_full;
use proptest::prelude::*;

/// Every stored state of a full exploration of `net` (at most 3 000).
fn states(net: &Net) -> (Model<'_>, Explored) {
    let mut m = Model::new(net);
    let ex = explore_full(&mut m, 3_000, 1, &mut |_| {});
    (m, ex)
}

/// D2: each blame of a disabled operator keeps it disabled in every state that agrees on the
/// blamed fields — checked over all the operator's local combinations. And the operators
/// `candidates` leaves out are disabled.
fn blames_are_sound(net: &Net) -> Result<(), TestCaseError> {
    let (mut m, ex) = states(net);
    let mut blames = Blames::default();
    let mut vals = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut candidates = Vec::new();
    for id in 0..ex.len() as u32 {
        let s = ex.state(id).to_vec();
        // The operators left out of the candidates are disabled.
        m.candidates(&s, &mut candidates);
        for o in 0..m.ops.len() {
            if !candidates.contains(&(o as u32)) {
                prop_assert_eq!(m.outcomes_in(o, &s).1, 0, "`{}` left out", &net.ops[o].name);
            }
        }
        for o in 0..m.ops.len() {
            if m.outcomes_in(o, &s).1 > 0 || m.ops[o].size > 729 {
                continue;
            }
            let reads = m.ops[o].reads.clone();
            let here: Vec<u32> = reads
                .iter()
                .map(|&f| m.fields[f as usize].get(&s))
                .collect();
            if !seen.insert((o, here.clone())) {
                continue; // blames depend on the operator's local combination only
            }
            m.blames(o, &s, &mut blames);
            prop_assert!(blames.len() > 0);
            for i in 0..blames.len() {
                let blame = blames.get(i).to_vec();
                for idx in 0..m.ops[o].size as u128 {
                    m.decode(o, idx, &mut vals);
                    let agrees = reads
                        .iter()
                        .zip(&vals)
                        .zip(&here)
                        .all(|((f, v), h)| !blame.contains(f) || v == h);
                    if agrees {
                        let cell = m.cell_of(o, &vals);
                        prop_assert_eq!(
                            super::model::unpack(cell).1,
                            0,
                            "`{}` blamed on fields {:?} in state {}, yet enabled with {:?}",
                            &net.ops[o].name,
                            blame,
                            id,
                            vals
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

/// D1: two operators not dependent on each other neither enable nor disable each other, and
/// firing them in either order gives the same states.
fn independent_operators_commute(net: &Net) -> Result<(), TestCaseError> {
    let (mut m, ex) = states(net);
    let after = |m: &mut Model<'_>, s: &[u64], o: usize| -> Vec<Vec<u64>> {
        let (start, len) = m.outcomes_in(o, s);
        let mut v: Vec<Vec<u64>> = (start..start + len)
            .map(|k| {
                let mut t = s.to_vec();
                m.apply(k, &mut t);
                t
            })
            .collect();
        v.sort();
        v
    };
    for id in 0..ex.len() as u32 {
        let s = ex.state(id).to_vec();
        for a in 0..m.ops.len() {
            let next_a = after(&mut m, &s, a);
            if next_a.is_empty() {
                continue;
            }
            for b in 0..m.ops.len() {
                if b == a || m.dependents[a].contains(&(b as u32)) {
                    continue;
                }
                let next_b = after(&mut m, &s, b);
                for sa in &next_a {
                    // `b` is as enabled after `a` as before, with as many outcomes.
                    let ab = after(&mut m, sa, b);
                    prop_assert_eq!(
                        ab.len(),
                        next_b.len(),
                        "`{}` then `{}`",
                        &net.ops[a].name,
                        &net.ops[b].name
                    );
                    for sb in &next_b {
                        let ba = after(&mut m, sb, a);
                        prop_assert_eq!(ba.len(), next_a.len());
                    }
                }
                let mut ab: Vec<Vec<u64>> =
                    next_a.iter().flat_map(|sa| after(&mut m, sa, b)).collect();
                let mut ba: Vec<Vec<u64>> =
                    next_b.iter().flat_map(|sb| after(&mut m, sb, a)).collect();
                ab.sort();
                ba.sort();
                prop_assert_eq!(
                    ab,
                    ba,
                    "`{}` and `{}` commute",
                    &net.ops[a].name,
                    &net.ops[b].name
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn blames_keep_disabled_operators_disabled(
        sources in 1usize..=3,
        kinds in proptest::collection::vec(nets::kind(), 1..=10),
        picks in proptest::collection::vec(0usize..64, 1..=32),
    ) {
        blames_are_sound(&nets::random_net(sources, &kinds, &picks))?;
    }

    #[test]
    fn operators_that_are_not_dependent_commute(
        sources in 1usize..=3,
        kinds in proptest::collection::vec(nets::kind(), 1..=10),
        picks in proptest::collection::vec(0usize..64, 1..=32),
    ) {
        independent_operators_commute(&nets::random_net(sources, &kinds, &picks))?;
    }
}

// ---------------------------------------------------------------------------------------------
// Threads (docs/semantics.md §8.8): the same exploration, and the same report, for every count.

use super::parallel::{Split, explore_split};
use super::{Reduction, VerifyOptions, verify_split};

/// The exploration one thread does state after state, kept simple: states in discovery order
/// with their parents, how many were expanded, the edges of those, whether the budget stopped
/// it.
fn one_by_one(net: &Net, max_states: usize) -> (Vec<Vec<u64>>, Vec<u32>, usize, u64, bool) {
    let mut m = Model::new(net);
    let mut states = vec![m.initial.clone()];
    let mut parents = vec![ROOT];
    let mut index = std::collections::HashMap::from([(m.initial.clone(), 0u32)]);
    let (mut id, mut edges) = (0, 0u64);
    let mut ops = Vec::new();
    while id < states.len() {
        let s = states[id].clone();
        m.candidates(&s, &mut ops);
        let mut next = Vec::new();
        for &o in &ops {
            let (start, len) = m.outcomes_in(o as usize, &s);
            for k in start..start + len {
                let mut t = s.clone();
                m.apply(k, &mut t);
                next.push(t);
            }
        }
        for t in &next {
            if !index.contains_key(t) {
                if states.len() >= max_states {
                    return (states, parents, id, edges, true);
                }
                index.insert(t.clone(), states.len() as u32);
                states.push(t.clone());
                parents.push(id as u32);
            }
        }
        edges += next.len() as u64;
        id += 1;
    }
    (states, parents, id, edges, false)
}

/// Every thread count stores the states one thread expanding them in order would, with the same
/// numbers and parents, and gives the same report (reduced or not).
fn same_for_every_thread_count(net: &Net, max_states: u64) -> Result<(), TestCaseError> {
    let (states, parents, expanded, edges, budget_hit) = one_by_one(net, max_states as usize);
    for (threads, parts_from) in [(1, usize::MAX), (1, 1), (2, 8), (3, 1), (8, 1)] {
        let mut m = Model::new(net);
        // Every level split between the threads, however small; partitions from the first
        // state or the eighth.
        let split = Split {
            min_share: 1,
            parts_from,
        };
        let ex = explore_split(&mut m, max_states, threads, split, &mut |_| {});
        prop_assert_eq!(ex.len(), states.len(), "{} threads", threads);
        for (id, (s, &p)) in states.iter().zip(&parents).enumerate() {
            prop_assert_eq!(ex.state(id as u32), &s[..], "state {}", id);
            prop_assert_eq!(ex.store.parent(id as u32), p, "parent of {}", id);
            prop_assert_eq!(ex.store.find(s, hash(s)), Ok(id as u32));
        }
        prop_assert_eq!(
            (ex.expanded, ex.n_edges, ex.budget_hit),
            (expanded, edges, budget_hit),
            "{} threads",
            threads
        );
    }
    for reduce in [Reduction::None, Reduction::Stubborn] {
        let opts = VerifyOptions::default()
            .reduce(reduce)
            .max_states(max_states);
        let split = Split {
            min_share: 1,
            parts_from: 8,
        };
        let one = verify_split(net, &opts.threads(1), Split::DEFAULT, &mut |_| {});
        for threads in [2, 3, 8] {
            let many = verify_split(net, &opts.threads(threads), split, &mut |_| {});
            prop_assert_eq!(one.to_json(), many.to_json(), "{} threads", threads);
            prop_assert_eq!(one.to_string(), many.to_string());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn threads_explore_the_same_states_and_report_the_same(
        sources in 1usize..=3,
        kinds in proptest::collection::vec(nets::kind(), 1..=10),
        picks in proptest::collection::vec(0usize..64, 1..=32),
        budget in prop_oneof![Just(100_000u64), 1u64..200],
    ) {
        same_for_every_thread_count(&nets::random_net(sources, &kinds, &picks), budget)?;
    }
}
