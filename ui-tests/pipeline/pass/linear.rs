// Asserts: a linear text pipeline with settings, layout positions, a label and an instance
// number expands to the `Net` that `NetBuilder` gives for the same declarations, compiles
// warning-free under `#![deny(warnings)]`, and runs to completion.
#![deny(warnings)]

use cameleon::ops::{Chunker, Sink, Source, Transform};
use cameleon::prelude::*;

fn main() {
    let text = String::from("a caméléon changes colour");
    let net: Net = pipeline! {
        name = "linear";
        mode = sequential;
        max_loop_iterations = 50;
        /// Doc comments on instances are allowed.
        #[label = "Loader"]
        #[instance = 7]
        let loader = Source::new(text.clone()) @ (90, 150);
        let up = Transform::new() @ (300.5, 150);
        let chunk = Chunker { size: 8, overlap: 0 };
        let sink: Sink = Sink::new();
        loader.out_data -> up.in_data;
        up.out_data -> chunk.in_data;
        chunk.out_data -> sink.in_data;
    };

    let mut b = Net::builder("linear");
    b.config(cameleon::net::NetConfig { mode: Mode::Sequential, max_loop_iterations: 50, ..Default::default() });
    b.add("loader", Source::new(text)).at(90.0, 150.0).label("Loader").instance(7);
    b.add("up", Transform::new()).at(300.5, 150.0);
    b.add("chunk", Chunker { size: 8, overlap: 0 });
    b.add("sink", Sink::new());
    b.connect("loader.out_data", "up.in_data");
    b.connect("up.out_data", "chunk.in_data");
    b.connect("chunk.out_data", "sink.in_data");
    assert_eq!(net, b.build().unwrap());
    assert_eq!(net.operators()[0].pos, Some((90.0, 150.0)));
    assert_eq!(net.operators()[0].display_label(), "Loader");

    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    let got = cvm.received("sink");
    assert_eq!(got.len(), 1);
    let chunks = &got[0].downcast_ref::<DataChunk>().unwrap().0;
    assert_eq!(chunks.len(), 4);
    assert_eq!(chunks.concat(), "a caméléon changes colour");
}
