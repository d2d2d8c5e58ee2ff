//! `ask`: a question to a person (or any outside source of a value), answered while the run
//! waits (docs/semantics.md §6.1).
//!
//! Written by hand rather than with `#[operator]`: the type of `out_data` is a param.

use crate::catalogue::{BuildContext, CatalogueEntry, ParamError, ParamInfo, ParamReader, PortDoc};
use crate::connection::ConnState;
use crate::operator::{
    Execution, FiniteControl, Firing, OpError, OpSettings, OpSpec, OpState, Operator, Params,
    Question, StateCodec, TypeRef,
};
use crate::policy::{Enabling, Family, Policy};
use crate::types::{Any, DataBool, DataJSON, DataString, PortType, TypeInfo, Value};

/// The answer types an `ask` may expect.
const TYPES: [&str; 3] = ["DataString", "DataBool", "DataJSON"];

const DOC: &str = "Asks a person a question and emits the answer on `out_data`; the run waits (WAITING) until it is answered.

Params: `prompt` (the question) and `type` (the answer's type: `DataString`, the default, `DataBool` or `DataJSON`). The optional input `in_context` (any type) is shown with the question; when it is connected, `ask` asks once per context it receives, else once per run. Answers come from `run --answer OP=VALUE`, `--answers FILE.json`, a terminal prompt, `serve` (`POST /api/provide/OP`) or `Cvm::provide`; an answer of the wrong type is refused and the run keeps waiting. The answer is recorded: going back and forward again never asks twice. The verifier treats `ask` as a source of any value of its type.";

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "prompt",
        ty: "string",
        default: None,
        doc: "the question shown to the person who answers",
    },
    ParamInfo {
        name: "type",
        ty: "string",
        default: Some("\"DataString\""),
        doc: "the answer's type: DataString, DataBool or DataJSON",
    },
];

/// Asks a question and emits the answer (docs/semantics.md §6.1): the standard operator `ask`.
///
/// `in_context` (optional, any type) is what the person sees with the question; `out_data` has
/// the answer's type. Until an answer is [provided](crate::Cvm::provide), an `ask` whose rule
/// holds is *waiting*, and a run that can only go on through it stops in `WAITING`.
///
/// ```
/// use cameleon::prelude::*;
/// use cameleon::ops::{Ask, Sink};
///
/// let mut b = Net::builder("approve");
/// b.add("ok", Ask::new("Ship it?", DataBool::INFO)?);
/// b.add("out", Sink::new());
/// b.connect("ok.out_data", "out.in_data");
/// let mut cvm = Cvm::new(b.build()?);
///
/// assert_eq!(cvm.run()?.name(), "WAITING");
/// assert!(cvm.provide("ok", Value::new(DataString("yes".into()))).is_err()); // wrong type
/// cvm.provide_text("ok", "yes")?;
/// assert_eq!(cvm.run()?, EndState::Completed);
/// assert_eq!(cvm.received("out")[0].to_json(), true);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Ask {
    prompt: String,
    ty: &'static TypeInfo,
    /// The answer the next firing emits.
    answer: Option<Value>,
    /// Whether it has fired (without a context connected it asks once).
    fired: bool,
}

impl Ask {
    /// An `ask` of `prompt` expecting an answer of type `ty` (`DataString`, `DataBool` or
    /// `DataJSON`).
    pub fn new(prompt: impl Into<String>, ty: &'static TypeInfo) -> Result<Self, String> {
        if !TYPES.contains(&ty.name) {
            return Err(format!(
                "an ask's answer type must be one of {}, not {}",
                TYPES.join(", "),
                ty.name
            ));
        }
        Ok(Ask {
            prompt: prompt.into(),
            ty,
            answer: None,
            fired: false,
        })
    }

    /// The catalogue entry of `ask`.
    pub const ENTRY: CatalogueEntry = CatalogueEntry {
        id: "ask",
        aliases: &[],
        label: "Ask",
        family: Family::Behavioral,
        policy: Policy::Custom,
        doc: DOC,
        params: PARAMS,
        ports: &[
            PortDoc {
                name: "in_context",
                group: false,
                doc: "optional: a value shown with the question (and, when connected, a token here asks again)",
            },
            PortDoc {
                name: "out_data",
                group: false,
                doc: "the answer, of the data type `type` names",
            },
        ],
        spec: default_spec,
        build,
        execution: Execution::Inline,
        settings: OpSettings::NONE,
    };

    fn rule(fired: bool, e: &Enabling<'_>) -> bool {
        match e.inputs.first() {
            Some(ConnState::New) => true,
            // An unconnected context reads OLD forever: ask once per run.
            Some(ConnState::Old) => !fired,
            _ => false,
        }
    }
}

fn type_named(name: &str) -> Option<&'static TypeInfo> {
    match name {
        "DataString" => Some(DataString::INFO),
        "DataBool" => Some(DataBool::INFO),
        "DataJSON" => Some(DataJSON::INFO),
        _ => None,
    }
}

