//! Typed port handles and the port field markers of `#[operator]` structs.

use std::fmt;
use std::marker::PhantomData;

use crate::types::PortType;

/// A typed handle on input port `index` of operator type `O`, of data type `T`
/// (`Chunker::text`). `#[operator]` generates one per `#[input]` field.
pub struct InPort<O: ?Sized, T: ?Sized> {
    /// The port's index among the operator's inputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

/// A typed handle on output port `index` of operator type `O`, of data type `T`.
pub struct OutPort<O: ?Sized, T: ?Sized> {
    /// The port's index among the operator's outputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

macro_rules! port_handle_impls {
    ($($h:ident),*) => {$(
        impl<O: ?Sized, T: ?Sized> $h<O, T> {
            /// A handle on port `index` named `name`.
            pub const fn new(index: u16, name: &'static str) -> Self {
                $h { index, name, _p: PhantomData }
            }
        }
        impl<O: ?Sized, T: ?Sized> Clone for $h<O, T> {
            fn clone(&self) -> Self { *self }
        }
        impl<O: ?Sized, T: ?Sized> Copy for $h<O, T> {}
        impl<O: ?Sized, T: ?Sized> fmt::Debug for $h<O, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({} #{})", stringify!($h), self.name, self.index)
            }
        }
    )*};
}
/// A typed handle on an input port of operator type `O` that accepts every type (a behavioral
/// operator's `In<Any>`). A distinct type from [`InPort`], so `pipeline!` can infer the type
/// parameters of generic operators from their typed ports.
pub struct AnyInPort<O: ?Sized, T: ?Sized = crate::types::Any> {
    /// The port's index among the operator's inputs.
    pub index: u16,
    /// The port's name.
    pub name: &'static str,
    _p: PhantomData<fn(&O, &T)>,
}

port_handle_impls!(InPort, OutPort, AnyInPort);

/// An input port handle of operator type `O`: [`InPort`] or [`AnyInPort`].
pub trait InputHandle<O: ?Sized>: Copy {
    /// The port's index among the operator's inputs.
    fn index(self) -> usize;
    /// The port's name.
    fn name(self) -> &'static str;
}

impl<O: ?Sized, T: ?Sized> InputHandle<O> for InPort<O, T> {
    fn index(self) -> usize {
        self.index as usize
    }
    fn name(self) -> &'static str {
        self.name
    }
}

impl<O: ?Sized> InputHandle<O> for AnyInPort<O> {
    fn index(self) -> usize {
        self.index as usize
    }
    fn name(self) -> &'static str {
        self.name
    }
}

/// Field marker of an input port in an `#[operator]` struct: `#[input] text: In<DataString>`.
/// The macro removes the field; it is a declaration, not state.
pub struct In<T: PortType>(PhantomData<T>);
/// Field marker of an output port in an `#[operator]` struct: `#[output] chunks: Out<DataChunk>`.
pub struct Out<T: PortType>(PhantomData<T>);

impl<T: PortType> fmt::Debug for In<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "In<{}>", T::INFO.name)
    }
}
impl<T: PortType> fmt::Debug for Out<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Out<{}>", T::INFO.name)
    }
}
