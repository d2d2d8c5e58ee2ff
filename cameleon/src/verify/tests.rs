//! Unit tests of the verifier's internals: state packing and the state table.

use super::store::{ROOT, Store, hash};
use super::model::Model;
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
    // 150 000 states span three chunks and many doublings of the table; with a budget of 2^18
    // the slots keep 13 bits of tag, with one of 2^32 - 2 none (every probe compares states).
    for budget in [1 << 18, u32::MAX as usize - 1] {
        let words = 3;
        let mut t = Store::new(words, budget);
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
        assert_eq!(t.path_to(100_000), [0, 1, 3, 6, 12, 24, 48, 97, 195, 390, 781, 1562, 3125, 6250, 12500, 25000, 50000, 100_000]);
        // Three full chunks' worth of states at most, and the table: no doubling slack on the
        // states themselves.
        assert!(t.bytes() < 150_000 * (3 * 8 + 4) + (1 << 18) * 4 + 65_536 * (3 * 8 + 4), "{}", t.bytes());
    }
}
