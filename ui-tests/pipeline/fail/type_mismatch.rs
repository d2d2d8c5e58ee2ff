// Asserts: a connection between ports of different data types is a compile error on that
// connection's `->`, naming both ports and both types; one direct (`DataJSON -> DataString`),
// one through a generic operator whose type was fixed by another connection.
use std::marker::PhantomData;

use cameleon::dsl::{HasPorts, InputDecl};
use cameleon::ops::{Const, Counter, Format, Source};
use cameleon::prelude::*;

struct Relay<T>(PhantomData<T>);

impl<T: cameleon::PortType> Operator for Relay<T> {
    fn spec(&self) -> OpSpec {
        OpSpec::new("relay", "Relay", Family::Structural, Policy::Any)
            .input("in_data", TypeRef::var_or::<T>(0))
            .output("out_data", TypeRef::var_or::<T>(0))
    }
    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
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
    let _net = pipeline! {
        name = "mismatch";
        let zero = Const::new(serde_json::json!(0));
        let text = Source::new("hi");
        let relay = Relay(PhantomData);
        let join = Format::default();
        let inc = Counter::new();
        zero.out_data -> join.in_main;
        text.out_data -> join.in_meta;
        text.out_data -> relay.in_data;
        relay.out_data -> inc.in_data;
    };
}
