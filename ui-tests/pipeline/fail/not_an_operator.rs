// Asserts: an instance whose type has no typed ports (not declared with `#[operator]`) is a
// compile error at its expression, saying how to declare it.
use cameleon::ops::Source;
use cameleon::prelude::*;

struct Plain;

fn main() {
    let _net = pipeline! {
        name = "plain";
        let text = Source::new("hi");
        let plain = Plain;
        text.out_data -> plain.in_data;
    };
}
