// Asserts: a generic operator's type parameter is inferred from its connections (`Fork<T>`
// becomes `Fork<DataString>` with no annotation), an annotated one (`Merge<DataJSON>`) is
// accepted, one output feeds several inputs (fan-out), and an `Any` input takes any type.
#![deny(warnings)]

use cameleon::ops::{Const, Counter, Fork, Merge, Sink, Source};
use cameleon::prelude::*;
use serde_json::json;

fn main() {
    let net = pipeline! {
        name = "generics";
        let text = Source::new("hi");
        let split = Fork::default();                     // T inferred: DataString
        let zero = Const::new(json!(0));
        let one = Const::new(json!(1));
        let both: Merge<DataJSON> = Merge::default();    // T given
        let inc = Counter::new();
        let a = Sink::new();
        let b = Sink::new();
        let c = Sink::new();
        let d = Sink::new();
        text.out_data -> split.in_data;
        split.out_a -> a.in_data;
        split.out_b -> b.in_data;                        // fan-out: two connections
        split.out_b -> c.in_data;                        // from one output
        zero.out_data -> both.in_a;
        one.out_data -> both.in_b;
        both.out_data -> inc.in_data;
        inc.out_data -> d.in_data;
    };
    let split = &net.operators()[1];
    assert_eq!(split.spec.inputs[0].ty, TypeRef::of::<DataString>());
    assert_eq!(split.out_types[1].name, "DataString");

    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    for sink in ["a", "b", "c"] {
        assert_eq!(cvm.received(sink)[0].to_json(), json!("hi"), "{sink}");
    }
    let counted: Vec<_> = cvm.received("d").iter().map(|v| v.to_json()).collect();
    assert_eq!(counted, [json!(1), json!(2)]);
}
