//! A linear text pipeline built with `pipeline!`: a document is split into overlapping chunks,
//! the chunks are written as JSON text, and a sink collects the result. Every connection is
//! type-checked by the compiler (`doc.out_data` is a `DataString`, which is what
//! `chunk.in_data` expects); change one and the build fails on that line.
//!
//! ```text
//! cargo run --example text_pipeline
//! ```

use cameleon::ops::{Chunker, Sink, Source, Transform};
use cameleon::prelude::*;

const TEXT: &str = "A Caméléon pipeline is a Petri net: connections are places that hold one typed \
                    token, operators are transitions that fire by a rule of their own.";

/// The pipeline.
pub fn net() -> Net {
    pipeline! {
        name = "text-pipeline";
        /// The document.
        let doc = Source::new(TEXT) @ (60, 120);
        /// 48-character chunks, overlapping by 8.
        let chunk = Chunker { size: 48, overlap: 8 } @ (240, 120);
        /// The chunk list as JSON text.
        #[label = "As text"]
        let show = Transform::new() @ (420, 120);
        let out = Sink::new() @ (600, 120);
        doc.out_data -> chunk.in_data;
        chunk.out_data -> show.in_data;
        show.out_data -> out.in_data;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let net = net();
    println!(
        "net `{}`: {} operators, {} connections",
        net.name(),
        net.operators().len(),
        net.connections().len()
    );

    let mut cvm = Cvm::new(net);
    let end = run_printing(&mut cvm)?;
    println!("end state: {end:?}");
    for v in cvm.received("out") {
        println!("out received: {}", v.to_json());
    }
    Ok(())
}

/// Steps to the end, printing each firing.
fn run_printing(cvm: &mut Cvm) -> Result<EndState, Box<dyn std::error::Error>> {
    loop {
        match cvm.step()? {
            Step::Fired { ops, step, .. } => {
                let names: Vec<&str> = ops.iter().map(|&o| cvm.net().op(o).name.as_str()).collect();
                println!("step {step}: {} fired", names.join(", "));
            }
            Step::Ended(end) => return Ok(end),
        }
    }
}
