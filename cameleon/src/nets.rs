//! [`NetTool`]: a `.cm` file offered as a tool — by a capabilities file's `nets:`
//! (docs/tools.md#nets-as-tools), by `cameleon mcp` (docs/mcp.md) and on a satellite: its
//! arguments are its `input`s, its result its `output`s; offered only when `check --verify`
//! holds (deadlock-free, with the option to complete).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value as Json, json};

use crate::capabilities::{Caller, DEFAULT_MAX_DEPTH, Generation, NetEntry, RunCapabilities};
use crate::cm::Loader;
use crate::engine::{Cvm, EndState};
use crate::net::Net;
use crate::operator::capability::{Named, ToolManifest, Usage, capability_params};
use crate::ops::{InnerRun, SubnetInput};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use crate::types::{Any, TypeInfo};
use crate::verify::{Check, VerifyOptions, verify};

/// One side of the boundary: the boundary name, the operator, its data type, its label.
#[derive(Clone, Debug)]
struct Side {
    name: String,
    op: String,
    ty: &'static TypeInfo,
    label: Option<String>,
}

/// A net offered as a tool: its `input` operators are the arguments (an object with one
/// property per input, each typed by its data type's JSON Schema and described by the input's
/// `label`, every one required), its `output` operators the result (an object with one property
/// per output that received a value); its description the net's `description:`. Made by
/// [`NetTool::load`] or [`NetTool::load_named`], the one way a `.cm` file becomes a tool.
///
/// Called through a run's gate it runs the net to its end with the caller's capabilities
/// ([`Caller`]): the same generation and meter, the caller's tool policy intersected with the
/// net's own `tools:`. The result's `meta.usage` is what its model requests used and `meta.run`
/// its run, history included (an [`InnerRun`]'s form), kept with the calling firing.
#[derive(Clone, Debug)]
pub struct NetTool(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    manifest: ToolManifest,
    file: PathBuf,
    text: String,
    inputs: Vec<Side>,
    outputs: Vec<Side>,
    max_depth: u32,
}

// A capabilities file's `nets:` become tools through here.
inventory::submit! {
    crate::capabilities::NetToolMaker { make: make_tool, calls: net_calls }
}

/// The nets among `names` the net of `entry` may call: those its `tools:` lists (an inner
/// call needs it, docs/tools.md#nets-as-tools) or its operators name. A file that does not
/// load names none (making its tool says why).
fn net_calls(entry: &NetEntry, registry: &Arc<ToolRegistry>, names: &[String]) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(&entry.file) else {
        return Vec::new();
    };
    let Ok(net) = Loader::new()
        .tools(Arc::clone(registry))
        .known_tools(names.iter().cloned())
        .file_name(entry.file.display().to_string())
        .base_dir(crate::cm::folder_of(&entry.file))
        .load_str(&text)
    else {
        return Vec::new();
    };
    let mut named: Vec<&str> = Vec::new();
    if let Some(p) = net.tool_policy() {
        named.extend(p.allow.iter().chain(&p.approve).map(String::as_str));
    }
    let params: Vec<Json> = net
        .operators()
        .iter()
        .map(|n| Json::Object(n.op.params()))
        .collect();
    for (node, params) in net.operators().iter().zip(&params) {
        named.extend(node.op.calls_tool());
        let type_id = node.spec.type_id.as_ref();
        for cp in capability_params().filter(|p| p.op_type == type_id && p.names == Named::Tool) {
            match params.get(cp.param) {
                Some(Json::String(s)) => named.push(s),
                Some(Json::Array(items)) => named.extend(items.iter().filter_map(Json::as_str)),
                _ => {}
            }
        }
    }
    names
        .iter()
        .filter(|n| named.contains(&n.as_str()))
        .cloned()
        .collect()
}

fn make_tool(entry: &NetEntry, registry: &Arc<ToolRegistry>) -> Result<Arc<dyn Tool>, String> {
    NetTool::load_named(&entry.name, &entry.file, entry.max_depth, registry)
        .map(|t| Arc::new(t) as Arc<dyn Tool>)
}

impl NetTool {
    /// The tool of `.cm` file `file`, named after the file's stem (see [`load_named`](Self::load_named)).
    pub fn load(file: &Path, registry: &Arc<ToolRegistry>) -> Result<NetTool, String> {
        let name = file
            .file_stem()
            .map_or_else(|| "net".to_owned(), |s| s.to_string_lossy().into_owned());
        NetTool::load_named(&name, file, DEFAULT_MAX_DEPTH, registry)
    }

