//! `pipeline!` at run time: what the compile-time checks cannot know (an n-ary operator's extra
//! ports, set by its `arity`) is still validated when the net is built; and standard operators
//! of every kind (generic, async) are usable in it.

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

#[test]
fn an_async_operator_takes_its_type_from_its_connections() {
    use cameleon::ops::{Delay, Format};

    // `Delay` is declared with `#[operator(…, exec = async)]`: it has port handles, and its one
    // type parameter is inferred from what feeds it (here a DataString into format's input).
    let net = pipeline! {
        name = "delayed";
        let a = Source::new("x");
        let b = Source::new("y");
        let wait = Delay::after(1);
        let fmt = Format::default();
        let out = Sink::new();
        a.out_data -> wait.in_data;
        wait.out_data -> fmt.in_main;
        b.out_data -> fmt.in_meta;
        fmt.out_data -> out.in_data;
    };
    let wait = &net.operators()[2];
    assert_eq!(wait.spec.outputs[0].ty, TypeRef::of::<DataString>());
    assert_eq!(wait.operator().execution(), Execution::Async);
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), "x y");
}
