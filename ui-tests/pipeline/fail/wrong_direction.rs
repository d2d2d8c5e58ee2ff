// Asserts: an input used as a connection's source and an output used as its target are compile
// errors, each at its own endpoint and naming it.
use cameleon::ops::{Sink, Source, Transform};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "backwards";
        let source = Source::new("hi");
        let up = Transform::new();
        let sink = Sink::new();
        source.out_data -> up.in_data;
        sink.in_data -> up.out_data;
    };
}
