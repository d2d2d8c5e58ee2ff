//! Support for `pipeline!`: compile-time typed connections.
//!
//! `#[operator]` implements [`HasPorts`] for each operator type: a value of its `Ports` struct
//! has one field per port, holding an [`InPort`], [`AnyInPort`] or [`OutPort`] handle, and the
//! constants [`HasPorts::INPUTS`] and [`HasPorts::POLICY`] say which inputs must be connected and
//! whether the operator fires as a source. `pipeline!` reads the handles of each instance through
//! [`ports_of`], checks every connection's types as [`Endpoint`]` >> `[`Endpoint`] (emitted at the
//! connection's `->`, so a type mismatch is reported there, naming both ports and both types) and
//! its direction with [`check_source`] and [`check_target`] (each at its endpoint), and every
//! instance's wiring with [`check_wiring`] in a `const` block. Endpoints are named in messages by
//! marker types the macro generates, `loader·out_data`.
//!
//! What each check reports:
//!
//! | mistake | reported by | at |
//! |---|---|---|
//! | `a.out -> b.in` with different data types | [`SameType`] | the connection's `->` |
//! | an input used as a connection's source | [`Output`] ([`check_source`]) | the source endpoint |
//! | an output used as a connection's target | [`Input`] ([`check_target`]) | the target endpoint |
//! | a port the operator does not have | rustc (no field on the `Ports` struct, with a "did you mean") | the port |
//! | a required input with no connection, a source that feeds nothing | [`check_wiring`] (`const` evaluation) | the instance's name |
//!
//! The wiring check is a `const` evaluation inside a generic function, so rustc runs it when it
//! instantiates that function: on `cargo build` (not `cargo check`), once the pipeline has no
//! type errors left.
//!
//! Unknown instances, duplicate names and inputs with two connections are found by the macro
//! itself, before type checking.

use std::ops::Shr;

use crate::net::{Net, NetBuilder};
use crate::operator::{AnyInPort, InPort, Operator, OutPort};
use crate::policy::Policy;

/// An operator type with typed port handles (implemented by `#[operator]`), so `pipeline!` can
/// use it.
///
/// ```
/// use cameleon::dsl::{HasPorts, InputDecl};
/// use cameleon::prelude::*;
///
/// /// Upper-cases a text (`upper.in_data` → `out_data`).
/// struct Upper;
/// # impl Operator for Upper {
/// #     fn spec(&self) -> OpSpec { unimplemented!() }
/// #     fn run(&mut self, _: &mut Firing<'_>) -> Result<(), OpError> { Ok(()) }
/// # }
///
/// /// The ports of [`Upper`], one field per port, named after it.
/// pub struct UpperPorts {
///     pub in_data: InPort<Upper, DataString>,
///     pub out_data: OutPort<Upper, DataString>,
/// }
///
/// impl HasPorts for Upper {
///     type Ports = UpperPorts;
///     fn ports() -> UpperPorts {
///         UpperPorts { in_data: InPort::new(0, "in_data"), out_data: OutPort::new(0, "out_data") }
///     }
///     const INPUTS: &'static [InputDecl] = &[InputDecl::required("in_data")];
///     const POLICY: Policy = Policy::Any;
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no typed ports, so `pipeline!` cannot use it",
    label = "not an operator declared with `#[operator]`",
    note = "declare the operator with `#[operator]`, which implements `HasPorts`, or add it with `Net::builder()` and `NetBuilder::add`"
)]
pub trait HasPorts: Operator {
    /// A struct with one public field per port, named after the port: an [`InPort`] for a typed
    /// input, an [`AnyInPort`] for a behavioral operator's `Any` input, an [`OutPort`] for an
    /// output. A generic operator's type parameters appear in the handles' data types, so
    /// `pipeline!` infers them from the connections.
    type Ports;
    /// The handles.
    fn ports() -> Self::Ports;
    /// Every input port, in order, with whether it may stay unconnected. For an operator whose
    /// ports depend on its params (the `arity` of `merge`), the inputs every instance has.
    const INPUTS: &'static [InputDecl];
    /// The firing policy: an operator with no inputs whose policy is not `Custom` is a source,
    /// and a source must feed something (docs/semantics.md §1).
    const POLICY: Policy;
}

/// An input port as [`HasPorts::INPUTS`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputDecl {
    /// The port's name.
    pub name: &'static str,
    /// Whether the port may stay unconnected.
    pub optional: bool,
}

impl InputDecl {
    /// An input that must be connected.
    pub const fn required(name: &'static str) -> Self {
        InputDecl {
            name,
            optional: false,
        }
    }

    /// An input that may stay unconnected.
    pub const fn optional(name: &'static str) -> Self {
        InputDecl {
            name,
            optional: true,
        }
    }
}

/// Adds `op` to `b` as `name` (`pipeline!` adds instances through this, so an instance that is
/// not an operator with ports is reported once, as a missing [`HasPorts`]).
pub fn add<'b, O: HasPorts>(b: &'b mut NetBuilder, name: &str, op: O) -> crate::net::OpOptions<'b> {
    b.add(name, op)
}

