// Asserts: a connection naming an instance that was not declared is a compile error at that
// name, with a "did you mean" for a close name and the list of instances otherwise.
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "unknown";
        let source = Source::new("hi");
        let sink = Sink::new();
        sourc.out_data -> sink.in_data;
        source.out_data -> drain.in_data;
    };
}
