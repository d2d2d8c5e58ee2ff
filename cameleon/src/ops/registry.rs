//! Catalogue entries of the standard operators.

use super::*;
use crate::catalogue::{BuildContext, CatalogueEntry, ParamError, ParamInfo, ParamReader};
use crate::operator::{Operator, Params};
use crate::policy::{Family, Policy};

fn access(cx: &BuildContext) -> FileAccess {
    FileAccess {
        root: cx.base_dir.clone().unwrap_or_else(|| ".".into()),
        allow_outside: cx.allow_outside,
    }
}

fn test_param(r: &ParamReader<'_>, name: &str) -> Result<Test, ParamError> {
    let v: serde_json::Value = r.get(name)?;
    Test::parse(&v).map_err(|m| {
        ParamError::new(name.to_owned(), format!("param `{name}`: {m}")).with_hint(
            "write a test such as `{lt: 10}`, `{eq: \"stop\"}`, `{not: {contains: \"x\"}}`",
        )
    })
}

fn arity(r: &ParamReader<'_>) -> Result<usize, ParamError> {
    r.get::<usize>("arity")
}

fn bad_arity(e: String) -> ParamError {
    ParamError::new("arity".to_owned(), e)
}

macro_rules! entry {
    (
        $id:literal, aliases: [$($alias:literal),*], $label:literal, $family:ident, $policy:ident,
        doc: $doc:literal,
        params: [$($p:expr),* $(,)?],
        spec: $spec:expr,
        build: |$r:ident, $cx:ident| $build:expr $(,)?
    ) => {
        crate::submit_operator!(CatalogueEntry {
            id: $id,
            aliases: &[$($alias),*],
            label: $label,
            family: Family::$family,
            policy: Policy::$policy,
            doc: $doc,
            params: {
                const P: &[ParamInfo] = &[$($p),*];
                P
            },
            spec: || Operator::spec(&$spec),
            build: |params: &Params, $cx: &BuildContext| -> Result<Box<dyn Operator>, ParamError> {
                const P: &[ParamInfo] = &[$($p),*];
                let $r = ParamReader::new(params, P)?;
                let _ = (&$r, $cx);
                Ok(Box::new($build))
            },
        });
    };
}

const fn param(
    name: &'static str,
    ty: &'static str,
    default: Option<&'static str>,
    doc: &'static str,
) -> ParamInfo {
    ParamInfo {
        name,
        ty,
        default,
        doc,
    }
}

const ARITY: ParamInfo = param(
    "arity",
    "usize",
    Some("2"),
    "number of n-ary ports (2..=26); extra ports are named in_c/out_c, in_d/out_d, …",
);

// std-io
entry!("source", aliases: [], "Source", Behavioral, Source,
    doc: "Emits a configured string once, as a DataString on `out_data`.",
    params: [param("value", "string", None, "the string emitted")],
    spec: Source::default(),
    build: |r, cx| Source::new(r.get::<String>("value")?));
entry!("const", aliases: [], "Const", Behavioral, Source,
    doc: "Emits a configured JSON value once, as a DataJSON on `out_data`.",
    params: [param("value", "json", None, "the value emitted (any YAML value)")],
    spec: Const::default(),
    build: |r, cx| Const::new(r.get::<serde_json::Value>("value")?));
entry!("sink", aliases: [], "Sink", Behavioral, Any,
    doc: "Collects every value it receives on `in_data` (any type); the CLI prints them.",
    params: [],
    spec: Sink,
    build: |r, cx| Sink);
entry!("file_loader", aliases: [], "File loader", Behavioral, Source,
    doc: "Reads a file's bytes once, as Binary on `out_data`.",
    params: [param("path", "string", None, "file path, relative to the .cm file's folder")],
    spec: FileLoader::default(),
    build: |r, cx| FileLoader { path: r.get("path")?, access: access(cx) });
entry!("text_file", aliases: [], "Text file", Behavioral, Source,
    doc: "Reads a UTF-8 text file once, as a DataString on `out_data`.",
    params: [param("path", "string", None, "file path, relative to the .cm file's folder")],
    spec: TextFile::default(),
    build: |r, cx| TextFile { path: r.get("path")?, access: access(cx) });
entry!("json_file", aliases: [], "JSON file", Behavioral, Source,
    doc: "Reads a JSON file once, as a DataJSON on `out_data`.",
    params: [param("path", "string", None, "file path, relative to the .cm file's folder")],
    spec: JsonFile::default(),
    build: |r, cx| JsonFile { path: r.get("path")?, access: access(cx) });

// std-struct
entry!("fork", aliases: [], "Fork", Structural, Any,
    doc: "AND-split: copies `in_data` to every output `out_a`, `out_b`, … (same type as the input).",
    params: [ARITY],
    spec: Fork::default(),
    build: |r, cx| Fork::new(arity(&r)?).map_err(bad_arity)?);
entry!("join", aliases: [], "Join", Structural, All,
    doc: "AND-join: waits until every input `in_a`, `in_b`, … is NEW, then passes `in_a` to `out_data`.",
    params: [ARITY],
    spec: Join::default(),
    build: |r, cx| Join::new(arity(&r)?).map_err(bad_arity)?);
entry!("merge", aliases: [], "Merge", Structural, AnyNoGuard,
    doc: "XOR-join: forwards the first NEW input to `out_data`; other NEW inputs wait their turn. The loop entry.",
    params: [ARITY],
    spec: Merge::default(),
    build: |r, cx| Merge::new(arity(&r)?).map_err(bad_arity)?);
