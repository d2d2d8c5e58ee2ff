//! TEMPORARY — hand-written `HasPorts` impls of the standard operators, so `pipeline!` can use
//! them before `#[operator]` (issue 3) generates them. Delete this file when the operator macro
//! lands on `main`: every impl here is then generated.
//!
//! The structural operators are not generic yet (`Fork`, not `Fork<T>`), so their ports cannot
//! carry a type parameter for rustc to infer. Until they are, their handles are the wildcards
//! [`VarIn`] and [`VarOut`]: a connection through them is not type-checked at compile time, and
//! `NetBuilder::build` (which `pipeline!` calls) still rejects a mismatch at run time.

use std::marker::PhantomData;
use std::ops::Shr;

use super::*;
use crate::dsl::{Endpoint, HasPorts, Input, InputDecl, Output};
use crate::operator::{AnyInPort, InPort, OutPort};
use crate::policy::Policy;
use crate::types::{Binary, DataBool, DataChunk, DataJSON, DataString};

/// TEMPORARY: an input of a not-yet-generic structural operator; accepts every type.
pub struct VarIn<O>(PhantomData<fn(&O)>);
/// TEMPORARY: an output of a not-yet-generic structural operator; connects to every input.
pub struct VarOut<O>(PhantomData<fn(&O)>);

impl<O> Clone for VarIn<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for VarIn<O> {}
impl<O> Clone for VarOut<O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<O> Copy for VarOut<O> {}
impl<O> std::fmt::Debug for VarIn<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VarIn")
    }
}
impl<O> std::fmt::Debug for VarOut<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VarOut")
    }
}

#[diagnostic::do_not_recommend]
impl<O, N> Output<N> for VarOut<O> {}
#[diagnostic::do_not_recommend]
impl<O, N> Input<N> for VarIn<O> {}

/// A wildcard output connects to every input, a wildcard input receives from every output.
macro_rules! wild_links {
    ($([$($g:ident),*] $from:ty => $to:ty;)*) => {$(
        impl<$($g,)* FN, TN> Shr<Endpoint<$to, TN>> for Endpoint<$from, FN> {
            type Output = ();
            fn shr(self, _to: Endpoint<$to, TN>) {}
        }
    )*};
}

wild_links! {
    [O, P, D] VarOut<O> => InPort<P, D>;
    [O, P] VarOut<O> => AnyInPort<P>;
    [O, P] VarOut<O> => VarIn<P>;
    [O, P, D] VarOut<O> => OutPort<P, D>;
    [O, P] VarOut<O> => VarOut<P>;
    [O, S, P] OutPort<O, S> => VarIn<P>;
    [O, S, P] OutPort<O, S> => VarOut<P>;
}

impl<O, FN, R> Shr<R> for Endpoint<VarIn<O>, FN> {
    type Output = ();
    fn shr(self, _to: R) {}
}

macro_rules! ports {
    (
        $op:ty => $ports:ident, $policy:ident,
        in { $($i:ident : $ih:ident $(<$it:ty>)? $(= $opt:ident)?),* $(,)? }
        out { $($o:ident : $oh:ident $(<$ot:ty>)?),* $(,)? }
    ) => {
        /// TEMPORARY: the port handles of the operator (see the module docs).
        #[allow(missing_docs)] // each field is the port of the same name
        #[derive(Clone, Copy, Debug)]
        pub struct $ports {
            $(pub $i: ports!(@ty $op, $ih $(<$it>)?),)*
            $(pub $o: ports!(@ty $op, $oh $(<$ot>)?),)*
        }

        impl HasPorts for $op {
            type Ports = $ports;
            #[allow(unused_assignments, unused_mut, unused_variables)] // a counter is unused when there are no ports of its kind, and the last value is never read
            fn ports() -> $ports {
                let mut i = 0u16;
                let mut o = 0u16;
                $(let $i = ports!(@new $ih, i, stringify!($i)); i += 1;)*
                $(let $o = ports!(@new $oh, o, stringify!($o)); o += 1;)*
                $ports { $($i,)* $($o,)* }
            }
            const INPUTS: &'static [InputDecl] = &[$(ports!(@decl $i $(, $opt)?)),*];
            const POLICY: Policy = Policy::$policy;
        }
    };
    (@ty $op:ty, InPort<$t:ty>) => { InPort<$op, $t> };
    (@ty $op:ty, OutPort<$t:ty>) => { OutPort<$op, $t> };
    (@ty $op:ty, AnyInPort) => { AnyInPort<$op> };
    (@ty $op:ty, VarIn) => { VarIn<$op> };
    (@ty $op:ty, VarOut) => { VarOut<$op> };
    (@new VarIn, $n:ident, $name:expr) => { VarIn(PhantomData) };
    (@new VarOut, $n:ident, $name:expr) => { VarOut(PhantomData) };
    (@new $h:ident, $n:ident, $name:expr) => { $h::new($n, $name) };
    (@decl $i:ident) => { InputDecl::required(stringify!($i)) };
    (@decl $i:ident, optional) => { InputDecl::optional(stringify!($i)) };
}

