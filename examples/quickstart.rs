//! Quickstart: build a small text pipeline, step it forward, step it back, replay, and run it to
//! its end state.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use cameleon::ops::{Chunker, Fork, Format, Sink, Source};
use cameleon::prelude::*;

const TEXT: &str =
    "Caméléon nets step forward and backward, exactly, and replay without re-running.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // doc -> split -> chunk -> chunks
    //              -> label -> labelled        (label joins `tag` and the text)
    let mut b = Net::builder("quickstart");
    b.add("doc", Source::new(TEXT));
    b.add("tag", Source::new("[doc]"));
    b.add("split", Fork::<Any>::default());
    b.add(
        "chunk",
        Chunker {
            size: 32,
            overlap: 4,
        },
    );
    b.add("label", Format::default());
    b.add("chunks", Sink::new());
    b.add("labelled", Sink::new());
    b.connect("doc.out_data", "split.in_data");
    b.connect("split.out_a", "chunk.in_data");
    b.connect("split.out_b", "label.in_meta");
    b.connect("tag.out_data", "label.in_main");
    b.connect("chunk.out_data", "chunks.in_data");
    b.connect("label.out_data", "labelled.in_data");
    let mut cvm = Cvm::new(b.build()?);

    let net = cvm.net();
    println!(
        "net `{}`: {} operators, {} connections",
        net.name(),
        net.operators().len(),
        net.connections().len()
    );
    println!("fireable at start: {}\n", cvm.fireable().join(", "));

    println!("-- three steps forward");
    for _ in 0..3 {
        let step = cvm.step()?;
        report(&cvm, &step);
    }

    println!("\n-- one step back: the marking is exactly as before step 3");
    cvm.back()?;
    show_conns(&cvm);

    println!("\n-- forward again: step 3 is replayed from history, not executed");
    let step = cvm.step()?;
    report(&cvm, &step);

    println!("\n-- run to the end");
    let end = cvm.run()?;
    println!("end state: {end} after {} steps", cvm.depth());
    for sink in ["chunks", "labelled"] {
        for v in cvm.received(sink) {
            println!("  {sink} received {}: {}", v.type_name(), v.to_json());
        }
    }
    let h = cvm.history();
    println!(
        "history: {} entries, {} bytes of deltas and token handles",
        h.len(),
        h.footprint_bytes()
    );
    Ok(())
}

/// Prints what a step did and the connections it left NEW.
fn report(cvm: &Cvm, step: &Step) {
    match step {
        Step::Fired {
            ops,
            step,
            replayed,
        } => {
            let names: Vec<&str> = ops.iter().map(|o| cvm.net().op(*o).name.as_str()).collect();
            let how = if *replayed { "replayed" } else { "fired" };
            println!("step {step}: {} {how}", names.join(", "));
            show_conns(cvm);
        }
        Step::Ended(end) => println!("nothing to fire: {end}"),
    }
}

/// Prints every connection that is not EMPTY.
fn show_conns(cvm: &Cvm) {
    for c in cvm.net().connections() {
        let view = cvm.state_of(&c.name).expect("connection of this net");
        if view.state != ConnState::Empty {
            let value = view
                .value()
                .map(|v| v.to_json().to_string())
                .unwrap_or_default();
            println!(
                "    {:<34} {:<5} {}",
                c.name,
                view.state,
                shorten(&value, 40)
            );
        }
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}
