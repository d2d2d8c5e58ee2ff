// Asserts: the generated code is warning-free in a user crate that denies warnings and missing
// docs, with explicit imports (none reported unused), a public and a private operator, internal
// state and a context field.
#![deny(warnings, missing_docs, missing_debug_implementations)]
//! A user crate.

use cameleon::catalogue::BuildContext;
use cameleon::{Firing, In, OpError, Out, Run, operator};
use cameleon::types::{DataChunk, DataString};

/// Splits a text into fixed-size chunks.
#[operator(id = "my_chunker", label = "Chunker", family = behavioral)]
#[derive(Debug)]
pub struct Chunker {
    /// characters per chunk
    #[param(default = 512)]
    pub size: usize,
    /// Texts seen so far.
    seen: u64,
    /// Where the pipeline lives.
    #[context]
    cx: BuildContext,
    /// The text to split.
    #[input]
    text: In<DataString>,
    /// The chunks.
    #[output]
    chunks: Out<DataChunk>,
}

impl Run for Chunker {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t: Vec<char> = cx.get(Self::text)?.0.chars().collect();
        let chunks = t.chunks(self.size.max(1)).map(|c| c.iter().collect()).collect();
        self.seen += 1;
        let _ = &self.cx;
        cx.emit(Self::chunks, DataChunk(chunks));
        Ok(())
    }
}

#[operator(id = "my_private")]
#[derive(Debug)]
struct Private {
    #[input]
    text: In<DataString>,
}

impl Run for Private {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {
    let _ = Private;
}
