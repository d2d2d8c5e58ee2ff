//! [`NetTool`]: a `.cm` file offered as a tool (docs/mcp.md, "Caméléon as an MCP server") —
//! its arguments are its `input`s, its result its `output`s; offered only when `check
//! --verify` holds.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value as Json, json};

use crate::capabilities::Generation;
use crate::cm::Loader;
use crate::engine::{Cvm, EndState};
use crate::net::Net;
use crate::operator::capability::ToolManifest;
use crate::ops::SubnetInput;
use crate::tools::{ToolError, ToolRegistry};
use crate::types::{Any, TypeInfo};
use crate::verify::{Verdict, VerifyOptions, verify};

/// One side of the boundary: the boundary name, the operator, its data type.
#[derive(Clone, Debug)]
struct Side {
    name: String,
    op: String,
    ty: &'static TypeInfo,
}

/// A net offered as a tool: its `input` operators are the arguments (an object with one
/// property per input, each typed by its data type's JSON Schema, every one required), its
/// `output` operators the result (an object with one property per output that received a
/// value). Made by [`NetTool::load`], the one way a `.cm` file becomes a tool.
#[derive(Clone, Debug)]
pub struct NetTool {
    manifest: ToolManifest,
    file: PathBuf,
    text: String,
    inputs: Vec<Side>,
    outputs: Vec<Side>,
}

impl NetTool {
    /// The tool of `.cm` file `file`, named after the file's stem, its effects the union over
    /// its operators' with `registry`'s tools. `Err`: why it is not offered — the file is not a
    /// valid net, it has no `input`/`output` boundary, or `check --verify` does not hold (a
    /// verification that runs out of its state budget counts as not holding).
    pub fn load(file: &Path, registry: &Arc<ToolRegistry>) -> Result<NetTool, String> {
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
        let report = verify(&net, &VerifyOptions::default());
        match report.verdict {
            Verdict::Holds => {}
            Verdict::Fails => {
                return Err(format!(
                    "`{shown}` is not proved to finish: `cameleon check {shown} --verify` finds a property that fails"
                ));
            }
            Verdict::Inconclusive => {
                return Err(format!(
                    "`{shown}` is not proved to finish: `cameleon check {shown} --verify` ran out of its state budget before a verdict"
                ));
            }
        }
        let name = file
            .file_stem()
            .map_or_else(|| "net".to_owned(), |s| s.to_string_lossy().into_owned());
        let description = if net.name().is_empty() {
            format!("Runs the net `{name}`.")
        } else {
            format!("Runs the net `{}` ({name}.cm).", net.name())
        };
        let props = |sides: &[Side]| -> Map<String, Json> {
            sides
                .iter()
                .map(|s| (s.name.clone(), type_schema(s.ty)))
                .collect()
        };
        let required: Vec<&str> = inputs.iter().map(|s| s.name.as_str()).collect();
        let manifest = ToolManifest {
            name,
            description,
            effects: crate::tools::net_effects(&net, registry),
            input_schema: json!({
                "type": "object",
                "properties": props(&inputs),
                "required": required,
                "additionalProperties": false,
            }),
            output_schema: json!({"type": "object", "properties": props(&outputs)}),
        };
        Ok(NetTool {
            manifest,
            file: file.to_path_buf(),
            text,
            inputs,
            outputs,
        })
    }

    /// Its manifest.
    pub fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    /// The `.cm` file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Runs the net (as verified: the text read by [`load`](Self::load)) on `args`, with the
    /// capabilities of `generation` and the net's own `tools:` policy, file tools confined to
    /// its folder. `Ok`: the outputs, by boundary name. A run that ends WAITING is an error
    /// naming the question; any other end but COMPLETED an error naming it.
    pub fn run(&self, args: &Json, generation: &Arc<Generation>) -> Result<Json, ToolError> {
        let shown = self.file.display().to_string();
        let folder = crate::cm::folder_of(&self.file);
        let mut net = Loader::new()
            .tools(Arc::clone(generation.tools()))
            .file_name(shown.clone())
            .base_dir(&folder)
            .load_str(&self.text)
            .map_err(|e| ToolError::new(first_line(&e.to_string())))?;
        for side in &self.inputs {
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
        let caps = generation.for_run(net.tool_policy(), folder);
        let mut cvm = Cvm::builder(net).capabilities(caps).build();
        let end = cvm
            .run()
            .map_err(|e| ToolError::new(format!("the net `{}` failed: {e}", self.manifest.name)))?;
        match end {
            EndState::Completed => {
                let mut out = Map::new();
                for side in &self.outputs {
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
                    "the net `{}` waits for a person's answer: {} (run it with `cameleon run {shown} --answer OP=VALUE`)",
                    self.manifest.name,
                    asks.join("; ")
                )))
            }
            EndState::Error { op, error } => Err(ToolError::new(format!(
                "the net `{}` ended in ERROR: `{op}` failed: {error}",
                self.manifest.name
            ))),
            other => Err(ToolError::new(format!(
                "the net `{}` ended in {}",
                self.manifest.name,
                other.name()
            ))),
        }
    }
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
            });
        } else {
            outputs.push(Side {
                name,
                op: node.name.clone(),
                ty: node.in_types[0],
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