// std-io
ports!(Source => SourcePorts, Source, in {} out { out_data: OutPort<DataString> });
ports!(Const => ConstPorts, Source, in {} out { out_data: OutPort<DataJSON> });
ports!(Sink => SinkPorts, Any, in { in_data: AnyInPort } out {});
ports!(FileLoader => FileLoaderPorts, Source, in {} out { out_data: OutPort<Binary> });
ports!(TextFile => TextFilePorts, Source, in {} out { out_data: OutPort<DataString> });
ports!(JsonFile => JsonFilePorts, Source, in {} out { out_data: OutPort<DataJSON> });

// std-data
ports!(Transform => TransformPorts, Any,
    in { in_data: AnyInPort } out { out_data: OutPort<DataString> });
ports!(Format => FormatPorts, All,
    in { in_main: InPort<DataString>, in_meta: InPort<DataString> }
    out { out_data: OutPort<DataString> });
ports!(JsonParse => JsonParsePorts, Any,
    in { in_data: InPort<DataString> } out { out_data: OutPort<DataJSON> });
ports!(JsonStringify => JsonStringifyPorts, Any,
    in { in_data: InPort<DataJSON> } out { out_data: OutPort<DataString> });
ports!(Template => TemplatePorts, All,
    in { in_template: InPort<DataString>, in_data: InPort<DataJSON> }
    out { out_data: OutPort<DataString> });
ports!(BinaryToString => BinaryToStringPorts, Any,
    in { in_data: InPort<Binary> } out { out_data: OutPort<DataString> });
ports!(JsonGet => JsonGetPorts, Any,
    in { in_data: InPort<DataJSON> } out { out_data: OutPort<DataJSON> });
ports!(Predicate => PredicatePorts, Any,
    in { in_data: AnyInPort } out { out_data: OutPort<DataBool> });
ports!(Chunker => ChunkerPorts, Any,
    in { in_data: InPort<DataString> } out { out_data: OutPort<DataChunk> });
ports!(Counter => CounterPorts, Any,
    in { in_data: InPort<DataJSON> } out { out_data: OutPort<DataJSON> });

// std-struct (type variables: wildcards until the operators are generic)
ports!(Fork => ForkPorts, Any,
    in { in_data: VarIn }
    out { out_a: VarOut, out_b: VarOut, out_c: VarOut, out_d: VarOut });
ports!(Join => JoinPorts, All,
    in { in_a: VarIn, in_b: VarIn, in_c: VarIn = optional, in_d: VarIn = optional }
    out { out_data: VarOut });
ports!(Merge => MergePorts, AnyNoGuard,
    in { in_a: VarIn, in_b: VarIn, in_c: VarIn = optional, in_d: VarIn = optional }
    out { out_data: VarOut });
ports!(Gate => GatePorts, Custom,
    in { in_data: VarIn, in_condition: InPort<DataBool> }
    out { out_true: VarOut, out_false: VarOut });
ports!(Barrier => BarrierPorts, All,
    in { in_a: VarIn, in_b: VarIn, in_c: VarIn = optional, in_d: VarIn = optional }
    out { out_a: VarOut, out_b: VarOut, out_c: VarOut, out_d: VarOut });
ports!(Guard => GuardPorts, Any,
    in { in_data: VarIn } out { out_continue: VarOut, out_exit: VarOut });
ports!(Accumulator => AccumulatorPorts, AnyNoGuard,
    in { in_data: AnyInPort, in_done: AnyInPort = optional } out { out_data: OutPort<DataJSON> });
