// Asserts: a required input left unconnected is a compile error at the instance, naming the
// instance and the port; an optional input (`accumulator.in_done`) may stay unconnected; a
// source that feeds nothing is reported the same way.
use cameleon::ops::{Accumulator, Format, Sink, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "dangling";
        let text = Source::new("hi");
        let unused = Source::new("never connected");
        let both = Format::default();
        let acc = Accumulator::new(2);
        let sink = Sink::new();
        text.out_data -> both.in_main;
        both.out_data -> acc.in_data;
        acc.out_data -> sink.in_data;
    };
}
