// Asserts: generic operators compile — a structural `Dup<T>` with a variadic output group, a
// `Pair<A, B>` with typed pairs and untyped extra pairs — and their handles carry the type
// parameters, so `Dup::<DataString>::out_c` is an `OutPort<_, DataString>`; the catalogue builds
// them with `Any` (type variables).
use cameleon::catalogue::Catalogue;
use cameleon::prelude::*;
use cameleon::operator::AnyInPort;

/// Copies its input to `n` outputs.
#[operator(id = "dup", label = "Dup", family = structural)]
pub struct Dup<T: PortType = Any> {
    /// number of outputs
    #[param(default = 2)]
    n: usize,
    #[input]
    in_data: In<T>,
    #[output(variadic = n)]
    out_a: Out<T>,
}

impl<T: PortType> Run for Dup<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        for i in 0..self.n {
            let v = cx.value(Self::in_data).cloned().ok_or("no value")?;
            cx.emit_at(i, v);
        }
        Ok(())
    }
}

/// Waits for both inputs and passes each on.
#[operator(id = "pair", label = "Pair", family = structural, firing = all)]
pub struct Pair<A: PortType = Any, B: PortType = Any> {
    /// number of pairs
    #[param(default = 2)]
    arity: usize,
    #[input]
    in_a: In<A>,
    #[input]
    in_b: In<B>,
    #[input(variadic = arity)]
    in_c: In<Any>,
    #[output]
    out_a: Out<A>,
    #[output]
    out_b: Out<B>,
    #[output(variadic = arity)]
    out_c: Out<Any>,
}

impl<A: PortType, B: PortType> Run for Pair<A, B> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        cx.forward(Self::in_a, Self::out_a)?;
        cx.forward(Self::in_b, Self::out_b)
    }
}

fn main() {
    let _: OutPort<Dup<DataString>, DataString> = Dup::<DataString>::out_c;
    let _: InPort<Pair<DataString, DataBool>, DataBool> = Pair::<DataString, DataBool>::in_b;
    let _: AnyInPort<Pair> = Pair::<Any, Any>::in_c;
    let spec = Dup::<DataString> {
        n: 3,
        __cameleon_ports: std::marker::PhantomData,
    }
    .spec();
    assert_eq!(spec.outputs.len(), 3);
    assert_eq!(spec.outputs[2].ty, TypeRef::of::<DataString>());
    let pair = Catalogue::global().get("pair").unwrap();
    assert_eq!((pair.spec)().outputs[1].ty, TypeRef::Var(1));
    let _ = cameleon::ops::Fork::<DataString>::out_z;
}
