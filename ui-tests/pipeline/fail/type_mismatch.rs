// Asserts: a connection between ports of different data types is a compile error on that
// connection's `->`, naming both ports and both types; one direct (`DataJSON -> DataString`),
// one through a generic operator whose type was fixed by another connection (`Fork<T>`, fed a
// `DataString`, into a `DataJSON` input).
use cameleon::ops::{Const, Counter, Fork, Format, Source};
use cameleon::prelude::*;

fn main() {
    let _net = pipeline! {
        name = "mismatch";
        let zero = Const::new(serde_json::json!(0));
        let text = Source::new("hi");
        let split = Fork::default();
        let join = Format::default();
        let inc = Counter::new();
        zero.out_data -> join.in_main;
        split.out_b -> join.in_meta;
        text.out_data -> split.in_data;
        split.out_a -> inc.in_data;
    };
}