    /// The tool `name` of `.cm` file `file`, its effects the union over its operators' with
    /// `registry`'s tools, ending chains of at most `max_depth` nets running as tools. `Err`:
    /// why it is not offered — the file is not a valid net, it has no `input`/`output`
    /// boundary, or `check --verify` does not hold: a property (deadlock freedom, the option
    /// to complete) fails — named, with its witness — or the verification ran out of its state
    /// budget.
    pub fn load_named(
        name: &str,
        file: &Path,
        max_depth: u32,
        registry: &Arc<ToolRegistry>,
    ) -> Result<NetTool, String> {
        let shown = file.display();
        let text =
            std::fs::read_to_string(file).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
        let net = Loader::new()
            .tools(Arc::clone(registry))
            .file_name(shown.to_string())
            .base_dir(crate::cm::folder_of(file))
            .load_str(&text)
            .map_err(|e| {
                format!(
                    "`{shown}` is not a valid net: {}",
                    first_line(&e.to_string())
                )
            })?;
        let (inputs, outputs) = boundary(&net);
        if inputs.is_empty() && outputs.is_empty() {
            return Err(format!(
                "`{shown}` has no boundary: a net is offered as a tool through its `input` and `output` operators"
            ));
        }
        proved_to_finish(&net, &shown.to_string())?;
        let description = match net.description() {
            Some(d) => d.to_owned(),
            None if net.name().is_empty() => format!("Runs the net `{name}`."),
            None => format!("Runs the net `{}` ({name}.cm).", net.name()),
        };
        let props = |sides: &[Side]| -> Map<String, Json> {
            sides
                .iter()
                .map(|s| {
                    let mut schema = type_schema(s.ty);
                    if let (Some(l), Some(o)) = (&s.label, schema.as_object_mut()) {
                        o.insert("description".into(), json!(l));
                    }
                    (s.name.clone(), schema)
                })
                .collect()
        };
        let required: Vec<&str> = inputs.iter().map(|s| s.name.as_str()).collect();
        let manifest = ToolManifest {
            name: name.to_owned(),
            description,
            effects: crate::tools::net_effects(&net, registry),
            input_schema: json!({
                "type": "object",
                "properties": props(&inputs),
                "required": required,
                "additionalProperties": false,
            }),
            output_schema: json!({"type": "object", "properties": props(&outputs)}),
            idempotent: false,
        };
        Ok(NetTool(Arc::new(Inner {
            manifest,
            file: file.to_path_buf(),
            text,
            inputs,
            outputs,
            max_depth,
        })))
    }

    /// Its manifest.
    pub fn manifest(&self) -> &ToolManifest {
        &self.0.manifest
    }

    /// The `.cm` file.
    pub fn file(&self) -> &Path {
        &self.0.file
    }

    /// The longest chain of nets running as tools a call of it may end.
    pub fn max_depth(&self) -> u32 {
        self.0.max_depth
    }

    /// Runs the net (as verified: the text read by [`load`](Self::load)) on `args` as a run of
    /// its own: with the capabilities of `generation`, the net's own `tools:` policy and
    /// budget, file tools confined to its folder (what `cameleon mcp` does). `Ok`: the outputs,
    /// by boundary name. A run that ends WAITING is an error naming the question; any other
    /// end but COMPLETED an error naming it.
    pub fn run(&self, args: &Json, generation: &Arc<Generation>) -> Result<Json, ToolError> {
        let net = self.prepare(args, generation.tools())?;
        let caps = generation.for_run(net.tool_policy(), crate::cm::folder_of(&self.0.file));
        caps.run_meter().set_limit(net.config().budget);
        self.finish(net, caps).0
    }

    /// Runs the net for `caller` (see the [type](Self)): the result, what its model requests
    /// used, and its run.
    fn run_for(
        &self,
        args: &Json,
        caller: &Caller,
    ) -> (Result<Json, ToolError>, Option<Usage>, Option<Json>) {
        let name = &self.0.manifest.name;
        let chain = caller.chain();
        if chain.len() as u32 >= self.0.max_depth {
            let mut all: Vec<&str> = chain.iter().map(String::as_str).collect();
            all.push(name);
            return (
                Err(ToolError::new(format!(
                    "the net-tool `{name}` is not run: the chain of nets running as tools {} would be {} deep, past its max_depth of {} (a net-tool calling net-tools, an agent calling agents)",
                    all.join(" → "),
                    all.len(),
                    self.0.max_depth
                ))),
                None,
                None,
            );
        }
        let net = match self.prepare(args, caller.generation().tools()) {
            Ok(net) => net,
            Err(e) => return (Err(e), None, None),
        };
        let caps = caller.nested(name, net.tool_policy(), crate::cm::folder_of(&self.0.file));
        self.finish(net, caps)
    }

