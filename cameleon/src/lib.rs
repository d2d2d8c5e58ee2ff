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
//! | [`operator`](mod@operator) | operators: spec, `can_fire`, `run`, `rollback` (§3–§5); [`capability`], what a firing receives |
//! | [`policy`] | the built-in firing policies (§3) |
//! | [`net`] | the validated net (§1) |
//! | [`engine`] | the CVM: forward, backward, replay, end states (§4–§6); parallel mode, async operators, events, cancellation (§7) |
//! | [`history`] | the history tree of deltas (§5) |
//! | [`journal`] | durable runs: the history in a SQLite file, resume after a crash (§5.5) |
//! | [`verify`] | state-space exploration of the control abstraction, PNML export (§8) |
//! | [`catalogue`] | operator types by id, for `.cm` files, the CLI and LLMs |
//! | [`cm`] | the `.cm` file: load (every problem located), write (canonical), schema |
//! | [`export`] | diagrams: DOT, Mermaid, SVG |
//! | [`dsl`] | compile-time typed connections for `pipeline!` |
//! | [`tools`] | tools: `#[tool]`, the registry, the tool gate, the standard tools |
//! | [`capabilities`] | models, embedders, memories, tools and observer per generation; reload |
//! | [`models`] | chat models, embedders and memories (OpenAI-compatible endpoints; offline `extractive`, `hash`, `flat`) |
//! | [`ops`] | the standard operators |
//!
//! The `cameleon` command line is another crate, `cameleon-cli`, built on this one: this crate
//! has no argument parsing, progress bars or terminal rendering.
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
pub mod journal;
pub mod models;
pub mod net;
pub mod operator;
pub mod ops;
pub mod policy;
pub mod runtime;
pub mod tools;
pub mod types;
pub mod util;
pub mod verify;

#[doc = include_str!("operator_macro.md")]
pub use cameleon_macros::operator;
pub use cameleon_macros::pipeline;
#[doc = include_str!("tool_macro.md")]
pub use cameleon_macros::tool;
pub use catalogue::{
    BuildContext, BuildError, Catalogue, CatalogueEntry, Catalogued, FromContext, ParamInfo,
    ParamType,
};
pub use connection::{ConnId, ConnState, Connection, OpId, PortRef, Token};
pub use engine::{
    BackError, CancelToken, CheckoutError, ConnView, Cvm, CvmBuilder, EndState, Event, Marking,
    Observer, ProvideError, RunError, Step, StepError, Stuck, StuckReason, Waiting,
};
pub use history::{Branch, BranchId, Entry, FiringView, History};
pub use net::{
    Mode, Net, NetBuilder, NetConfig, NetError, OpMeta, OpNode, Placement, Problem, ProblemKind,
    ToolPolicy,
};
pub use operator::capability;
pub use operator::{
    AnswerError, AnyInPort, CanFire, Emitted, Execution, FiniteControl, Firing, In, InPort,
    InputHandle, InputSet, OpError, OpFuture, OpSettings, OpSpec, OpState, Operator, Out, OutPort,
    ParamError, Params, PortSpec, Question, Retry, Run, RunAsync, StateCodec, StateError, TypeRef,
};
pub use policy::{Enabling, Family, Policy};
pub use runtime::block_on;
pub use types::{
    Any, Binary, DataBool, DataChunk, DataEmbeddings, DataError, DataJSON, DataString, DataType,
    PortType, TypeInfo, TypedValue, Value,
};

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
pub mod __private {
    pub use inventory;
    pub use serde_json;

    // For `pipeline!` (and `#[operator]`'s `HasPorts` impls).
    pub use crate::dsl::{
        Endpoint, HasPorts, InputDecl, add, build_net, check_source, check_target, check_wiring,
        ports_of,
    };
    pub use crate::net::{Mode, Net, NetBuilder, NetConfig};

