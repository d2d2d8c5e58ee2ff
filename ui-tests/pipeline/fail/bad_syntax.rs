// Asserts: malformed statements are each reported, all at once, with the expected form: a
// missing name, an unknown setting (with a "did you mean"), a bad `mode`, an unknown attribute,
// a position that is not two numbers, and a statement that is none of the three forms.
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        mode = fast;
        max_loop_iteration = 10;
        #[colour = "red"]
        let text = cameleon::ops::Source::new("hi");
        let sink = cameleon::ops::Sink::new() @ (1, 2, 3);
        text;
    };
}