    /// The net loaded afresh (tool names against `tools`), its inputs given `args`.
    fn prepare(&self, args: &Json, tools: &Arc<ToolRegistry>) -> Result<Net, ToolError> {
        let shown = self.0.file.display().to_string();
        let mut net = Loader::new()
            .tools(Arc::clone(tools))
            .file_name(shown)
            .base_dir(crate::cm::folder_of(&self.0.file))
            .load_str(&self.0.text)
            .map_err(|e| ToolError::new(first_line(&e.to_string())))?;
        for side in &self.0.inputs {
            let Some(v) = args.get(&side.name) else {
                return Err(ToolError::invalid_args(format!(
                    "argument `{}` is missing (an input of the net)",
                    side.name
                )));
            };
            let value = (side.ty.from_json)(v.clone()).map_err(|e| {
                ToolError::invalid_args(format!(
                    "argument `{}` is not a {}: {e}",
                    side.name, side.ty.name
                ))
            })?;
            if let Some(id) = net.op_id(&side.op) {
                let op: &mut dyn std::any::Any = &mut *net.ops[id.index()].op;
                if let Some(input) = op.downcast_mut::<SubnetInput<Any>>() {
                    input.give(value);
                }
            }
        }
        Ok(net)
    }

    /// Runs `net` to its end with `caps`: the result, what its model requests used (summed
    /// over its firings), and its run (history included).
    fn finish(
        &self,
        net: Net,
        caps: Arc<RunCapabilities>,
    ) -> (Result<Json, ToolError>, Option<Usage>, Option<Json>) {
        let name = &self.0.manifest.name;
        let shown = self.0.file.display().to_string();
        let mut cvm = Cvm::builder(net).capabilities(caps).build();
        let end = match cvm.run() {
            Ok(end) => end,
            Err(e) => {
                return (
                    Err(ToolError::new(format!("the net `{name}` failed: {e}"))),
                    None,
                    None,
                );
            }
        };
        let usage = usage_of(&cvm);
        let result = match &end {
            EndState::Completed => {
                let mut out = Map::new();
                for side in &self.0.outputs {
                    if let Some(v) = cvm.received(&side.op).first() {
                        out.insert(side.name.clone(), v.to_json());
                    }
                }
                Ok(Json::Object(out))
            }
            EndState::Waiting { waiting } => {
                let asks: Vec<String> = waiting
                    .iter()
                    .map(|w| format!("`{}` asks {:?}", w.op, w.prompt))
                    .collect();
                Err(ToolError::new(format!(
                    "the net `{name}` ended in WAITING: {} (a net run as a tool cannot wait for a person; run it with `cameleon run {shown} --answer OP=VALUE`)",
                    asks.join("; ")
                )))
            }
            EndState::Error { op, error } => Err(ToolError::new(format!(
                "the net `{name}` ended in ERROR: `{op}` failed: {error}"
            ))),
            other => Err(ToolError::new(format!("the net `{name}` ended in {other}"))),
        };
        let run = serde_json::to_value(InnerRun::new(cvm, end, None)).ok();
        (result, usage, run)
    }
}

impl Tool for NetTool {
    fn manifest(&self) -> &ToolManifest {
        &self.0.manifest
    }

    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a> {
        let Some(caller) = cx.caller().cloned() else {
            return ToolOutput::Ready(Err(ToolError::new(format!(
                "the net-tool `{}` runs with its caller's capabilities, and this gate has none (build it with `Generation::for_run`)",
                self.0.manifest.name
            ))));
        };
        let me = self.clone();
        ToolOutput::Pending(Box::pin(async move {
            // The inner run may block (its own async operators, its models): off the caller's
            // worker thread.
            let joined = tokio::task::spawn_blocking(move || {
                let Some(caller) = caller.downcast_ref::<Caller>() else {
                    return (
                        Err(ToolError::new("the caller of a net-tool is not a run")),
                        None,
                        None,
                    );
                };
                me.run_for(&args, caller)
            })
            .await;
            match joined {
                Ok((result, usage, run)) => {
                    if let Some(u) = usage {
                        cx.report_usage(u);
                    }
                    if let Some(r) = run {
                        cx.report_run(r);
                    }
                    result
                }
                Err(e) => Err(ToolError::new(format!("the net's run stopped: {e}"))),
            }
        }))
    }
}