    // For `#[operator]`.
    pub use crate::catalogue::{
        BuildContext, CatalogueEntry, Catalogued, FromContext, ParamInfo, ParamReader, ParamType,
    };
    pub use crate::connection::ConnState;
    pub use crate::operator::{
        AnyInPort, CanFire, Emitted, Execution, FiniteControl, Firing, InPort, InputSet, OpError,
        OpFuture, OpSettings, OpSpec, OpState, Operator, OutPort, ParamError, Params, Retry, Run,
        RunAsync, StateCodec, TypeRef, run_async_blocking, run_async_boxed,
    };
    pub use crate::policy::{Enabling, Family, Policy};
    pub use crate::types::{Any, PortType, Value};
    pub use ::core::clone::Clone;
    pub use ::core::default::Default;
    pub use ::core::marker::PhantomData;
    pub use ::core::option::Option::{self, None, Some};
    pub use ::core::result::Result::{self, Err, Ok};
    pub use ::std::any::Any as StdAny;
    pub use ::std::borrow::ToOwned;
    pub use ::std::boxed::Box;
    pub use ::std::string::String;
    pub use ::std::vec::Vec;

    // For `#[tool]`.
    pub use crate::operator::capability::CapFuture;
    pub use crate::tools::{ToolContext, ToolEntry, ToolError, ToolFn};

