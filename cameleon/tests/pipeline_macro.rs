//! `pipeline!` at run time: what the compile-time checks cannot know (an n-ary operator's extra
//! ports, set by its `arity`) is still validated when the net is built.

use cameleon::ops::{Merge, Sink, Source};
use cameleon::prelude::*;

#[test]
#[should_panic(expected = "input `m.in_c` is not connected")]
fn an_unconnected_port_past_the_default_arity_panics_with_the_validation_message() {
    let _net = pipeline! {
        name = "three-way";
        let a = Source::new("a");
        let b = Source::new("b");
        let m = Merge::new(3).expect("3 is a valid arity");
        let out = Sink::new();
        a.out_data -> m.in_a;
        b.out_data -> m.in_b;
        m.out_data -> out.in_data;
    };
}

#[test]
fn the_arity_ports_connected_give_a_valid_net() {
    let net = pipeline! {
        name = "three-way";
        let a = Source::new("a");
        let b = Source::new("b");
        let c = Source::new("c");
        let m = Merge::new(3).expect("3 is a valid arity");
        let out = Sink::new();
        a.out_data -> m.in_a;
        b.out_data -> m.in_b;
        c.out_data -> m.in_c;
        m.out_data -> out.in_data;
    };
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let got: Vec<_> = cvm.received("out").iter().map(|v| v.to_json()).collect();
    assert_eq!(got, ["a", "b", "c"]);
}
