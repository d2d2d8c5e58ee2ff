// Asserts: a sub-net with a declared boundary (`boundary!`) connects in `pipeline!` like any
// operator with typed ports: its inputs as targets, its outputs as sources, types checked.
use cameleon::ops::{Sink, Source, Subnet};
use cameleon::prelude::*;

cameleon::boundary! {
    /// A title in, a card out.
    pub struct Card {
        inputs { in_title: DataString }
        outputs { out_card: DataString }
    }
}

fn build() -> Result<Net, Box<dyn std::error::Error>> {
    Ok(pipeline! {
        name = "cards";
        let title = Source::new("Pipelines are nets");
        let card = Subnet::<Card>::load_typed("card.cm")?;
        let out = Sink::new();
        title.out_data -> card.in_title;
        card.out_card -> out.in_data;
    })
}

fn main() {
    let _ = build; // compiled, not run: `card.cm` is not here
}
