//! # Caméléon
//!
//! Typed, reversible, verifiable pipelines. A Caméléon pipeline is an extended Petri net:
//! **connections are places** (each EMPTY, NEW or OLD, holding at most one typed token) and
//! **operators are transitions** that fire by a rule of their own. The engine — the CVM — steps
//! such a net forward *and backward*, exactly, and replays recorded steps without running
//! operators again; the same net and data always give the same firing sequence.
//!
//! The semantics are those of the project's `SPEC.md`; this crate is organised after its
//! concepts:
//!
//! | module | concept |
//! |---|---|
//! | [`types`] | data types and values (SPEC §9) |
//! | [`connection`] | connections, their states, tokens (§2) |
//! | [`operator`] | operators: spec, `can_fire`, `run`, `rollback` (§3–§5) |
//! | [`policy`] | the built-in firing policies (§3) |
//! | [`net`] | the validated net (§1) |
//! | [`engine`] | the CVM: forward, backward, replay, end states (§4–§6) |
//! | [`history`] | the history tree of deltas (§5) |
//! | [`catalogue`] | operator types by id, for `.cm` files, the CLI and LLMs |
//! | [`dsl`] | compile-time typed connections for `pipeline!` |
//! | [`ops`] | the standard operators |
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
//! use serde_json::json;
//!
//! // const 0 -> merge -> counter -> guard(lt 3) -> back to merge, or exit to a sink.
//! let mut b = Net::builder("count-to-3");
//! b.add("zero", Const::new(json!(0)));
//! b.add("loop", Merge::default());
//! b.add("inc", Counter::new());
//! b.add("check", Guard::new(Test::parse(&json!({"lt": 3})).unwrap()));
//! b.add("out", Sink::new());
//! b.connect("zero.out_data", "loop.in_a")
//!     .connect("loop.out_data", "inc.in_data")
//!     .connect("inc.out_data", "check.in_data")
//!     .connect("check.out_continue", "loop.in_b")
//!     .connect("check.out_exit", "out.in_data");
//! let mut cvm = Cvm::new(b.build()?);
//!
//! assert_eq!(cvm.run()?, EndState::Completed);
//! assert_eq!(cvm.received("out")[0].to_json(), json!(3));
//! let steps = cvm.depth();
//! cvm.back()?;                       // undo the sink's firing, exactly
//! assert_eq!(cvm.depth(), steps - 1);
//! cvm.step()?;                       // replayed, not re-run
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same net written with [`pipeline!`], where the compiler checks every connection (a
//! `DataString` output wired to the counter's `DataJSON` input would not build, and the error
//! would be on that `->`):
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
//! use serde_json::json;
//!
//! let net: Net = pipeline! {
//!     name = "count-to-3";
//!     let zero = Const::new(json!(0));
//!     let r#loop = Merge::default();
//!     let inc = Counter::new();
//!     let check = Guard::new(Test::Lt(json!(3)));
//!     let out = Sink::new();
//!     zero.out_data -> r#loop.in_a;
//!     r#loop.out_data -> inc.in_data;
//!     inc.out_data -> check.in_data;
//!     check.out_continue -> r#loop.in_b;
//!     check.out_exit -> out.in_data;
//! };
//! assert_eq!(net.operators()[1].name, "loop");
//! let mut cvm = Cvm::new(net);
//! assert_eq!(cvm.run()?, EndState::Completed);
//! assert_eq!(cvm.received("out")[0].to_json(), json!(3));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod catalogue;
pub mod connection;
pub mod dsl;
pub mod engine;
pub mod history;
pub mod net;
pub mod operator;
pub mod ops;
pub mod policy;
pub mod types;

pub use cameleon_macros::pipeline;
pub use catalogue::{BuildContext, BuildError, Catalogue, CatalogueEntry, ParamError, ParamInfo};
pub use connection::{ConnId, ConnState, Connection, OpId, PortRef, Token};
pub use engine::{
    BackError, CheckoutError, ConnView, Cvm, CvmBuilder, EndState, Marking, RunError, Step,
    StepError, Stuck, StuckReason,
};
pub use history::{Branch, BranchId, Entry, FiringView, History};
pub use net::{Mode, Net, NetBuilder, NetConfig, NetError, OpMeta, OpNode, Problem, ProblemKind};
pub use operator::{
    AnyInPort, Firing, In, InPort, InputHandle, InputSet, OpError, OpSpec, OpState, Operator, Out,
    OutPort, Params, PortSpec, TypeRef,
};
pub use policy::{Enabling, Family, Policy};
pub use types::{
    Any, Binary, DataBool, DataChunk, DataError, DataJSON, DataString, DataType, PortType,
    TypeInfo, Value,
};

/// Everything a pipeline author needs, in one import.
pub mod prelude {
    pub use crate::connection::{ConnState, OpId};
    pub use crate::engine::{Cvm, EndState, Step};
    pub use crate::net::{Mode, Net, NetBuilder};
    pub use crate::operator::{
        Firing, In, InPort, OpError, OpSpec, Operator, Out, OutPort, TypeRef,
    };
    pub use crate::policy::{Enabling, Family, Policy};
    pub use crate::types::{
        Any, Binary, DataBool, DataChunk, DataError, DataJSON, DataString, DataType, Value,
    };
    pub use cameleon_macros::pipeline;
}

/// Support for generated code. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use serde_json;

    pub use crate::dsl::{
        Endpoint, HasPorts, InputDecl, add, build_net, check_source, check_target, check_wiring,
        ports_of,
    };
    pub use crate::net::{Mode, Net, NetBuilder, NetConfig};
}
