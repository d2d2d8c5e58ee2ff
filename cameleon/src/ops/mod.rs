//! The standard operators, in libraries (the table below; `cameleon catalogue --markdown`
//! lists them with their ports and params).
//!
//! | library | operators |
//! |---|---|
//! | `std-io` | [`Source`] (`source`), [`Const`] (`const`), [`Sink`] (`sink`), [`FileLoader`] (`file_loader`), [`TextFile`] (`text_file`), [`JsonFile`] (`json_file`) |
//! | `std-struct` | [`Fork`] (`fork`), [`Join`] (`join`), [`Merge`] (`merge`), [`Gate`] (`gate`, alias `switch`), [`Barrier`] (`barrier`, alias `sync`), [`Guard`] (`guard`), [`Accumulator`] (`accumulator`) |
//! | `std-ai` | [`Llm`] (`llm`), [`LlmJson`] (`llm_json`), [`Embed`] (`embed`), [`Index`] (`index`), [`Retrieve`] (`retrieve`), [`Agent`] (`agent`) — see [`ai`] |
//! | `std-text` | [`Replace`] (`replace`), [`Case`] (`case`), [`Trim`] (`trim`), [`Truncate`] (`truncate`), [`SplitText`] (`split_text`), [`JoinText`] (`join_text`), [`RegexExtract`] (`regex_extract`) — see [`text`] |
//! | `std-data` | [`Transform`] (`transform`), [`Format`] (`format`), [`JsonParse`] (`json_parse`), [`JsonStringify`] (`json_stringify`), [`Template`] (`template`), [`BinaryToString`] (`binary_to_string`), [`JsonGet`] (`json_get`), [`Predicate`] (`predicate`), [`Chunker`] (`chunker`), [`Passages`] (`passages`), [`Counter`] (`counter`) |
//!
//! Plus [`Ask`] (`ask`), a question to a person that the run waits for (docs/semantics.md §6.1),
//! [`Delay`] (`delay`), an async pass-through for demos and tests of parallel mode, and
//! [`CallTool`] (`tool`), which calls a tool through the run's tool gate.

pub mod ai;
mod ask;
mod data;
mod delay;
mod io;
mod structural;
mod subnet;
pub mod test_expr;
pub mod text;
mod tool;
mod workflow;

pub use ai::{Agent, Embed, Index, Llm, LlmJson, Retrieve};
pub use ask::Ask;
pub use data::{
    BinaryToString, Chunker, Counter, Format, JsonGet, JsonParse, JsonStringify, Passages,
    Predicate, Template, Transform, chunk_text, fill_template, json_path, text_of,
};
pub use delay::Delay;
pub use io::{Const, DEFAULT_MAX_BYTES, FileAccess, FileLoader, JsonFile, Sink, Source, TextFile};
pub use structural::{
    Accumulator, Barrier, Fork, Gate, Guard, Join, MAX_ARITY, MAX_PARTIAL_ARITY, Merge, letter_port,
};
pub use subnet::{
    Boundary, DEFAULT_CONCURRENCY, Dynamic, FiringRuns, InnerRun, Map, MapPorts, Runs, Subnet,
    SubnetError, SubnetInput, SubnetOutput, inner_runs, port_index,
};
pub use test_expr::Test;
pub use text::{Case, JoinText, RegexExtract, Replace, SplitText, Trim, Truncate};
pub use tool::CallTool;
pub use workflow::{
    Cancel, MAX_THREADS, Milestone, Mutex, Terminate, ThreadMerge, ThreadSplit, Trigger,
};
