//! What the page reads: every JSON shape the API answers with, in one file (docs/cli.md,
//! "serve", lists them). A change here is a change of the contract with `page.js`.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use cameleon::Value;
use cameleon::cm::CmError;
use cameleon::operator::capability::{Budget, Spent, Usage};
use cameleon::types::{Binary, DataString, Preview};

/// `GET /api/state`, the `state` event of the stream, and the answer of every POST that
/// changes the engine.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct StateView {
    /// Bumped by every change: the page keeps the newest state it received.
    pub(crate) version: u64,
    /// The depth of the history (steps applied).
    pub(crate) step: usize,
    /// `null`, or the end state the net is in (`COMPLETED`, `WAITING`, …).
    pub(crate) end: Option<&'static str>,
    /// The operators that can fire.
    pub(crate) fireable: Vec<String>,
    /// Per connection (`a.out -> b.in`), its state: `EMPTY`, `NEW` or `OLD`.
    pub(crate) connections: Ordered<&'static str>,
    /// The `ask` operators waiting for an answer.
    pub(crate) waiting: Vec<WaitingView>,
    /// Per connection holding a token, the start of its value's JSON text (at most 512
    /// bytes; an ellipsis ends a text that was cut).
    pub(crate) values: Ordered<String>,
    /// The end state in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) end_detail: Option<String>,
    /// Steps a forward step would replay.
    pub(crate) redo: usize,
    /// Branches of the history.
    pub(crate) branches: usize,
    /// The served text is a valid net.
    pub(crate) valid: bool,
    /// A run is in progress (the page shows Pause).
    pub(crate) running: bool,
    /// A step or another change is under way in the engine (a slow firing, say): the rest of
    /// the state is from before it.
    pub(crate) busy: bool,
    /// The operators whose firing is under way.
    pub(crate) firing: Vec<String>,
    /// There is an engine (a valid version of the net was loaded).
    pub(crate) engine: bool,
    /// The id of the journaled run (`serve --journal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_id: Option<String>,
    /// What the engine's run spent on models (its meter: inner runs and a firing its budget
    /// stopped included, docs/semantics.md §4.7); absent before its first model request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Spent>,
    /// The run's budget (`config: budget:`), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) budget: Option<Budget>,
    /// When the state left the server, in ms since the Unix epoch (set on the event stream,
    /// for the page's event-to-screen latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sent_ms: Option<u64>,
}

/// An `ask` operator waiting for its answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct WaitingView {
    /// The operator.
    pub(crate) op: String,
    /// Its question.
    pub(crate) prompt: String,
    /// The type of the answer.
    #[serde(rename = "type")]
    pub(crate) ty: &'static str,
    /// What the operator shows, if anything (its input's value).
    pub(crate) context: Option<String>,
}

/// `GET /api/history`.
#[derive(Debug, Serialize)]
pub(crate) struct HistoryView {
    /// The last applied entries, oldest first.
    pub(crate) entries: Vec<EntryView>,
    /// What forward steps would replay, next first.
    pub(crate) redo: Vec<EntryView>,
    /// The branches of the history.
    pub(crate) branches: Vec<BranchView>,
    /// The depth of the current path.
    pub(crate) depth: usize,
}

/// One step of the history: its number and the operators that fired in it; with `--nats`,
/// per operator the satellite it ran on (`null`: in the server's process).
#[derive(Debug, Serialize)]
pub(crate) struct EntryView {
    pub(crate) step: u32,
    pub(crate) ops: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ran_on: Vec<Option<String>>,
}

/// A branch of the history (`POST /api/goto {"branch": index}` switches to it).
#[derive(Debug, Serialize)]
pub(crate) struct BranchView {
    pub(crate) index: usize,
    pub(crate) depth: usize,
    pub(crate) current: bool,
}

/// A problem of a `.cm` text, located.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ProblemView {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
    pub(crate) hint: Option<String>,
    /// The problem's kind (`unknown_port`, …).
    pub(crate) code: &'static str,
}