fn default_spec() -> OpSpec {
    spec_for(DataString::INFO)
}

fn spec_for(ty: &'static TypeInfo) -> OpSpec {
    OpSpec::new("ask", "Ask", Family::Behavioral, Policy::Custom)
        .optional_input("in_context", TypeRef::of::<Any>())
        .output("out_data", TypeRef::Is(ty))
}

fn build(params: &Params, _cx: &BuildContext) -> Result<Box<dyn Operator>, ParamError> {
    let r = ParamReader::new(params, PARAMS)?;
    let prompt: String = r.get("prompt")?;
    let name: String = r.get("type")?;
    let Some(ty) = type_named(&name) else {
        let hint = crate::util::did_you_mean(&name, TYPES)
            .map(|s| format!("did you mean `{s}`?"))
            .unwrap_or_else(|| format!("use one of {}", TYPES.join(", ")));
        return Err(ParamError::new(
            "type".to_owned(),
            format!("an ask's answer type must be DataString, DataBool or DataJSON, not `{name}`"),
        )
        .with_hint(hint));
    };
    Ok(Box::new(Ask {
        prompt,
        ty,
        answer: None,
        fired: false,
    }))
}

inventory::submit! { Ask::ENTRY }

/// The verifier's model of `ask` (docs/semantics.md §8.1): whether it has fired, so that an
/// `ask` without a context fires once; an answer is always possible, so a firing always emits.
/// The control state is 0 before the first firing, 1 after; the field is the state now.
struct AskControl(bool);

impl FiniteControl for AskControl {
    fn count(&self) -> u32 {
        2
    }
    fn initial(&self) -> u32 {
        u32::from(self.0)
    }
    fn can_fire(&self, q: u32, e: &Enabling<'_>) -> bool {
        Ask::rule(q == 1, e)
    }
    fn fire(&self, _q: u32, _inputs: &[ConnState]) -> Vec<(usize, u32)> {
        vec![(0, 1)]
    }
}

impl Operator for Ask {
    fn spec(&self) -> OpSpec {
        spec_for(self.ty)
    }

    fn params(&self) -> Params {
        let mut p = Params::new();
        p.insert("prompt".into(), self.prompt.clone().into());
        p.insert("type".into(), self.ty.name.into());
        p
    }

    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        Ask::rule(self.fired, e)
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        static FRESH: AskControl = AskControl(false);
        static FIRED: AskControl = AskControl(true);
        Some(if self.fired { &FIRED } else { &FRESH })
    }

    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let answer = self.answer.take().ok_or_else(|| {
            OpError::new("fired without an answer (provide one with `Cvm::provide`)")
        })?;
        cx.emit_at(0, answer);
        self.fired = true;
        Ok(())
    }

    fn execution(&self) -> Execution {
        Execution::Inline
    }

    fn question(&self) -> Option<Question> {
        Some(Question::new(self.prompt.clone(), self.ty))
    }

    fn has_answer(&self) -> bool {
        self.answer.is_some()
    }

    fn answer(&mut self, value: Value) {
        self.answer = Some(value);
    }

    fn save_state(&self) -> Option<OpState> {
        // With a serde form, so a journaled run keeps the answer a waiting `ask` was given.
        Some(OpState::with_codec(
            (self.answer.clone(), self.fired),
            StateCodec {
                to_json: ask_state_to_json,
                from_json: ask_state_from_json,
            },
        ))
    }

    fn restore_state(&mut self, state: &OpState) {
        if let Some((answer, fired)) = state.get::<(Option<Value>, bool)>() {
            self.answer = answer.clone();
            self.fired = *fired;
        }
    }
}

/// An `ask`'s saved state as JSON: `{"answer": {"type": …, "value": …} | null, "fired": …}` (the
/// answer carries its type, so it reads back without the operator).
fn ask_state_to_json(v: &(dyn std::any::Any + Send)) -> Result<serde_json::Value, String> {
    let Some((answer, fired)) = v.downcast_ref::<(Option<Value>, bool)>() else {
        return Err("not an `ask` state".into());
    };
    let answer = answer
        .as_ref()
        .map(|a| serde_json::json!({ "type": a.type_name(), "value": a.to_json() }));
    Ok(serde_json::json!({ "answer": answer, "fired": fired }))
}

/// Reads back what [`ask_state_to_json`] wrote.
fn ask_state_from_json(json: serde_json::Value) -> Result<Box<dyn std::any::Any + Send>, String> {
    let fired = json["fired"]
        .as_bool()
        .ok_or("an `ask` state without `fired`")?;
    let answer = match &json["answer"] {
        serde_json::Value::Null => None,
        a => {
            let name = a["type"]
                .as_str()
                .ok_or("an `ask` answer without its type")?;
            let ty = crate::types::type_by_name(name)
                .ok_or_else(|| format!("an `ask` answer of unknown type `{name}`"))?;
            Some((ty.from_json)(a["value"].clone()).map_err(|e| e.to_string())?)
        }
    };
    Ok(Box::new((answer, fired)))
}
