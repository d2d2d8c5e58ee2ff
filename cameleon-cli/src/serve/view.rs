//! What the page reads: every JSON shape the API answers with, in one file (docs/cli.md,
//! "serve", lists them). A change here is a change of the contract with `page.js`.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use cameleon::cm::CmError;

/// `GET /api/state`, the `state` event of the stream, and the answer of every POST that
/// changes the engine.
#[derive(Clone, Debug, Serialize)]
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
    /// Per connection holding a token, its value as JSON text (shortened).
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
    /// There is an engine (a valid version of the net was loaded).
    pub(crate) engine: bool,
    /// The id of the journaled run (`serve --journal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) run_id: Option<String>,
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
#[derive(Debug, Serialize)]
pub(crate) struct SourceView<'a> {
    pub(crate) file: String,
    pub(crate) text: &'a str,
    pub(crate) problems: &'a [ProblemView],
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
    pub(crate) state: StateView,
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