    /// What the arguments of a `#[tool]` must be.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the arguments of a `#[tool]`",
        label = "the arguments struct of this tool",
        note = "derive `serde::Deserialize` and `schemars::JsonSchema` on it: the gate checks a call's arguments against its JSON Schema, then reads them into it"
    )]
    pub trait ToolArgs: serde::de::DeserializeOwned + schemars::JsonSchema {}
    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolArgs for T {}

    /// How generated code reads a tool's arguments and gives their schema. Every use goes
    /// through [`args_of`], so arguments that are not [`ToolArgs`] are reported once.
    #[allow(missing_debug_implementations)] // function pointers, for generated code only
    pub struct ArgsOf<T> {
        /// Reads a call's arguments (already checked against the schema) into the struct.
        pub read: fn(&str, serde_json::Value) -> Result<T, ToolError>,
        /// The JSON Schema of the arguments (JSON Schema 2020-12).
        pub schema: fn() -> serde_json::Value,
    }

    /// The argument operations of `T`.
    pub const fn args_of<T: ToolArgs>() -> ArgsOf<T> {
        ArgsOf {
            read: read_args::<T>,
            schema: schema_of::<T>,
        }
    }

    fn read_args<T: ToolArgs>(tool: &str, args: serde_json::Value) -> Result<T, ToolError> {
        serde_json::from_value(args)
            .map_err(|e| ToolError::invalid_args(format!("invalid arguments for `{tool}`: {e}")))
    }

    /// The JSON Schema of a type (JSON Schema 2020-12).
    pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
        schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<T>()
            .to_value()
    }

    /// What a `#[tool]` function must return.
    #[diagnostic::on_unimplemented(
        message = "a `#[tool]` returns `Result<T, ToolError>` with `T: Serialize`, not `{Self}`",
        label = "this return type",
        note = "write `-> Result<MyOutput, ToolError>` (or `Result<impl Serialize, ToolError>`); errors convert with `ToolError::new(…)` or `?` on I/O and JSON errors"
    )]
    pub trait ToolReturn {
        /// The result as JSON.
        fn into_json(self) -> Result<serde_json::Value, ToolError>;
    }

    impl<T: serde::Serialize, E: Into<ToolError>> ToolReturn for Result<T, E> {
        fn into_json(self) -> Result<serde_json::Value, ToolError> {
            let value = self.map_err(Into::into)?;
            serde_json::to_value(value).map_err(|e| {
                ToolError::new(format!("the tool's result cannot be written as JSON: {e}"))
            })
        }
    }

    /// A tool function's result as JSON.
    pub fn tool_output<R: ToolReturn>(r: R) -> Result<serde_json::Value, ToolError> {
        r.into_json()
    }

    /// Finds the JSON Schema of a tool's result type when it has one (autoref specialisation:
    /// [`ToolSchemaOf`] applies to types with a schema, [`ToolSchemaAny`] to the others).
    #[derive(Debug)]
    pub struct SchemaProbe<T: ?Sized>(PhantomData<fn() -> Box<T>>);

    impl<T: ?Sized> SchemaProbe<T> {
        /// The probe.
        pub fn new() -> Self {
            SchemaProbe(PhantomData)
        }
    }

    impl<T: ?Sized> Default for SchemaProbe<T> {
        fn default() -> Self {
            SchemaProbe::new()
        }
    }

    /// The schema of a result type that has one.
    pub trait ToolSchemaOf {
        /// Its JSON Schema.
        fn tool_output_schema(&self) -> serde_json::Value;
    }

    impl<T: schemars::JsonSchema> ToolSchemaOf for SchemaProbe<T> {
        fn tool_output_schema(&self) -> serde_json::Value {
            schema_of::<T>()
        }
    }

    /// The schema of a result type without one: any JSON (`true`).
    pub trait ToolSchemaAny {
        /// `true`.
        fn tool_output_schema(&self) -> serde_json::Value;
    }

    impl<T: ?Sized> ToolSchemaAny for &SchemaProbe<T> {
        fn tool_output_schema(&self) -> serde_json::Value {
            serde_json::Value::Bool(true)
        }
    }

    /// Most ports a variadic port group (`in_a`, `in_b`, …) can have.
    pub const MAX_VARIADIC: usize = 26;

    /// The name of port `i` of a variadic group: `in_a`, `in_b`, … `in_z`.
    pub fn letter_port(prefix: &str, i: usize) -> ::std::string::String {
        crate::ops::letter_port(prefix, i)
    }

    /// The number of ports of a variadic group whose size param is `n`, at most
    /// [`MAX_VARIADIC`].
    pub fn variadic_count(n: usize) -> usize {
        n.min(MAX_VARIADIC)
    }

    /// How generated code calls an async operator's [`RunAsync`](crate::RunAsync) methods: the
    /// `Operator` glue of `exec = async` (`run` is [`run_async_blocking`], `run_async` is
    /// [`run_async_boxed`]). Every use goes through [`async_ops`], so an operator declared
    /// `exec = async` without `impl RunAsync` is reported once.
    #[allow(missing_debug_implementations)] // function pointers, for generated code only
    pub struct AsyncOps<O> {
        /// [`Operator::run`]: drives `RunAsync::run` to completion.
        pub run: fn(&mut O, &mut Firing<'_>) -> Result<(), OpError>,
        /// [`Operator::run_async`]: `RunAsync::run`, boxed.
        pub run_async: for<'a, 'f> fn(&'a mut O, &'a mut Firing<'f>) -> OpFuture<'a>,
        /// `RunAsync::consumes`.
        pub consumes: fn(&O, &[ConnState]) -> InputSet,
        /// `RunAsync::control`.
        pub control: fn(&O) -> Option<&dyn FiniteControl>,
        /// `RunAsync::rollback`.
        pub rollback: fn(&mut O, &Emitted<'_, O>),
        /// `RunAsync::replay`.
        pub replay: fn(&mut O, &Emitted<'_, O>),
        /// `RunAsync::validate`.
        pub validate: fn(&O) -> Result<(), ParamError>,
        /// `RunAsync::refine_spec`.
        pub refine_spec: fn(&O, OpSpec) -> OpSpec,
    }

    /// The async operations of `O`.
    pub fn async_ops<O: RunAsync>() -> AsyncOps<O> {
        AsyncOps {
            run: run_async_blocking::<O>,
            run_async: |op, cx| run_async_boxed(op, cx),
            consumes: O::consumes,
            control: O::control,
            rollback: O::rollback,
            replay: O::replay,
            validate: O::validate,
            refine_spec: O::refine_spec,
        }
    }

    /// How generated code saves, initialises and journals an internal-state field of type `T`.
    /// Every use goes through [`state`], so a field that is not [`State`] (or not
    /// [`JournalState`]) is reported once, at the field.
    #[derive(Debug)]
    pub struct StateOf<T> {
        /// A copy of the field, taken before and after each firing.
        pub save: fn(&T) -> T,
        /// The field's value when the catalogue builds the operator.
        pub initial: fn() -> T,
        /// The field's JSON form, for the journal.
        pub to_json: fn(&T) -> Result<serde_json::Value, ::std::string::String>,
        /// The field read back from its JSON form.
        pub from_json: fn(serde_json::Value) -> Result<T, ::std::string::String>,
    }

    fn state_to_json<T: JournalState>(v: &T) -> Result<serde_json::Value, ::std::string::String> {
        serde_json::to_value(v).map_err(|e| e.to_string())
    }

    fn state_from_json<T: JournalState>(v: serde_json::Value) -> Result<T, ::std::string::String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    /// The state operations of `T`.
    pub fn state<T: State + JournalState>() -> StateOf<T> {
        StateOf {
            save: T::clone,
            initial: T::default,
            to_json: state_to_json::<T>,
            from_json: state_from_json::<T>,
        }
    }

    /// The `n` fields of a saved state's JSON form (an array, one element per state field).
    pub fn state_fields(
        v: serde_json::Value,
        n: usize,
    ) -> Result<::std::vec::IntoIter<serde_json::Value>, ::std::string::String> {
        match v {
            serde_json::Value::Array(a) if a.len() == n => Ok(a.into_iter()),
            other => Err(format!(
                "expected the {n} internal-state fields as a JSON array, found {other}"
            )),
        }
    }

    /// The state field read by `read`, or the error naming the field.
    pub fn state_field<T>(
        v: Option<serde_json::Value>,
        field: &str,
        read: fn(serde_json::Value) -> Result<T, ::std::string::String>,
    ) -> Result<T, ::std::string::String> {
        read(v.unwrap_or_default()).map_err(|e| format!("internal state `{field}`: {e}"))
    }

    /// How generated code reads, writes and names a `#[param]` of type `T`. Every use goes
    /// through [`param`], so a type that is not [`ParamType`] is reported once.
    #[derive(Debug)]
    pub struct ParamOf<T> {
        /// The type's name in the catalogue.
        pub name: &'static str,
        /// The default of a param declared without one.
        pub implicit_default: Option<&'static str>,
        /// Reads the param from `.cm` params.
        pub read: for<'r, 'n> fn(&ParamReader<'r>, &'n str) -> Result<T, ParamError>,
        /// Writes the param back.
        pub write: fn(&T) -> serde_json::Value,
    }

    fn read_param<T: ParamType>(r: &ParamReader<'_>, name: &str) -> Result<T, ParamError> {
        r.read(name)
    }

    /// The param operations of `T`.
    pub const fn param<T: ParamType>() -> ParamOf<T> {
        ParamOf {
            name: T::NAME,
            implicit_default: T::IMPLICIT_DEFAULT,
            read: read_param::<T>,
            write: T::to_param,
        }
    }

    /// What an internal-state field must be: cloned for rollback, defaulted when the catalogue
    /// builds the operator, moved across threads.
    #[diagnostic::on_unimplemented(
        message = "internal state `{Self}` must be `Clone + Default + Send + 'static`",
        label = "a field without `#[param]`, `#[input]`, `#[output]` or `#[context]` is internal state",
        note = "internal state is cloned before each firing so a backward step restores it exactly, and defaulted when the operator is built from `.cm`; wrap it (`Arc<Mutex<…>>`) or make it a `#[param]` or a `#[context]` field"
    )]
    pub trait State: Clone + Default + Send + 'static {}
    impl<T: Clone + Default + Send + 'static> State for T {}

    /// What an internal-state field must also be: written to the journal of a durable run and
    /// read back when the run resumes.
    #[diagnostic::on_unimplemented(
        message = "internal state `{Self}` must be `Serialize + Deserialize` (serde)",
        label = "internal state is written to the journal of a durable run",
        note = "a journaled run records each operator's internal state before and after every firing, so a crashed run resumes exactly: derive `serde::Serialize` and `serde::Deserialize` for it, or make it a `#[param]` or a `#[context]` field"
    )]
    pub trait JournalState: serde::Serialize + serde::de::DeserializeOwned {}
    impl<T: serde::Serialize + serde::de::DeserializeOwned> JournalState for T {}
}

// A net and its engine move between threads (parallel mode, servers); values are shared by
// every connection of a fan-out and read from several tasks.
static_assertions::assert_impl_all!(Net: Send);
static_assertions::assert_impl_all!(Cvm: Send);
static_assertions::assert_impl_all!(Value: Send, Sync, Clone);
static_assertions::assert_impl_all!(Catalogue: Send, Sync);
