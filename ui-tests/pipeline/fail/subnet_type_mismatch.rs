// Asserts: a sub-net built in code with a declared boundary (`boundary!`) has typed ports, so a
// connection of the wrong type to one of them is a compile error on that connection's `->`,
// naming both ports and both types. (Whether the inner net's boundary is the declared one is
// checked when the `Subnet` is built.)
use cameleon::ops::{Const, Sink, Subnet};
use cameleon::prelude::*;

cameleon::boundary! {
    /// A title in, a card out.
    pub struct Card {
        inputs { in_title: DataString }
        outputs { out_card: DataString }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _net = pipeline! {
        name = "cards";
        let number = Const::new(serde_json::json!(7));
        let card = Subnet::<Card>::load_typed("card.cm")?;
        let out = Sink::new();
        number.out_data -> card.in_title;
        card.out_card -> out.in_data;
    };
    Ok(())
}
