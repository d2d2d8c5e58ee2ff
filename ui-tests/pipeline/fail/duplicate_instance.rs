// Asserts: two instances with the same name are a compile error at the second.
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "dup";
        let source = Source::new("a");
        let source = Source::new("b");
        let sink = Sink::new();
        source.out_data -> sink.in_data;
    };
}
