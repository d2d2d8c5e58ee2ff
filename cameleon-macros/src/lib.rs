//! Procedural macros of Caméléon. Use them through the `cameleon` crate, which re-exports them:
//! `#[operator]` is documented there (`cameleon::operator`), `pipeline!` here.
//!
//! Layout (after serde_derive and thiserror): `operator::attr` parses the attributes,
//! `operator::ast` builds the model of a declaration, `operator::check` states the rules,
//! `operator::expand` only generates code (a module per part of the output), and
//! `operator::fallback` is the stub emitted next to errors so that they do not cascade. Mistakes
//! accumulate in a `ctxt::Ctxt` so every one is reported at once; `suggest` finds the name a
//! typo meant. `pipeline!` follows the same layout in `pipeline` (`ast`, `check`, `expand`), and
//! so does `#[tool]` in `tool` (`attr`, `ast`, `check`, `expand`).

extern crate proc_macro;

mod ctxt;
mod operator;
mod pipeline;
mod suggest;
mod symbol;
mod tool;

use proc_macro::TokenStream;

/// Declares an operator type: see `cameleon::operator`.
#[proc_macro_attribute]
pub fn operator(args: TokenStream, item: TokenStream) -> TokenStream {
    operator::expand::expand(args.into(), item.into()).into()
}

/// Declares a tool: see `cameleon::tool`.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand::expand(args.into(), item.into()).into()
}

/// Builds a `Net` in code, with every connection type-checked by the compiler.
///
/// ```
/// use cameleon::ops::{Chunker, Sink, Source};
/// use cameleon::prelude::*;
///
/// let net: Net = pipeline! {
///     name = "rag";
///     let loader = Source::new("a text to split") @ (90, 150);   // optional layout position
///     let chunk = Chunker { size: 6, overlap: 0 } @ (300, 150);
///     let sink = Sink::new();
///     loader.out_data -> chunk.in_data;
///     chunk.out_data -> sink.in_data;
/// };
/// let mut cvm = Cvm::new(net);
/// assert_eq!(cvm.run()?, EndState::Completed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Syntax
///
/// Statements end with `;` and come in three forms, in any order:
///
/// - **Settings**: `name = "…";` (required: any expression that converts into a `String`),
///   `mode = sequential;` or `mode = parallel;`, `max_loop_iterations = 100;`.
/// - **Instances**: `let NAME = EXPR;` where `EXPR` is any expression of an operator type (one
///   that implements `HasPorts`, as `#[operator]` types do). Optionally a type
///   (`let f: Fork<DataString> = Fork::default();`), a layout position `@ (x, y)`, and the
///   attributes `#[label = "…"]` and `#[instance = N]` (the `.cm` `label:` and `instance:`).
///   Doc comments are allowed and ignored. `NAME` is the instance name in the net.
/// - **Connections**: `source.output -> target.input;`.
///
/// The macro evaluates to a block of type `Net`, the same value `NetBuilder` (or loading the
/// equivalent `.cm` file) gives: operators and connections in declaration order.
///
/// # What is checked at compile time
///
/// Every mistake is reported in the same build, each at its own place:
///
/// | mistake | where the error is |
/// |---|---|
/// | `a.out -> b.in` between different data types (`DataString -> DataBool`) | the `->`, naming both ports and both types |
/// | an input used as a source, an output used as a target | that endpoint |
/// | a port the operator does not have | the port, with rustc's "a field with a similar name exists" |
/// | an instance that is not declared | the name, with a "did you mean" |
/// | two connections into one input | the second one ("join them with a merge") |
/// | two instances with the same name | the second one |
/// | a required input with no connection; a source that feeds nothing | the instance's name, naming it and the port |
/// | an unknown setting or attribute, a malformed statement | the offending tokens |
///
/// Generic operators (`Fork<T>`, `Merge<T>`) get their type parameters from the connections:
/// `let f = Fork::default();` fed by a `DataString` output is a `Fork<DataString>`, and a
/// mismatch further down is reported where it occurs.
///
/// The wiring check (required inputs, sources) is a `const` evaluation, which rustc performs when
/// it generates code: it is reported by `cargo build` and `cargo test`, not `cargo check`, and
/// once the pipeline has no type errors left.
///
/// Error messages name ports as `instance·port` (a generated marker type per endpoint, which is
/// how the names reach rustc's messages). A crate that denies the `non_ascii_idents` lint cannot
/// use the macro.
///
/// # Panics
///
/// The net is validated again at run time by `NetBuilder::build`. For a pipeline the macro
/// accepted, this fails only on what is not known at compile time — an n-ary operator's extra
/// ports (its `arity` param) left unconnected, an operator whose spec is malformed — and then the
/// expression panics with every problem found.
#[proc_macro]
pub fn pipeline(input: TokenStream) -> TokenStream {
    pipeline::expand(input.into()).into()
}
