// Asserts: an input with two incoming connections is a compile error at the second one, which
// says to join them with a merge.
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "two-in";
        let a = Source::new("a");
        let b = Source::new("b");
        let sink = Sink::new();
        a.out_data -> sink.in_data;
        b.out_data -> sink.in_data;
    };
}
