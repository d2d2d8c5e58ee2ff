// Asserts: a generic operator's type parameter is inferred from its connections (`Relay<T>`
// becomes `Relay<DataString>` with no annotation), an annotated one (`Relay<DataJSON>`) is
// accepted, one output feeds several inputs (fan-out), and an `Any` input takes any type.
#![deny(warnings)]

use std::marker::PhantomData;

use cameleon::dsl::{HasPorts, InputDecl};
use cameleon::ops::{Const, Counter, Sink, Source};
use cameleon::prelude::*;

/// Passes its input on unchanged: a generic structural operator, declared by hand.
struct Relay<T>(PhantomData<T>);

impl<T> Relay<T> {
    fn new() -> Self {
        Relay(PhantomData)
    }
}

impl<T: cameleon::PortType> Operator for Relay<T> {
    fn spec(&self) -> OpSpec {
        OpSpec::new("relay", "Relay", Family::Structural, Policy::Any)
            .input("in_data", TypeRef::var_or::<T>(0))
            .output("out_data", TypeRef::var_or::<T>(0))
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let v = cx.value_at(0).cloned().ok_or("no input")?;
        cx.emit_at(0, v);
        Ok(())
    }
}

struct RelayPorts<T> {
    in_data: InPort<Relay<T>, T>,
    out_data: OutPort<Relay<T>, T>,
}

impl<T: cameleon::PortType> HasPorts for Relay<T> {
    type Ports = RelayPorts<T>;
    fn ports() -> RelayPorts<T> {
        RelayPorts { in_data: InPort::new(0, "in_data"), out_data: OutPort::new(0, "out_data") }
    }
    const INPUTS: &'static [InputDecl] = &[InputDecl::required("in_data")];
    const POLICY: Policy = Policy::Any;
}

fn main() {
    let net = pipeline! {
        name = "generics";
        let text = Source::new("hi");
        let relay = Relay::new();                        // T inferred: DataString
        let zero = Const::new(serde_json::json!(0));
        let typed: Relay<DataJSON> = Relay::new();       // T given
        let inc = Counter::new();
        let a = Sink::new();
        let b = Sink::new();
        let c = Sink::new();
        text.out_data -> relay.in_data;
        relay.out_data -> a.in_data;                     // fan-out: two connections
        relay.out_data -> b.in_data;                     // from one output
        zero.out_data -> typed.in_data;
        typed.out_data -> inc.in_data;
        inc.out_data -> c.in_data;
    };
    let relay = &net.operators()[1];
    assert_eq!(relay.in_types[0].name, "DataString");
    assert_eq!(relay.spec.inputs[0].ty, TypeRef::of::<DataString>());

    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("a")[0].to_json(), serde_json::json!("hi"));
    assert_eq!(cvm.received("b")[0].to_json(), serde_json::json!("hi"));
    assert_eq!(cvm.received("c")[0].to_json(), serde_json::json!(1));
}