/// Whether `net` is proved to finish: deadlock-free with the option to complete (a
/// verification out of its state budget does not prove it). `Err`: the property that fails
/// and its witness, or the budget.
fn proved_to_finish(net: &Net, shown: &str) -> Result<(), String> {
    let report = verify(net, &VerifyOptions::default());
    let props = &report.properties;
    for (property, check) in [
        ("deadlock freedom", &props.deadlock_free),
        ("the option to complete", &props.option_to_complete),
    ] {
        if check.holds == Some(false) {
            return Err(format!(
                "`{shown}` is not proved to finish: {property} fails (`cameleon check {shown} --verify`){}",
                witness(check)
            ));
        }
    }
    if props.deadlock_free.holds.is_none() || props.option_to_complete.holds.is_none() {
        return Err(format!(
            "`{shown}` is not proved to finish: `cameleon check {shown} --verify` ran out of its state budget of {} states before a verdict",
            report.exploration.max_states
        ));
    }
    Ok(())
}

/// `; witness: a → b → c, stuck tokens on x` for a failing check.
fn witness(check: &Check) -> String {
    let mut s = String::new();
    if let Some(w) = &check.witness {
        let w = if w.is_empty() {
            "(the initial marking)".to_owned()
        } else {
            w.join(" → ")
        };
        s.push_str(&format!("; witness: {w}"));
    }
    if !check.new.is_empty() {
        s.push_str(&format!(" (tokens left on {})", check.new.join(", ")));
    }
    if let Some(m) = &check.message {
        s.push_str(&format!(": {m}"));
    }
    s
}

/// The tokens the model requests of `cvm`'s run used, summed over its firings (`None`: none
/// reported any).
fn usage_of(cvm: &Cvm) -> Option<Usage> {
    let history = cvm.history();
    let mut total: Option<Usage> = None;
    for e in history.entries() {
        for i in 0..e.firings.len() {
            if let Some(u) = history
                .state_after(e.step, i)
                .and_then(crate::ops::ai::usage_in)
            {
                let t = total.get_or_insert_with(Usage::default);
                t.prompt_tokens += u.prompt_tokens;
                t.completion_tokens += u.completion_tokens;
            }
        }
    }
    total
}

/// The first line of a message (a `.cm` error's rendering has many).
fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_owned()
}

/// The `input` and `output` operators of `net`, in declaration order.
fn boundary(net: &Net) -> (Vec<Side>, Vec<Side>) {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for node in net.operators() {
        let kind = node.spec.type_id.as_ref();
        if kind != "input" && kind != "output" {
            continue;
        }
        let name = node
            .params()
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or(&node.name)
            .to_owned();
        if kind == "input" {
            inputs.push(Side {
                name,
                op: node.name.clone(),
                ty: node.out_types[0],
                label: node.label.clone(),
            });
        } else {
            outputs.push(Side {
                name,
                op: node.name.clone(),
                ty: node.in_types[0],
                label: node.label.clone(),
            });
        }
    }
    (inputs, outputs)
}

/// The JSON Schema of the values of data type `ty`: the built-in types' own, and any JSON
/// (`{}`) for a type of a program's own (its values are checked when read, by the type).
pub fn type_schema(ty: &TypeInfo) -> Json {
    match ty.name {
        "DataString" => json!({"type": "string"}),
        "DataBool" => json!({"type": "boolean"}),
        "DataChunk" => json!({"type": "array", "items": {"type": "string"}}),
        "Binary" => {
            json!({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}})
        }
        "DataError" => json!({
            "type": "object",
            "properties": {"operator": {"type": "string"}, "message": {"type": "string"}},
            "required": ["operator", "message"],
        }),
        "DataEmbeddings" => json!({
            "type": "object",
            "properties": {
                "texts": {"type": "array", "items": {"type": "string"}},
                "vectors": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            },
            "required": ["texts", "vectors"],
        }),
        _ => json!({}),
    }
}
