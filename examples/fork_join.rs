//! A fork/join pipeline built with `pipeline!`: a document is copied to two branches (AND-split),
//! one chunks it, the other tests whether it mentions Petri nets, and a join waits for both
//! before passing the first branch's result on (AND-join).
//!
//! ```text
//! cargo run --example fork_join
//! ```

use cameleon::ops::{Chunker, Fork, Join, Predicate, Sink, Source, Test, Transform};
use cameleon::prelude::*;
use serde_json::json;

const TEXT: &str = "Connections are places and operators are transitions of a Petri net.";

/// The pipeline.
pub fn net() -> Net {
    pipeline! {
        name = "fork-join";
        let doc = Source::new(TEXT) @ (40, 150);
        let split = Fork::default() @ (200, 150);
        // branch a: chunks, as text
        let chunk = Chunker { size: 24, overlap: 0 } @ (360, 80);
        let chunks_text = Transform::new() @ (520, 80);
        // branch b: a test, as text
        let petri = Predicate::new(Test::Contains(json!("Petri"))) @ (360, 220);
        let petri_text = Transform::new() @ (520, 220);
        let both = Join::default() @ (680, 150);
        let out = Sink::new() @ (840, 150);
        let flag = Sink::new() @ (680, 300);
        doc.out_data -> split.in_data;
        split.out_a -> chunk.in_data;
        chunk.out_data -> chunks_text.in_data;
        split.out_b -> petri.in_data;
        petri.out_data -> petri_text.in_data;
        petri.out_data -> flag.in_data;            // fan-out: the test result also goes to a sink
        chunks_text.out_data -> both.in_a;
        petri_text.out_data -> both.in_b;
        both.out_data -> out.in_data;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut cvm = Cvm::new(net());
    loop {
        match cvm.step()? {
            Step::Fired { ops, step, .. } => {
                let names: Vec<&str> = ops.iter().map(|&o| cvm.net().op(o).name.as_str()).collect();
                println!("step {step}: {} fired", names.join(", "));
            }
            Step::Ended(end) => {
                println!("end state: {end:?}");
                break;
            }
        }
    }
    println!("mentions Petri: {}", cvm.received("flag")[0].to_json());
    println!("joined result: {}", cvm.received("out")[0].to_json());
    Ok(())
}