/// The port handles of `op`'s type.
pub fn ports_of<O: HasPorts>(_op: &O) -> O::Ports {
    O::ports()
}

/// A port handle that can start a connection: an [`OutPort`]. `Name` is a marker type
/// `pipeline!` names after the endpoint (`loader·out_data`), so messages say which port is meant.
#[diagnostic::on_unimplemented(
    message = "`{Name}` is not an output, but this connection starts there",
    label = "an input port cannot be a connection's source",
    note = "a connection goes from an output port to an input port: `source.out_… -> target.in_…`"
)]
pub trait Output<Name> {}

#[diagnostic::do_not_recommend]
impl<O: ?Sized, T: ?Sized, N> Output<N> for OutPort<O, T> {}

/// A port handle that can end a connection: an [`InPort`] or an [`AnyInPort`].
#[diagnostic::on_unimplemented(
    message = "`{Name}` is not an input, but this connection ends there",
    label = "an output port cannot be a connection's target",
    note = "a connection goes from an output port to an input port: `source.out_… -> target.in_…`"
)]
pub trait Input<Name> {}

#[diagnostic::do_not_recommend]
impl<O: ?Sized, T: ?Sized, N> Input<N> for InPort<O, T> {}
#[diagnostic::do_not_recommend]
impl<O: ?Sized, N> Input<N> for AnyInPort<O> {}

/// Checks at compile time that `handle` is an output port; does nothing at run time. `N` is the
/// endpoint's marker, named in the error.
#[inline(always)]
pub fn check_source<N>(_handle: impl Output<N>) {}

/// Checks at compile time that `handle` is an input port; does nothing at run time. `N` is the
/// endpoint's marker, named in the error.
#[inline(always)]
pub fn check_target<N>(_handle: impl Input<N>) {}

/// The input named by the marker `Self` expects `Expected`, and the output named by `From`
/// sends `Sent`: implemented only when the two types are the same.
///
/// `Self` is the target's marker, a concrete type, never an inference variable: so rustc can
/// select the one impl while a generic operator's type parameter is still unknown, which is what
/// infers `Fork<T>`'s `T` from a connection.
#[diagnostic::on_unimplemented(
    message = "type mismatch: `{From}` sends `{Sent}`, but `{Self}` expects `{Expected}`",
    label = "`{From}` carries `{Sent}`, `{Self}` expects `{Expected}`",
    note = "connections never convert implicitly; put a converting operator in between (e.g. `Transform` turns any value into a `DataString`)"
)]
pub trait SameType<Expected: ?Sized, Sent: ?Sized, From> {}

impl<T: ?Sized, From, To> SameType<T, T, From> for To {}

/// One end of a connection: a port handle and the marker naming it.
///
/// `pipeline!` type-checks `a.out -> b.in` as `Endpoint(a.out, a·out) >> Endpoint(b.in, b·in)`,
/// with the `>>` at the user's `->`, so a type mismatch is reported on the arrow. The `>>`
/// exists for every pair of handles: when a handle is on the wrong side, the connection's type
/// check passes and [`check_source`] / [`check_target`] report the direction, once.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<H, N>(pub H, pub N);

/// Output to typed input: the types must be the same.
impl<O: ?Sized, S: ?Sized, FN, P: ?Sized, D: ?Sized, TN> Shr<Endpoint<InPort<P, D>, TN>>
    for Endpoint<OutPort<O, S>, FN>
where
    TN: SameType<D, S, FN>,
{
    type Output = ();
    fn shr(self, _to: Endpoint<InPort<P, D>, TN>) {}
}

/// Output to an `Any` input: every type is accepted.
impl<O: ?Sized, S: ?Sized, FN, P: ?Sized, TN> Shr<Endpoint<AnyInPort<P>, TN>>
    for Endpoint<OutPort<O, S>, FN>
{
    type Output = ();
    fn shr(self, _to: Endpoint<AnyInPort<P>, TN>) {}
}

/// Output to output: a direction error, reported by [`check_target`].
impl<O: ?Sized, S: ?Sized, FN, P: ?Sized, D: ?Sized, TN> Shr<Endpoint<OutPort<P, D>, TN>>
    for Endpoint<OutPort<O, S>, FN>
{
    type Output = ();
    fn shr(self, _to: Endpoint<OutPort<P, D>, TN>) {}
}

/// From an input: a direction error, reported by [`check_source`].
impl<O: ?Sized, S: ?Sized, FN, R> Shr<R> for Endpoint<InPort<O, S>, FN> {
    type Output = ();
    fn shr(self, _to: R) {}
}

/// From an `Any` input: a direction error, reported by [`check_source`].
impl<O: ?Sized, FN, R> Shr<R> for Endpoint<AnyInPort<O>, FN> {
    type Output = ();
    fn shr(self, _to: R) {}
}

