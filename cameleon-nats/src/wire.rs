//! The wire contract between a run and its satellites: subjects, the JSON of requests and
//! replies, the version header. docs/wire.md describes the same for a satellite written in
//! another language.

use cameleon::connection::ConnState;
use cameleon::operator::capability::ToolManifest;
use cameleon::types::TypedValue;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// The version of this contract. Every request and reply carries it (field `v`, header
/// [`VERSION_HEADER`]); a satellite answers a request of another version with an error of kind
/// `version`, and a run refuses a reply of another version.
pub const WIRE_VERSION: u32 = 1;

/// The header naming the wire version of a request or a reply.
pub const VERSION_HEADER: &str = "Cameleon-Wire";

/// The header carrying a request's idempotency key (also in the JSON body), so a NATS tool can
/// show it.
pub const KEY_HEADER: &str = "Cameleon-Key";

/// The header of a request asking to be acknowledged: value `1`, every call the satellite
/// takes; value [`ACK_HELD`], only a call it holds (one it does not answer at once). A caller
/// that only reads one answer (a plain NATS request) leaves it out and gets the reply alone.
pub const WANT_ACK_HEADER: &str = "Cameleon-Want-Ack";

/// The [`WANT_ACK_HEADER`] value of a run: acknowledge a call you hold; a call you answer at
/// once gets its reply alone (it names the satellite). A satellite that does not know the
/// value acknowledges every call, which a run reads as well.
pub const ACK_HELD: &str = "held";

/// The header of a satellite's acknowledgement: its name. A satellite that takes a call whose
/// request has [`WANT_ACK_HEADER`] first sends an empty message with this header (and
/// [`HEARTBEAT_HEADER`]) to the call's reply subject, then the reply; the run then knows who
/// holds the call.
pub const ACK_HEADER: &str = "Cameleon-Ack";

/// The header of an acknowledgement giving the satellite's heartbeat period, in milliseconds.
pub const HEARTBEAT_HEADER: &str = "Cameleon-Heartbeat-Ms";

/// The headers above as names for the calls' lookups and inserts: built once, where a `&str`
/// is checked and copied at every use.
pub(crate) mod names {
    use async_nats::HeaderName;

    pub(crate) const VERSION: HeaderName = HeaderName::from_static(super::VERSION_HEADER);
    pub(crate) const KEY: HeaderName = HeaderName::from_static(super::KEY_HEADER);
    pub(crate) const WANT_ACK: HeaderName = HeaderName::from_static(super::WANT_ACK_HEADER);
    pub(crate) const ACK: HeaderName = HeaderName::from_static(super::ACK_HEADER);
    pub(crate) const HEARTBEAT: HeaderName = HeaderName::from_static(super::HEARTBEAT_HEADER);
}

/// The default subject prefix.
pub const DEFAULT_PREFIX: &str = "cameleon";

/// The NATS service name every satellite registers under (services API: `$SRV.INFO.<name>`).
pub const SERVICE_NAME: &str = "cameleon-satellite";

/// The subjects under one prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subjects {
    prefix: String,
}

impl Subjects {
    /// The subjects under `prefix` (`cameleon` by default).
    pub fn new(prefix: impl Into<String>) -> Self {
        Subjects {
            prefix: prefix.into(),
        }
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Where firings of operator type `ty` are requested: `<prefix>.op.<type>`.
    pub fn op(&self, ty: &str) -> String {
        format!("{}.op.{ty}", self.prefix)
    }

    /// Where calls of tool `name` are requested: `<prefix>.tool.<name>`.
    pub fn tool(&self, name: &str) -> String {
        format!("{}.tool.{name}", self.prefix)
    }

    /// Where satellite `name` publishes its heartbeats: `<prefix>.heartbeat.<name>`.
    pub fn heartbeat(&self, name: &str) -> String {
        format!("{}.heartbeat.{name}", self.prefix)
    }

    /// Every satellite's heartbeats: `<prefix>.heartbeat.*`.
    pub fn heartbeats(&self) -> String {
        format!("{}.heartbeat.*", self.prefix)
    }

    /// Where a run asks every satellite for its heartbeat at once: `<prefix>.discover`.
    pub fn discover(&self) -> String {
        format!("{}.discover", self.prefix)
    }

    /// The queue group of the prefix's satellites (load spreads over its members).
    pub fn queue_group(&self) -> String {
        format!("{}-satellites", self.prefix)
    }

    /// Satellite `name`'s own subject for firings of operator type `ty`, outside the queue
    /// group: `<prefix>.sat.<name>.op.<type>`.
    pub fn direct_op(&self, name: &str, ty: &str) -> String {
        format!("{}.sat.{name}.op.{ty}", self.prefix)
    }

    /// Satellite `name`'s own subject for calls of tool `tool`: `<prefix>.sat.<name>.tool.<tool>`.
    pub fn direct_tool(&self, name: &str, tool: &str) -> String {
        format!("{}.sat.{name}.tool.{tool}", self.prefix)
    }

    /// Where a starting satellite `name` publishes its readiness probe, a subject nobody
    /// subscribes to: `<prefix>.heartbeat.<name>.ready` (docs/wire.md, "Ready").
    pub fn ready_probe(&self, name: &str) -> String {
        format!("{}.heartbeat.{name}.ready", self.prefix)
    }

    /// The reply subject of satellite `name`'s readiness probe, under its own subjects:
    /// `<prefix>.sat.<name>.ready`.
    pub fn ready_reply(&self, name: &str) -> String {
        format!("{}.sat.{name}.ready", self.prefix)
    }
}

/// Whether `s` can be a token of a NATS subject: not empty; no whitespace, `.`, `*` or `>`.
pub fn is_subject_token(s: &str) -> bool {
    !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '.' | '*' | '>'))
}

