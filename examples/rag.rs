//! Retrieval-augmented answering, built with `pipeline!`: the net of `examples/rag.cm`. A
//! document is split into passages, embedded and indexed; the question retrieves the closest
//! passages, and a chat model answers from them. With no model configured the models are the
//! offline ones — the `hash` embedder and the `extractive` chat model, which answers by quoting
//! the best-matching sentences — so it runs anywhere, and gives the same answer every time.
//!
//! ```text
//! cargo run --example rag
//! ```
//!
//! Then step back over the answer and forward again: the answer is replayed from the history,
//! the model is not asked twice.

use std::path::Path;

use cameleon::capabilities::Runtime;
use cameleon::ops::{Embed, FileAccess, Index, Llm, Passages, Retrieve, Sink, Source, TextFile};
use cameleon::prelude::*;

/// The question the example asks.
pub const QUESTION: &str = "Why do chameleons change colour?";

/// The pipeline; the document is read from `examples/data/`, wherever it is run from.
pub fn net() -> Net {
    let document = TextFile {
        path: "data/chameleons.txt".into(),
        access: FileAccess {
            root: concat!(env!("CARGO_MANIFEST_DIR"), "/examples").into(),
            allow_outside: false,
        },
        // `max_bytes` (64 MiB) and any param to come at their defaults.
        ..TextFile::default()
    };
    pipeline! {
        name = "rag";
        #[label = "Document"]
        let document = document;
        #[label = "Split into passages"]
        let passages = Passages::new(300);
        #[label = "Embed passages"]
        let embed = Embed::new();
        #[label = "Index"]
        let index = Index::new();
        #[label = "Question"]
        let question = Source::new(QUESTION);
        #[label = "Retrieve passages"]
        let retrieve = Retrieve::new(3);
        #[label = "Answer"]
        let answer = Llm::new().system("Answer from the context only, in one or two sentences.");
        #[label = "Answer"]
        let out = Sink::new();
        document.out_data -> passages.in_data;
        passages.out_data -> embed.in_data;
        embed.out_data -> index.in_data;
        index.out_data -> retrieve.in_after;
        question.out_data -> retrieve.in_query;
        question.out_data -> answer.in_prompt;
        retrieve.out_data -> answer.in_context;
        answer.out_text -> out.in_data;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The capabilities of the run: a `cameleon.yaml` in the current folder if there is one (or
    // the file `CAMELEON_CAPABILITIES` names), else the built-in offline defaults.
    let rt = Runtime::builder().for_dir(Path::new("."), None).build()?;
    let mut cvm = rt.cvm(net(), ".").build();
    let end = cvm.run()?;
    println!("{}: {end:?} after {} steps", cvm.net().name(), cvm.depth());
    println!("Q: {QUESTION}");
    let answer = cvm.received("out")[0].to_json();
    println!("A: {}", answer.as_str().unwrap_or_default());

    // Back over the answer, then forward: replayed, not asked again.
    cvm.back()?;
    cvm.back()?;
    cvm.run()?;
    assert_eq!(cvm.received("out")[0].to_json(), answer);
    println!("(stepped back and forward again: the same answer, from the history)");
    Ok(())
}
