// Asserts: mistakes of every kind are reported together, each at its own span: a malformed
// statement, an unknown setting, a duplicate name, an unknown instance and two connections into
// one input (found by the macro), and an unknown port, a wrong direction and a type mismatch
// (found by rustc in the same run).
use cameleon::ops::{Chunker, Const, Sink, Source, Transform};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "everything";
        colour = "green";
        let text = Source::new("hi");
        let text = Source::new("again");
        let zero = Const::new(serde_json::json!(0));
        let up = Transform::new();
        let chunk = Chunker::default();
        let sink = Sink::new();
        text.out_data => up.in_data;
        text.out_data -> up.in_dta;
        zero.out_data -> chunk.in_data;
        up.in_data -> sink.in_data;
        tex.out_data -> sink.in_data;
        up.out_data -> sink.in_data;
    };
}
