//! Support for `pipeline!`: compile-time typed connections.
//!
//! `#[operator]` implements [`HasPorts`] for each operator type: a value of its `Ports` struct
//! has one field per port, holding an [`InPort`], [`AnyInPort`] or [`OutPort`] handle. `pipeline!`
//! reads the handles of each instance through [`ports_of`] and checks every connection with
//! [`check_connection`], emitted at the connection's tokens so a type mismatch is reported
//! there.

use crate::operator::{AnyInPort, InPort, OutPort};
use crate::types::PortType;

/// An operator type with typed port handles (implemented by `#[operator]`).
pub trait HasPorts {
    /// A struct with one public field per port, named after the port.
    type Ports;
    /// The handles.
    fn ports() -> Self::Ports;
}

/// The port handles of `op`'s type.
pub fn ports_of<O: HasPorts>(_op: &O) -> O::Ports {
    O::ports()
}

/// The data type `Self` can receive data of type `Src` (they are the same type).
#[diagnostic::on_unimplemented(
    message = "type mismatch: this connection sends `{Src}` to an input that expects `{Self}`",
    label = "the output carries `{Src}`, the input expects `{Self}`",
    note = "connections never convert implicitly; put a converting operator in between (e.g. `Transform` turns any value into a `DataString`)"
)]
pub trait SameType<Src: ?Sized> {}
impl<T: ?Sized> SameType<T> for T {}

/// An input handle that can receive from output handle `Src`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input port that can receive from `{Src}`",
    label = "a connection goes from an output port to an input port",
    note = "write `source.output -> target.input`"
)]
pub trait Receives<Src> {}

impl<O: ?Sized, P: ?Sized, S: PortType, D: PortType + SameType<S>> Receives<OutPort<P, S>>
    for InPort<O, D>
{
}
impl<O: ?Sized, P: ?Sized, S: PortType> Receives<OutPort<P, S>> for AnyInPort<O> {}

/// Type-checks one connection at compile time; does nothing at run time.
#[inline(always)]
pub fn check_connection<Src, Dst: Receives<Src>>(_from: Src, _to: Dst) {}
