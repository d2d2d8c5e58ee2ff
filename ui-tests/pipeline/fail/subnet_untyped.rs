// Asserts: a sub-net without a declared boundary (`Subnet::new`, what a `.cm` file builds) has
// no compile-time ports, so `pipeline!` refuses it, pointing to `boundary!`.
use cameleon::ops::{Sink, Subnet};
use cameleon::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _net = pipeline! {
        name = "untyped";
        let card = Subnet::load("card.cm")?;
        let out = Sink::new();
        card.out_card -> out.in_data;
    };
    Ok(())
}
