//! Sub-nets (docs/semantics.md §10.1–§10.3): a net's boundary ([`SubnetInput`],
//! [`SubnetOutput`]: `input` and `output` in `.cm`), an
//! operator that runs a net to its end on each firing ([`Subnet`]), and one that runs it once
//! per item of a list ([`Map`]).
//!
//! | module | holds |
//! |---|---|
//! | `boundary` | `input` and `output` |
//! | `template` | the inner net: loaded once (recursion detected), its boundary read, instantiated per run |
//! | `runs` | [`InnerRun`] (one shape, its serde form, for both operators), [`Runs`]: the runs a `subnet` or `map` keeps and the one protocol both follow to save, restore, undo and replay them |
//! | `subnet` | [`Subnet`], [`Boundary`] (a boundary declared in Rust), the `subnet` catalogue entry |
//! | `map` | [`Map`] and its catalogue entry |
//! | `items` | running a `map`'s items: at most `concurrency` at once, the plan of those still needed |

mod boundary;
mod items;
mod map;
mod runs;
#[allow(clippy::module_inception)] // the `subnet` operator in the `subnet` family of modules
mod subnet;
mod template;

pub use boundary::{SubnetInput, SubnetOutput};
pub use map::{DEFAULT_CONCURRENCY, Map, MapPorts};
pub use runs::{FiringRuns, InnerRun, Runs};
pub use subnet::{Boundary, Dynamic, Subnet, SubnetError};

/// The inner runs of the operator `node` when it is a `subnet` (as a `.cm` file builds it) or a
/// `map`: the runs of each firing along the current history, first first.
pub fn inner_runs(node: &crate::net::OpNode) -> Option<Vec<FiringRuns>> {
    if let Some(s) = node.downcast_ref::<Subnet>() {
        return Some(s.runs());
    }
    node.downcast_ref::<Map>().map(Map::runs)
}

/// The index of port `name` among `names` (for [`boundary!`](crate::boundary)'s handles).
#[doc(hidden)]
pub const fn port_index(names: &[&str], name: &str) -> u16 {
    let mut i = 0;
    while i < names.len() {
        let (a, b) = (names[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i as u16;
            }
        }
        i += 1;
    }
    u16::MAX
}

/// Declares a sub-net boundary in Rust: the ports a [`Subnet`] has, with their data types, so
/// that `pipeline!` type-checks its connections at compile time (docs/semantics.md §10.2).
///
/// The struct it declares holds the port handles (`Summarise.in_text`); it is
/// [`Boundary::Ports`]. `Subnet::<Summarise>::load_typed(file)` (or `typed(net)`) checks, when
/// it is built, that the inner net's boundary is exactly this one.
///
/// ```
/// use cameleon::ops::{Const, Sink, Subnet};
/// use cameleon::prelude::*;
///
/// cameleon::boundary! {
///     /// A JSON value in, its text out.
///     pub struct Stringify {
///         inputs { in_value: DataJSON }
///         outputs { out_text: DataString }
///     }
/// }
///
/// let inner = Net::from_cm("
/// operators:
///   - {id: value, type: input, params: {name: value, type: DataJSON}}
///   - {id: show, type: transform}
///   - {id: text, type: output, params: {name: text}}
/// connections:
///   - {from: value.out_data, to: show.in_data}
///   - {from: show.out_data, to: text.in_data}
/// ")?;
/// let net: Net = pipeline! {
///     name = "stringify";
///     let n = Const::new(serde_json::json!({"a": 1}));
///     let sub = Subnet::<Stringify>::typed(inner)?;
///     let out = Sink::new();
///     n.out_data -> sub.in_value;        // DataJSON -> DataJSON: checked by rustc
///     sub.out_text -> out.in_data;
/// };
/// let mut cvm = Cvm::new(net);
/// assert_eq!(cvm.run()?, EndState::Completed);
/// assert_eq!(cvm.received("out")[0].to_json(), r#"{"a":1}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! boundary {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            inputs { $($input:ident : $ity:ty),* $(,)? }
            outputs { $($output:ident : $oty:ty),* $(,)? }
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        $vis struct $name {
            $(
                #[doc = concat!("The handle of input `", stringify!($input), "`.")]
                pub $input: $crate::operator::InPort<$crate::ops::Subnet<$name>, $ity>,
            )*
            $(
                #[doc = concat!("The handle of output `", stringify!($output), "`.")]
                pub $output: $crate::operator::OutPort<$crate::ops::Subnet<$name>, $oty>,
            )*
        }

        impl $crate::ops::Boundary for $name {
            type Ports = $name;
            fn ports() -> $name {
                const INPUTS: &[&str] = &[$(stringify!($input)),*];
                const OUTPUTS: &[&str] = &[$(stringify!($output)),*];
                $name {
                    $($input: $crate::operator::InPort::new(
                        $crate::ops::port_index(INPUTS, stringify!($input)),
                        stringify!($input),
                    ),)*
                    $($output: $crate::operator::OutPort::new(
                        $crate::ops::port_index(OUTPUTS, stringify!($output)),
                        stringify!($output),
                    ),)*
                }
            }
            const INPUTS: &'static [$crate::dsl::InputDecl] =
                &[$($crate::dsl::InputDecl::required(stringify!($input))),*];
            fn declared() -> ::std::vec::Vec<(&'static str, &'static $crate::types::TypeInfo)> {
                ::std::vec![
                    $((stringify!($input), <$ity as $crate::types::PortType>::INFO),)*
                    $((stringify!($output), <$oty as $crate::types::PortType>::INFO),)*
                ]
            }
            const NAME: &'static str = stringify!($name);
        }
    };
}
