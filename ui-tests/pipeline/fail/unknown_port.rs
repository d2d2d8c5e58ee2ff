// Asserts: a connection naming a port the operator does not have is a compile error at the
// port, suggesting the close name.
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "unknown-port";
        let source = Source::new("hi");
        let sink = Sink::new();
        source.out_dat -> sink.in_data;
    };
}