/// Checks one instance's wiring, in `const` evaluation: every required input of `O` is among
/// `connected` (the inputs the pipeline connects), and a source (no inputs, policy not
/// `Custom`) feeds something. `instance` is the instance's name, for the message. Returns the
/// problem, which `pipeline!`'s `const` block turns into a compile error at the instance.
pub const fn check_wiring<O: HasPorts>(
    instance: &str,
    connected: &[&str],
    feeds: bool,
) -> Option<ConstMsg> {
    let inputs = O::INPUTS;
    let mut missing = 0usize;
    let mut i = 0;
    while i < inputs.len() {
        if !inputs[i].optional && !contains(connected, inputs[i].name) {
            missing += 1;
        }
        i += 1;
    }
    if missing > 0 {
        let mut m = ConstMsg::new();
        m = m.push(if missing == 1 { "input " } else { "inputs " });
        let mut seen = 0usize;
        let mut last = "";
        let mut i = 0;
        while i < inputs.len() {
            if !inputs[i].optional && !contains(connected, inputs[i].name) {
                if seen > 0 {
                    m = m.push(if seen + 1 == missing { " and " } else { ", " });
                }
                m = m
                    .push("`")
                    .push(instance)
                    .push(".")
                    .push(inputs[i].name)
                    .push("`");
                last = inputs[i].name;
                seen += 1;
            }
            i += 1;
        }
        if missing == 1 {
            m = m.push(" is not connected; connect an output to it: `source.out_… -> ");
            m = m.push(instance).push(".").push(last).push(";`");
        } else {
            m = m.push(" are not connected; connect an output to each");
        }
        return Some(m);
    }
    if inputs.is_empty() && !feeds && !matches!(O::POLICY, Policy::Custom) {
        return Some(
            ConstMsg::new()
                .push("source `")
                .push(instance)
                .push("` feeds nothing; connect one of its outputs (`")
                .push(instance)
                .push(".out_… -> target.in_…;`) or remove it"),
        );
    }
    None
}

const fn contains(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A message assembled in `const` evaluation, where there is no `format!`.
#[derive(Debug)]
pub struct ConstMsg {
    buf: [u8; ConstMsg::CAP],
    len: usize,
}

impl ConstMsg {
    const CAP: usize = 1024;

    const fn new() -> Self {
        ConstMsg {
            buf: [0; Self::CAP],
            len: 0,
        }
    }

    /// Appends `s`, whole or not at all (so the text stays valid UTF-8).
    const fn push(mut self, s: &str) -> Self {
        let b = s.as_bytes();
        if self.len + b.len() > Self::CAP {
            return self;
        }
        let mut i = 0;
        while i < b.len() {
            self.buf[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        let (bytes, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(_) => "a pipeline! wiring check failed",
        }
    }
}

/// Builds the net `pipeline!` assembled. The macro has already checked at compile time
/// everything that can be: a failure here is a property only known at run time (an n-ary
/// operator's extra ports, set by its `arity`, left unconnected; an operator whose spec is
/// malformed).
///
/// # Panics
///
/// When the net is invalid, with every problem in the message.
#[track_caller]
pub fn build_net(b: NetBuilder) -> Net {
    match b.build() {
        Ok(net) => net,
        Err(e) => panic!("pipeline! built an invalid net: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Accumulator, Format, Gate, Merge, Source};

    fn wiring<O: HasPorts>(instance: &str, connected: &[&str], feeds: bool) -> Option<String> {
        check_wiring::<O>(instance, connected, feeds).map(|m| m.as_str().to_owned())
    }

    #[test]
    fn wiring_names_the_one_unconnected_input_and_how_to_connect_it() {
        assert_eq!(
            wiring::<Format>("label", &["in_main"], true).as_deref(),
            Some(
                "input `label.in_meta` is not connected; connect an output to it: \
                 `source.out_… -> label.in_meta;`"
            )
        );
    }

    #[test]
    fn wiring_lists_every_unconnected_input() {
        assert_eq!(
            wiring::<Merge>("m", &[], true).as_deref(),
            Some("inputs `m.in_a` and `m.in_b` are not connected; connect an output to each")
        );
        let three = wiring::<Gate>("g", &[], true).unwrap();
        assert!(
            three.starts_with("inputs `g.in_data` and `g.in_condition`"),
            "{three}"
        );
    }

    #[test]
    fn wiring_accepts_connected_required_inputs_and_unconnected_optional_ones() {
        assert_eq!(wiring::<Format>("f", &["in_meta", "in_main"], true), None);
        assert_eq!(wiring::<Accumulator>("acc", &["in_data"], true), None);
    }

    #[test]
    fn wiring_rejects_a_source_that_feeds_nothing() {
        assert_eq!(
            wiring::<Source>("doc", &[], false).as_deref(),
            Some(
                "source `doc` feeds nothing; connect one of its outputs \
                 (`doc.out_… -> target.in_…;`) or remove it"
            )
        );
        assert_eq!(wiring::<Source>("doc", &[], true), None);
    }

    #[test]
    fn wiring_messages_longer_than_the_buffer_stay_valid_text() {
        let long = "é".repeat(600);
        let msg = wiring::<Format>(&long, &[], true).unwrap();
        assert!(msg.starts_with("inputs `"));
        assert!(msg.len() <= 1024);
    }
}