impl ProblemView {
    /// Every problem of `e`.
    pub(crate) fn all(e: &CmError) -> Vec<ProblemView> {
        e.problems()
            .iter()
            .map(|p| ProblemView {
                line: p.line,
                column: p.column,
                message: p.message.clone(),
                hint: p.hint.clone(),
                code: p.kind.as_str(),
            })
            .collect()
    }
}

/// `GET /api/source`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct SourceView {
    pub(crate) file: String,
    pub(crate) text: String,
    pub(crate) problems: Vec<ProblemView>,
}

/// `POST /api/check`.
#[derive(Debug, Serialize)]
pub(crate) struct CheckView {
    pub(crate) valid: bool,
    pub(crate) problems: Vec<ProblemView>,
}

/// `POST /api/save`, when saved.
#[derive(Debug, Serialize)]
pub(crate) struct SavedView {
    /// Always `true`.
    pub(crate) saved: bool,
    /// The canonical text written.
    pub(crate) text: String,
    /// The state of the new engine.
    pub(crate) state: std::sync::Arc<StateView>,
}

/// The body of every error.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorView {
    pub(crate) error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) problems: Option<Vec<ProblemView>>,
}

/// The event that stands for the engine events a flush left out.
#[derive(Debug, Serialize)]
pub(crate) struct CoalescedView {
    /// Always `coalesced`.
    pub(crate) event: &'static str,
    pub(crate) skipped: usize,
}

/// The start of `v`'s compact JSON text, at most `max` bytes, with an ellipsis when cut.
pub(crate) fn shortened(v: &Value, max: usize) -> String {
    let p = v.preview(max, false);
    if p.truncated { p.text + "…" } else { p.text }
}

/// A value as the Outputs panel and the inspector show it: its type and the start of its
/// pretty JSON text.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ValueView {
    #[serde(rename = "type")]
    pub(crate) ty: &'static str,
    /// At most [`SHOW_BYTES`](ValueView::SHOW_BYTES) of pretty JSON.
    pub(crate) json: String,
    /// The JSON goes on past `json`.
    pub(crate) truncated: bool,
    /// The length of a `Binary` (bytes) or a `DataString` (characters are not counted: bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bytes: Option<usize>,
}

impl ValueView {
    /// Most bytes of JSON text shown of one value.
    pub(crate) const SHOW_BYTES: usize = 16 * 1024;

    /// `v`, previewed.
    pub(crate) fn of(v: &Value) -> ValueView {
        let Preview { text, truncated } = v.preview(Self::SHOW_BYTES, true);
        let bytes = v
            .downcast_ref::<Binary>()
            .map(|b| b.0.len())
            .or_else(|| v.downcast_ref::<DataString>().map(|s| s.0.len()));
        ValueView {
            ty: v.type_name(),
            json: text,
            truncated,
            bytes,
        }
    }
}

/// A text cut at a bound (a message to a model, its answer).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct TextView {
    pub(crate) text: String,
    /// The text goes on past `text`.
    pub(crate) truncated: bool,
}

impl TextView {
    /// The first `max` bytes of `s`, cut at a character boundary.
    pub(crate) fn cut(s: &str, max: usize) -> TextView {
        if s.len() <= max {
            return TextView {
                text: s.to_owned(),
                truncated: false,
            };
        }
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        TextView {
            text: s[..end].to_owned(),
            truncated: true,
        }
    }

    /// The start of the JSON text of `v`.
    pub(crate) fn json(v: &impl Serialize, max: usize) -> TextView {
        let Preview { text, truncated } = Preview::of(v, max, true);
        TextView { text, truncated }
    }
}

/// `GET /api/outputs`: what every sink received, and the tokens the run used.
#[derive(Debug, Serialize)]
pub(crate) struct OutputsView {
    /// The state's version these outputs are of.
    pub(crate) version: u64,
    /// The sinks (operators without outputs), in the net's order.
    pub(crate) sinks: Vec<SinkView>,
    /// Tokens used by the firings of the current path that reported usage (`null`: none did).
    pub(crate) usage: Option<UsageView>,
}

