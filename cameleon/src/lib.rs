//! # Caméléon
//!
//! Typed, reversible, verifiable pipelines. A Caméléon pipeline is an extended Petri net:
//! **connections are places** (each EMPTY, NEW or OLD, holding at most one typed token) and
//! **operators are transitions** that fire by a rule of their own. The engine — the CVM — steps
//! such a net forward *and backward*, exactly, and replays recorded steps without running
//! operators again; the same net and data always give the same firing sequence.
//!
//! The semantics are those of the repository's `docs/semantics.md` (the §n below); this crate is
//! organised after its concepts:
//!
//! | module | concept |
//! |---|---|
//! | [`types`] | data types and values (§9) |
//! | [`connection`] | connections, their states, tokens (§2) |
//! | [`operator`](mod@operator) | operators: spec, `can_fire`, `run`, `rollback` (§3–§5); [`capability`](operator::capability), what a firing receives |
//! | [`policy`] | the built-in firing policies (§3) |
//! | [`net`] | the validated net (§1) |
//! | [`engine`] | the CVM: forward, backward, replay, end states (§4–§6); parallel mode, async operators, events, cancellation (§7) |
//! | [`history`] | the history tree of deltas (§5) |
//! | `journal` | durable runs: the history in a SQLite file, resume after a crash (§5.5); feature `journal` |
//! | [`verify`] | state-space exploration of the control abstraction, PNML export (§8) |
//! | [`catalogue`] | operator types by id, for `.cm` files, the CLI and LLMs |
//! | [`cm`] | the `.cm` file: load (every problem located), write (canonical), schema |
//! | [`export`] | diagrams: DOT, Mermaid, SVG |
//! | [`dsl`] | compile-time typed connections for `pipeline!` |
//! | [`tools`] | tools: `#[tool]`, the registry, the tool gate, the standard tools |
//! | [`capabilities`] | models, embedders, memories, tools and observer per generation; reload |
//! | [`models`] | chat models, embedders and memories (OpenAI-compatible endpoints, feature `openai`; offline `extractive`, `hash`, `flat`) |
//! | [`ops`] | the standard operators |
//!
//! The `cameleon` command line is another crate, `cameleon-cli`, built on this one: this crate
//! has no argument parsing, progress bars or terminal rendering.
//!
//! ## Features
//!
//! Without its default features (`cameleon = { version = "0.1", default-features = false }`)
//! the crate is what a program that declares operators and runs nets needs — the DSL, the net,
//! the engine in both modes, the verifier, `.cm` files, the catalogue, tools and the standard
//! operators — and none of SQLite, HTTP, TLS or a JSON Schema validator. The default features
//! add the rest of the runtime:
//!
//! | feature | adds |
//! |---|---|
//! | `journal` | the `journal` module: durable runs in a SQLite file |
//! | `openai` | the `openai` provider kinds: OpenAI-compatible chat and embedding endpoints |
//! | `json-schema` | a tool call's arguments checked against the tool's JSON Schema before it runs; `llm_json`'s answers checked against theirs |
//! | `layout` | the layered (Sugiyama) layout of diagrams of nets without positions |
//! | `fast-regex` | literal prefilters for the text operators' patterns (the same matches, faster) |
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
//! use serde_json::json;
//!
//! // const 0 -> merge -> counter -> guard(lt 3) -> back to merge, or exit to a sink.
//! let mut b = Net::builder("count-to-3");
//! b.add("zero", Const::new(json!(0)));
//! b.add("loop", Merge::<DataJSON>::default());      // generic operators: say the type, or
//! b.add("inc", Counter::new());
//! b.add("check", Guard::<Any>::new(Test::parse(&json!({"lt": 3})).unwrap())); // let the net infer it
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
//!
//! ## Declaring an operator
//!
//! An operator type is a struct marked [`#[operator]`](macro@operator): its fields declare the ports
//! (`#[input]`, `#[output]`, taken out of the struct), the `.cm` params (`#[param]`) and the
//! internal state (every other field). [`Run`] says what a firing does. The macro writes the
//! [`Operator`] glue, typed port handles (`MyChunker::text`) and a [`CatalogueEntry`] that it
//! submits to the global [`Catalogue`], so `.cm` files, the CLI and LLMs can name the operator.
//!
//! ```
//! use cameleon::prelude::*;
//! use cameleon::{BuildContext, Params};
//!
//! /// Splits a text into chunks of `size` characters.
//! #[operator(id = "my_chunker", label = "My chunker", family = behavioral)]
//! pub struct MyChunker {
//!     /// characters per chunk
//!     #[param(default = 512)]
//!     size: usize,
//!     #[input]
//!     text: In<DataString>,
//!     #[output]
//!     chunks: Out<DataChunk>,
//! }
//!
//! impl Run for MyChunker {
//!     fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
//!         let chars: Vec<char> = cx.get(Self::text)?.0.chars().collect();
//!         let chunks = chars.chunks(self.size.max(1)).map(|c| c.iter().collect()).collect();
//!         cx.emit(Self::chunks, DataChunk(chunks));
//!         Ok(())
//!     }
//! }
//!
//! // A value is its params and state alone: the ports are declarations.
//! let mut b = Net::builder("chunks");
//! b.add("src", cameleon::ops::Source::new("abcde"));
//! b.add("chunk", MyChunker { size: 2 });
//! b.add("out", cameleon::ops::Sink::new());
//! b.connect("src.out_data", "chunk.text").connect("chunk.chunks", "out.in_data");
//! let mut cvm = Cvm::new(b.build()?);
//! cvm.run()?;
//! assert_eq!(cvm.received("out")[0].to_json(), serde_json::json!(["ab", "cd", "e"]));
//!
//! // The catalogue lists it beside the standard operators, sorted by id…
//! let catalogue = Catalogue::global();
//! for entry in catalogue.iter() {
//!     println!("{:<18} {:<12} {}", entry.id, entry.policy, entry.summary());
//! }
//! let entry = catalogue.get("my_chunker").expect("submitted by #[operator]");
//! assert_eq!(entry.summary(), "Splits a text into chunks of `size` characters.");
//! assert_eq!(entry.params[0].default, Some("512"));
//! // …builds it from `.cm` params, with the defaults filled in…
//! let op = catalogue.build("my_chunker", &Params::new(), &BuildContext::default())?;
//! assert_eq!(op.params()["size"], 512);
//! // …and exports it for an LLM writing `.cm` files.
//! assert!(catalogue.to_markdown().contains("### `my_chunker` — My chunker"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