/// One input of a firing: its state and, when it has one, its value with its data type.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireInput {
    /// `empty`, `new` or `old`.
    pub state: WireState,
    /// `{"type": "DataString", "value": …}`; absent when the input has no value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<TypedValue>,
}

/// A connection state on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireState {
    /// EMPTY.
    Empty,
    /// NEW.
    New,
    /// OLD.
    Old,
}

impl From<ConnState> for WireState {
    fn from(s: ConnState) -> Self {
        match s {
            ConnState::Empty => WireState::Empty,
            ConnState::New => WireState::New,
            ConnState::Old => WireState::Old,
        }
    }
}

impl From<WireState> for ConnState {
    fn from(s: WireState) -> Self {
        match s {
            WireState::Empty => ConnState::Empty,
            WireState::New => ConnState::New,
            WireState::Old => ConnState::Old,
        }
    }
}

/// A net's tool policy, sent with a firing so the operator's tool calls on the satellite obey
/// it (`null`: every tool denied).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WirePolicy {
    /// Tools that run when called.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tools that need a person's approval (a satellite has nobody to ask: denied there).
    #[serde(default)]
    pub approve: Vec<String>,
}

/// A firing to run on a satellite (subject [`Subjects::op`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpRequest {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The run's id.
    pub run: String,
    /// The branch of the history the firing extends.
    pub branch: u32,
    /// The logical step (1-based).
    pub step: u32,
    /// The instance name.
    pub instance: String,
    /// `{run}/{branch}/{step}/{instance}`: the same for every attempt of this firing.
    pub key: String,
    /// The operator type (its catalogue id).
    #[serde(rename = "type")]
    pub ty: String,
    /// The instance's parameters, as `.cm` writes them.
    pub params: serde_json::Map<String, Json>,
    /// Per input port, in port order.
    pub inputs: Vec<WireInput>,
    /// Per output port, whether it has a connection.
    pub outputs: Vec<bool>,
    /// Whether the run is in parallel mode.
    #[serde(default)]
    pub parallel: bool,
    /// The operator's internal state before the firing (its serde form), if it has one.
    #[serde(default)]
    pub state: Option<Json>,
    /// The net's tool policy.
    #[serde(default)]
    pub tools: Option<WirePolicy>,
}

/// One emission: output port index and typed value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireEmission {
    /// The output port's index.
    pub port: u16,
    /// The value with its data type.
    pub value: TypedValue,
}

/// Why a satellite did not produce emissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The operator (or tool) ran and failed, or panicked: the firing's failure, retried as
    /// the instance's `retry:` says.
    Failed,
    /// The satellite does not host this operator type or tool.
    Unknown,
    /// The request could not be read (bad JSON, unknown data type, bad state, bad params).
    BadRequest,
    /// The request's wire version is not the satellite's.
    Version,
    /// The satellite runs as many calls as it may (`--concurrency`): it took nothing. Not a
    /// failure of the call: the run sends it again, to whichever satellite is free.
    Busy,
    /// The call ran past the satellite's ceiling (`--max-call-ms`) and was abandoned.
    Timeout,
    /// A kind this program does not know (a newer satellite's): a failure.
    #[serde(other)]
    Other,
}