entry!("gate", aliases: ["switch"], "Gate", Structural, Custom,
    doc: "XOR-split: routes `in_data` to `out_true` or `out_false` by the DataBool on `in_condition`; fires when `in_data` is NEW and `in_condition` is not EMPTY.",
    params: [],
    spec: Gate,
    build: |r, cx| Gate);
entry!("barrier", aliases: ["sync"], "Barrier", Structural, All,
    doc: "Synchronisation: waits until every input is NEW, then passes `in_a` to `out_a`, `in_b` to `out_b`, ….",
    params: [ARITY],
    spec: Barrier::default(),
    build: |r, cx| Barrier::new(arity(&r)?).map_err(bad_arity)?);
entry!("guard", aliases: [], "Guard", Structural, Any,
    doc: "Loop exit: emits `in_data` on `out_continue` while the test `continue_if` holds on its JSON value, else on `out_exit`.",
    params: [param("continue_if", "test", None, "test on the value: {lt: 10}, {eq: \"stop\"}, {not: {…}}, {all: […]}, {any: […]}, …")],
    spec: Guard::new(Test::All(Vec::new())),
    build: |r, cx| Guard::new(test_param(&r, "continue_if")?));
entry!("accumulator", aliases: [], "Accumulator", Behavioral, AnyNoGuard,
    doc: "Collects values of `in_data` into a list (DataJSON) emitted on `out_data` after `n` values, or when optional `in_done` receives a token.",
    params: [param("n", "usize", Some("0"), "values per list; 0 waits for `in_done`")],
    spec: Accumulator::default(),
    build: |r, cx| Accumulator::new(r.get("n")?));

// std-data
entry!("transform", aliases: [], "Transform", Behavioral, Any,
    doc: "Turns any value into text on `out_data`: a DataString as is, DataJSON as compact JSON, DataBool as true/false, Binary as lossy UTF-8.",
    params: [],
    spec: Transform,
    build: |r, cx| Transform);
entry!("format", aliases: [], "Format", Behavioral, All,
    doc: "Joins two strings: `in_main`, then `separator`, then `in_meta`, on `out_data`.",
    params: [param("separator", "string", Some("\" \""), "put between the two strings")],
    spec: Format::default(),
    build: |r, cx| Format { separator: r.get("separator")? });
entry!("json_parse", aliases: [], "JSON parse", Behavioral, Any,
    doc: "Parses the JSON text on `in_data` (DataString) into a DataJSON on `out_data`.",
    params: [],
    spec: JsonParse,
    build: |r, cx| JsonParse);
entry!("json_stringify", aliases: [], "JSON stringify", Behavioral, Any,
    doc: "Writes the DataJSON on `in_data` as JSON text (DataString) on `out_data`.",
    params: [param("pretty", "bool", Some("false"), "indent the text")],
    spec: JsonStringify::default(),
    build: |r, cx| JsonStringify { pretty: r.get("pretty")? });
entry!("template", aliases: [], "Template", Behavioral, All,
    doc: "Fills the `{{key}}` placeholders of `in_template` (DataString) from `in_data` (DataJSON); the text goes to `out_data`.",
    params: [],
    spec: Template,
    build: |r, cx| Template);
entry!("binary_to_string", aliases: [], "Binary to string", Behavioral, Any,
    doc: "Decodes the Binary on `in_data` as UTF-8 text (lossy) on `out_data`.",
    params: [],
    spec: BinaryToString,
    build: |r, cx| BinaryToString);
entry!("json_get", aliases: [], "JSON get", Behavioral, Any,
    doc: "Reads the field at `path` of the DataJSON on `in_data` (dotted, with list indices: `a.b.0`).",
    params: [param("path", "string", None, "dotted path, e.g. `user.emails.0`")],
    spec: JsonGet::default(),
    build: |r, cx| JsonGet::new(r.get::<String>("path")?));
entry!("predicate", aliases: [], "Predicate", Behavioral, Any,
    doc: "Tests the JSON value of `in_data` (any type) and emits the verdict as a DataBool on `out_data`.",
    params: [param("test", "test", None, "test on the value: {lt: 10}, {eq: \"stop\"}, {contains: \"x\"}, {not: {…}}, …")],
    spec: Predicate::new(Test::All(Vec::new())),
    build: |r, cx| Predicate::new(test_param(&r, "test")?));
entry!("chunker", aliases: [], "Chunker", Behavioral, Any,
doc: "Splits the text on `in_data` into chunks of `size` characters overlapping by `overlap` (DataChunk on `out_data`).",
params: [
    param("size", "usize", Some("512"), "characters per chunk (≥ 1)"),
    param("overlap", "usize", Some("0"), "characters shared with the previous chunk (< size)"),
],
spec: Chunker::default(),
build: |r, cx| {
    let (size, overlap) = (r.get("size")?, r.get("overlap")?);
    chunk_text("", size, overlap).map_err(|e| ParamError::new("overlap".to_owned(), e))?;
    Chunker { size, overlap }
});
entry!("counter", aliases: [], "Counter", Behavioral, Any,
    doc: "Adds one to the JSON number on `in_data` (integers stay integers), on `out_data`.",
    params: [],
    spec: Counter,
    build: |r, cx| Counter);

// parallel mode
entry!("delay", aliases: [], "Delay", Behavioral, Any,
    doc: "Waits `ms` milliseconds without blocking a thread, then passes `in_data` to `out_data` unchanged (same type: a type variable). Async: in parallel mode the delays of one step overlap.",
    params: [param("ms", "u64", Some("100"), "milliseconds to wait")],
    spec: Delay::default(),
    build: |r, cx| Delay::new(r.get("ms")?));