// Lets `#[operator]`'s generated `::cameleon::…` paths resolve inside this crate too (the
// standard operators are declared with it).
extern crate self as cameleon;

pub mod capabilities;
pub mod catalogue;
pub mod cm;
pub mod connection;
pub mod dsl;
pub mod engine;
pub mod export;
pub mod history;
#[cfg(feature = "journal")]
pub mod journal;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "journal")]
pub mod migrate;
pub mod models;
pub mod net;
pub mod nets;
pub mod operator;
pub mod ops;
pub mod policy;
pub mod runtime;
pub mod tools;
pub mod types;
pub mod verify;

mod files;
mod util;

#[doc = include_str!("operator_macro.md")]
pub use cameleon_macros::operator;
pub use cameleon_macros::pipeline;
#[doc = include_str!("tool_macro.md")]
pub use cameleon_macros::tool;

// The names the docs' examples use; everything else is under its module's path
// (CHANGELOG.md lists where each former root name went).
pub use catalogue::{BuildContext, Catalogue, CatalogueEntry};
pub use engine::{CancelToken, Cvm, CvmBuilder, EndState, Event, RunError, Step, StepError};
pub use net::{Mode, Net, NetBuilder, NetError};
pub use operator::{
    CanFire, Execution, Firing, In, InputSet, OpError, OpSettings, OpSpec, Operator, Out,
    ParamError, Params, Retry, Run, RunAsync,
};
pub use types::{PortType, Value};

/// Everything a pipeline author needs, in one import.
pub mod prelude {
    pub use crate::catalogue::Catalogue;
    pub use crate::connection::{ConnState, OpId};
    pub use crate::engine::{Cvm, EndState, Step};
    pub use crate::net::{Mode, Net, NetBuilder};
    pub use crate::operator::{
        AnyInPort, CanFire, Emitted, Execution, Firing, In, InPort, InputSet, OpError, OpSpec,
        Operator, Out, OutPort, ParamError, Run, RunAsync, TypeRef,
    };
    pub use crate::policy::{Enabling, Family, Policy};
    pub use crate::tools::{ToolContext, ToolError};
    pub use crate::types::{
        Any, Binary, DataBool, DataChunk, DataEmbeddings, DataError, DataJSON, DataString,
        DataType, PortType, Value,
    };
    pub use cameleon_macros::{operator, pipeline, tool};
}

/// Support for generated code. Not a public API.
#[doc(hidden)]
pub mod __private;

// A net and its engine move between threads (parallel mode, servers); values are shared by
// every connection of a fan-out and read from several tasks.
const _: () = {
    const fn send<T: Send>() {}
    const fn shared<T: Send + Sync + Clone>() {}
    const fn sync<T: Send + Sync>() {}
    send::<Net>();
    send::<Cvm>();
    shared::<Value>();
    sync::<Catalogue>();
};