/// A satellite's answer to an [`OpRequest`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpReply {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The satellite that answered.
    pub satellite: String,
    /// Whether the firing succeeded.
    pub ok: bool,
    /// The emissions, in emission order (empty on error).
    #[serde(default)]
    pub emitted: Vec<WireEmission>,
    /// The internal state after the firing, if the operator has one.
    #[serde(default)]
    pub state: Option<Json>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// What kind of failure.
    #[serde(default)]
    pub kind: Option<ErrorKind>,
    /// Whether the answer came from the satellite's idempotency cache (the firing had already
    /// run with this key).
    #[serde(default)]
    pub cached: bool,
}

impl OpReply {
    /// A failure reply.
    pub fn failed(satellite: &str, kind: ErrorKind, error: impl Into<String>) -> Self {
        OpReply {
            v: WIRE_VERSION,
            satellite: satellite.to_owned(),
            ok: false,
            emitted: Vec::new(),
            state: None,
            error: Some(error.into()),
            kind: Some(kind),
            cached: false,
        }
    }
}

/// A tool call for a satellite (subject [`Subjects::tool`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolRequest {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The tool.
    pub tool: String,
    /// Its arguments (already checked against its schema by the caller's gate; checked again).
    pub args: Json,
    /// Who asks.
    #[serde(default)]
    pub principal: Option<String>,
    /// The call's idempotency key, if any: a retried call with the same key does not run twice.
    #[serde(default)]
    pub key: Option<String>,
    /// Who approved the call at the run, when it needed a person's approval (a tool under the
    /// net's `approve:`): a satellite runs the tools it was told need one (`--approve`) only
    /// with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
}

/// A satellite's answer to a [`ToolRequest`]: the tool gate's result on the satellite.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolReply {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The satellite that answered.
    pub satellite: String,
    /// The `ToolResult` (`{status, content, error, meta}`), `meta.origin` being
    /// `satellite:<name>`.
    pub result: cameleon::tools::ToolResult,
    /// Whether the answer came from the idempotency cache.
    #[serde(default)]
    pub cached: bool,
    /// When the satellite did not run the tool for a reason of its own (`busy`, `bad_request`,
    /// `unknown`, `version`, `timeout`): which. Absent when the tool ran (whatever its result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
}

/// A port of an operator type, on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WirePort {
    /// Its name (`in_data`, `out_data`).
    pub name: String,
    /// Its data type's name (`DataString`, `DataJSON`, `Any`), or a type variable `T0`…`T9`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether the operator fires without it connected.
    #[serde(default)]
    pub optional: bool,
}

/// What a run needs to know of an operator type to place an instance of it on a satellite
/// without linking it: its ports, firing policy, family, params (as a JSON Schema) and whether it
/// keeps an internal state. Sent in answers to `<prefix>.discover`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireOpType {
    /// The catalogue id (`.cm` `type:`).
    pub id: String,
    /// A human label.
    #[serde(default)]
    pub label: String,
    /// What it does.
    #[serde(default)]
    pub doc: String,
    /// `behavioral` (a remote type must be).
    pub family: cameleon::policy::Family,
    /// `any`, `all`, `any_no_guard` or `source`.
    pub policy: cameleon::policy::Policy,
    /// Input ports, in order.
    pub inputs: Vec<WirePort>,
    /// Output ports, in order.
    pub outputs: Vec<WirePort>,
    /// A JSON Schema of its `params:` object (`{}` or absent: any params).
    #[serde(default)]
    pub params: Json,
    /// Whether it keeps an internal state between firings (then every firing request carries
    /// the state its last reply gave, `null` before the first).
    #[serde(default)]
    pub stateful: bool,
}

/// What a satellite says of itself, every heartbeat (subject [`Subjects::heartbeat`]) and
/// when asked ([`Subjects::discover`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// [`WIRE_VERSION`].
    pub v: u32,
    /// The satellite's name.
    pub name: String,
    /// The operator types it hosts, sorted.
    pub ops: Vec<String>,
    /// The tools it hosts, sorted.
    pub tools: Vec<String>,
    /// Its heartbeat period: three missed ones and it is gone.
    pub heartbeat_ms: u64,
    /// How many calls it may run at once.
    pub concurrency: usize,
    /// How many it runs now.
    pub in_flight: usize,
    /// The manifests of its tools, with their effects: in answers to `<prefix>.discover` only
    /// (heartbeats stay small).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ToolManifest>,
    /// What a run needs to place each hosted operator type without linking it: in answers to
    /// `<prefix>.discover` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<WireOpType>,
}