/// One sink and the last values it received.
#[derive(Debug, Serialize)]
pub(crate) struct SinkView {
    pub(crate) op: String,
    /// Its label (the `.cm` `label:`, else the operator type's).
    pub(crate) label: String,
    /// How many values it received along the current path.
    pub(crate) count: usize,
    /// The last of them (at most 20), oldest first.
    pub(crate) values: Vec<ValueView>,
}

/// Tokens used.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct UsageView {
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
    /// The firings that reported it.
    pub(crate) firings: usize,
}

impl UsageView {
    /// Adds a firing's usage.
    pub(crate) fn add(&mut self, u: Usage) {
        self.prompt_tokens += u.prompt_tokens;
        self.completion_tokens += u.completion_tokens;
        self.firings += 1;
    }
}

/// `GET /api/inspect?conn=NAME` or `?op=NAME`: one connection or one operator, now.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum InspectView {
    /// A connection, its state and its token's value.
    Connection(PortView),
    /// An operator: its ports' connections, how often it fired, and what its last firing asked
    /// models and tools.
    Operator(OperatorView),
}

/// A connection as the inspector shows it.
#[derive(Debug, Serialize)]
pub(crate) struct PortView {
    /// `a.out -> b.in`.
    pub(crate) conn: String,
    /// The port of the inspected operator it is on (an operator's view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) port: Option<String>,
    /// The connection's data type.
    #[serde(rename = "type")]
    pub(crate) ty: &'static str,
    /// `EMPTY`, `NEW` or `OLD`.
    pub(crate) state: &'static str,
    /// Its token's value.
    pub(crate) value: Option<ValueView>,
}

/// An operator as the inspector shows it.
#[derive(Debug, Serialize)]
pub(crate) struct OperatorView {
    pub(crate) op: String,
    /// Its operator type (`llm`).
    #[serde(rename = "type")]
    pub(crate) ty: String,
    pub(crate) label: String,
    pub(crate) inputs: Vec<PortView>,
    pub(crate) outputs: Vec<PortView>,
    /// Firings along the current path.
    pub(crate) fired: u32,
    /// Its last firing on the current path that called a model or a tool.
    pub(crate) last_call: Option<CallsView>,
}

/// What one firing asked models and tools, from the history.
#[derive(Debug, Serialize)]
pub(crate) struct CallsView {
    /// The step it fired in.
    pub(crate) step: u32,
    pub(crate) calls: Vec<CallView>,
    /// Tokens the firing used.
    pub(crate) usage: Option<Usage>,
}

/// One call of a firing, bounded.
#[derive(Debug, Serialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub(crate) enum CallView {
    /// A chat model: the prompt (its messages and context passages) and the answer.
    Chat {
        model: String,
        kind: String,
        /// The model only quotes its context (not generative).
        quoted: bool,
        messages: Vec<MessageView>,
        context: Vec<TextView>,
        answer: TextView,
        /// Tools the model asked for, by name.
        tool_calls: Vec<String>,
        usage: Option<Usage>,
    },
    /// An embedder.
    Embed {
        model: String,
        kind: String,
        texts: usize,
        dim: usize,
        usage: Option<Usage>,
    },
    /// A memory search.
    Search {
        memory: String,
        k: usize,
        /// `[id, similarity]`, best first.
        hits: Vec<(String, f32)>,
    },
    /// A tool, through the gate.
    Tool {
        tool: String,
        args: TextView,
        status: String,
        result: TextView,
        /// A net run as a tool: `{"net","end","steps","firings"}` of its inner run (its whole
        /// history stays in the record, docs/tools.md#nets-as-tools).
        #[serde(skip_serializing_if = "Option::is_none")]
        ran: Option<serde_json::Value>,
    },
}

/// One message of a prompt.
#[derive(Debug, Serialize)]
pub(crate) struct MessageView {
    pub(crate) role: String,
    pub(crate) content: TextView,
}

/// A JSON object whose keys keep their order (the net's order of connections).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ordered<V>(pub(crate) Vec<(String, V)>);

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}
