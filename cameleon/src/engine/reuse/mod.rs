//! Reuse across runs (docs/semantics.md §5.9): before a behavioral operator is called, its
//! firing's **key** — operator type, params, which outputs are connected, internal state
//! before, input values (as the journal writes them, hashed) and, for an operator that names models,
//! embedders, memories or tools, those providers' identity — is looked up in a
//! [`ReuseSource`] (a journal of earlier runs). On a hit the recorded emissions and state after
//! are applied **without calling the operator** (its `replay` re-installs the state, so a
//! reused `index` puts its documents back in the memory, as a resumed run does); on a miss the
//! operator runs as usual. The engine calls [`reused`] from one place: the firing routine,
//! where a firing would call its operator.
//!
//! The same key is what a journal records for each committed firing
//! (`CommittedFiring::reuse_key`, with a [`KeyCache`]), so a later run can find it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value as Json;
use xxhash_rust::xxh3::Xxh3;

use super::Cvm;
use super::attempt::{Emissions, FiringCx, FiringOutcome as Outcome};
use crate::connection::{NONE, Token};
use crate::history::{ReusedFrom, TokenRecord};
use crate::operator::capability::{
    Capabilities, Effect, Named, OpEffects, capability_params, operator_effects,
};
use crate::operator::{OpError, OpSpec, OpState, Operator};
use crate::policy::Family;
use crate::types::type_by_name;

mod committed;
pub use committed::KeyCache;

/// A firing's key: 128 bits of XXH3 over its canonical description.
pub type FiringKey = u128;

/// A recorded firing found for a key.
#[derive(Clone, Debug)]
pub struct RecordedFiring {
    /// Where it was recorded.
    pub from: ReusedFrom,
    /// What it emitted, in emission order: the output port (index in the operator type's
    /// outputs) and the value's record.
    pub emitted: Vec<(u16, TokenRecord)>,
    /// Its operator's state after the firing (serde form), if it had one.
    pub after: Option<Json>,
}

/// Where recorded firings are looked up by key (a journal: `cameleon::journal::ReuseJournal`).
pub trait ReuseSource: Send + Sync {
    /// The recorded firing with this key, if any. `Err`: the source could not be read (the
    /// firing then runs live, and the error is reported once).
    fn find(&self, key: FiringKey) -> Result<Option<RecordedFiring>, String>;
}

/// An operator type that declares its firings must not be reused (`delay`: its point is to
/// take time), submitted with [`inventory`]: `cameleon::submit_not_reusable!("my_type")`. A
/// hand-written operator may instead answer `false` from [`Operator::reusable`].
#[derive(Clone, Copy, Debug)]
pub struct NotReusable {
    /// The operator type's catalogue id.
    pub op_type: &'static str,
}

inventory::collect!(NotReusable);

/// Declares that the firings of operator type `$id` are never reused (see [`NotReusable`]).
#[macro_export]
macro_rules! submit_not_reusable {
    ($id:expr) => {
        $crate::__private::inventory::submit! { $crate::engine::NotReusable { op_type: $id } }
    };
}

fn declared_not_reusable(op_type: &str) -> bool {
    inventory::iter::<NotReusable>
        .into_iter()
        .any(|n| n.op_type == op_type)
}

/// What an operator's key starts with, the same for all its firings in a run.
#[derive(Clone, Debug)]
pub(super) struct Fixed {
    /// Hash of type, params, connected outputs and provider identities.
    hash: FiringKey,
    /// What the operator would call (`model `default``), for a required reuse's miss.
    calls: Vec<String>,
    /// The memories it names: what they hold at the firing is part of its key.
    memories: Vec<String>,
}

/// Reuse installed on an engine ([`Cvm::set_reuse`]).
pub struct Reuse {
    /// Where recorded firings are looked up (`None`: keys are only computed, for a journal).
    source: Option<Arc<dyn ReuseSource>>,
    /// A miss on a firing that would call a model, an embedder or a tool fails it (`cameleon
    /// test`).
    required: bool,
    /// Per operator: its fixed part (`None`: not reusable), computed on first use.
    fixed: Mutex<Vec<Option<Option<Fixed>>>>,
    hits: AtomicU64,
    /// The first error of the source, reported once.
    error: Mutex<Option<String>>,
}

impl std::fmt::Debug for Reuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reuse")
            .field("required", &self.required)
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Reuse {
    /// Reuse from `source`; `required`: a firing that would call a model, an embedder or a
    /// tool and finds no recorded firing fails instead of calling it.
    pub fn new(source: Arc<dyn ReuseSource>, required: bool) -> Self {
        Reuse {
            source: Some(source),
            required,
            fixed: Mutex::new(Vec::new()),
            hits: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    /// Keys without a source: what a journaled run needs of its firings that name a memory,
    /// whose key holds what the memory held before the firing.
    fn keying() -> Self {
        Reuse {
            source: None,
            required: false,
            fixed: Mutex::new(Vec::new()),
            hits: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    /// Whether recorded firings are looked up (else keys are only computed).
    pub fn looks_up(&self) -> bool {
        self.source.is_some()
    }

    /// Firings reused so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// The source's first read error, if any.
    pub fn error(&self) -> Option<String> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn fixed_of(
        &self,
        o: usize,
        op: &dyn Operator,
        spec: &OpSpec,
        connected: u64,
        caps: &dyn Capabilities,
    ) -> Option<Fixed> {
        let mut all = self.fixed.lock().unwrap_or_else(PoisonError::into_inner);
        if all.len() <= o {
            all.resize(o + 1, None);
        }
        all[o]
            .get_or_insert_with(|| fixed(op, spec, connected, caps))
            .clone()
    }
}

/// Whether operator `op` may be reused, and the fixed part of its key. Behavioral operators
/// are, unless they say otherwise ([`Operator::reusable`], [`NotReusable`]), ask a question
/// (`ask`, a tool under `approve:`), have effects of their own (a file reader: what it reads is
/// not in its key), or call a tool with `write` or `external` effects; every capability they
/// name must resolve.
pub(super) fn fixed(
    op: &dyn Operator,
    spec: &OpSpec,
    connected: u64,
    caps: &dyn Capabilities,
) -> Option<Fixed> {
    if spec.family != Family::Behavioral
        || !op.reusable()
        || op.question().is_some()
        || declared_not_reusable(&spec.type_id)
    {
        return None;
    }
    // What a file reader reads, or an operator with effects does, is not in its key.
    if let OpEffects::Fixed(e) = operator_effects(&spec.type_id)
        && e != Effect::None
    {
        return None;
    }
    let params = op.params();
    let mut providers = Vec::new();
    let mut calls = Vec::new();
    let mut memories = Vec::new();
    let mut tool_names: Vec<String> = op.calls_tool().map(str::to_owned).into_iter().collect();
    for p in capability_params().filter(|p| p.op_type == spec.type_id) {
        let names: Vec<String> = match params.get(p.param) {
            Some(Json::String(s)) => vec![s.clone()],
            Some(Json::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => vec!["default".to_owned()],
        };
        for name in names {
            let identity = match p.names {
                Named::Chat => {
                    calls.push(format!("model `{name}`"));
                    caps.chat(&name).ok()?.identity()
                }
                Named::Embedder => {
                    calls.push(format!("embedder `{name}`"));
                    caps.embedder(&name).ok()?.identity()
                }
                Named::Memory => {
                    let m = caps.memory(&name).ok()?;
                    memories.push(name.clone());
                    serde_json::json!({"kind": m.kind()})
                }
                Named::Tool => {
                    tool_names.push(name);
                    continue;
                }
            };
            providers.push(serde_json::json!([p.param, name, identity]));
        }
    }
    for name in tool_names {
        let m = caps.tools().manifest(&name)?;
        if matches!(m.effects, Effect::Write | Effect::External) && !m.idempotent {
            return None;
        }
        calls.push(format!("tool `{name}`"));
        providers.push(serde_json::json!(["tool", name, m]));
    }
    let described = serde_json::json!({
        "type": spec.type_id,
        "params": Json::Object(params),
        "connected": connected,
        "providers": providers,
    });
    let mut h = Xxh3::new();
    let mut buf = Vec::with_capacity(256);
    canonical(&described, &mut buf);
    h.update(&buf);
    Some(Fixed {
        hash: h.digest128(),
        calls,
        memories,
    })
}

/// The key of a firing: its operator's fixed part, what the memories it names hold (their
/// number of items and, when the memory tells, a fingerprint of their content), its state
/// before and its input values. The state and the values enter as the journal writes them
/// (their serde JSON, docs/semantics.md §5.9): a journal hashes the bytes it has just encoded
/// (a value's digest is kept from the step that emitted it) and serialises nothing more.
pub(super) fn key(
    fixed: &Fixed,
    before: Option<&[u8]>,
    inputs: impl Iterator<Item = Option<u128>>,
    caps: &dyn Capabilities,
) -> Option<FiringKey> {
    let mut h = Xxh3::new();
    h.update(&fixed.hash.to_le_bytes());
    for name in &fixed.memories {
        let m = caps.memory(name).ok()?;
        h.update(&(m.len() as u64).to_le_bytes());
        h.update(&m.fingerprint().unwrap_or_default().to_le_bytes());
    }
    match before {
        Some(s) => {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s);
        }
        None => h.update(b"-"),
    }
    for d in inputs {
        match d {
            Some(d) => {
                h.update(b"I");
                h.update(&d.to_le_bytes());
            }
            None => h.update(b"_"),
        }
    }
    Some(h.digest128())
}

/// A value's digest in a key: its data type's name and its JSON as the journal writes it.
fn value_digest(type_name: &str, json: &[u8]) -> u128 {
    let mut h = Xxh3::new();
    h.update(type_name.as_bytes());
    h.update(b":");
    h.update(json);
    h.digest128()
}

/// The JSON of a state as the journal writes it (`before`, `after` of a firing's record).
fn write_state(s: &OpState, out: &mut Vec<u8>) -> Result<(), String> {
    let json = s.to_json().map_err(|e| e.to_string())?;
    serde_json::to_writer(out, &json).map_err(|e| e.to_string())
}

/// The key of a firing about to run (the hook's): its state and input values serialised here.
fn live_key<'t>(
    fixed: &Fixed,
    before: Option<&OpState>,
    inputs: impl Iterator<Item = Option<&'t Token>>,
    caps: &dyn Capabilities,
) -> Option<FiringKey> {
    let mut state = Vec::new();
    if let Some(s) = before {
        write_state(s, &mut state).ok()?;
    }
    let mut buf = Vec::with_capacity(64);
    let mut digests = Vec::with_capacity(4);
    for t in inputs {
        digests.push(match t {
            Some(t) => {
                buf.clear();
                t.value.write_json(&mut buf).ok()?;
                Some(value_digest(t.type_name(), &buf))
            }
            None => None,
        });
    }
    let before = before.map(|_| &state[..]);
    key(fixed, before, digests.into_iter(), caps)
}

/// JSON with every object's keys sorted: one text per value, whatever the order it was built
/// in.
fn canonical(v: &Json, out: &mut Vec<u8>) {
    match v {
        Json::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, k);
                out.push(b':');
                canonical(&m[k], out);
            }
            out.push(b'}');
        }
        Json::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// The reuse hook of the firing routine: when the firing's operator may be reused, computes
/// its key and, when the engine reuses from a source, looks it up. A hit applies the recorded
/// firing — its state after through the operator's `replay`, its emissions into `emitted` —
/// and returns its outcome (`Ok(Some)`); a miss returns `Err(key)`: the operator runs, and the
/// key goes with its outcome to the history — except under a required reuse, where a firing
/// that would call a model, an embedder or a tool fails, naming it.
pub(super) fn reused(
    slot: &mut Box<dyn Operator>,
    spec: &OpSpec,
    cx: &FiringCx<'_>,
    emitted: &mut Emissions,
) -> Result<Option<Outcome>, Option<FiringKey>> {
    let sh = cx.shared;
    let Some(reuse) = sh.reuse else {
        return Err(None);
    };
    let connected = sh.topo.out_connected[cx.o];
    let Some(fixed) = reuse.fixed_of(cx.o, &**slot, spec, connected, &**sh.caps) else {
        return Err(None);
    };
    let before = slot.save_state();
    let inputs = sh
        .plan
        .inputs(cx.j)
        .iter()
        .map(|s| token(sh.tokens, s.token));
    let key = live_key(&fixed, before.as_ref(), inputs, &**sh.caps);
    let Some(source) = &reuse.source else {
        return Err(key);
    };
    let found = key.and_then(|k| match source.find(k) {
        Ok(f) => f,
        Err(e) => {
            let mut first = reuse.error.lock().unwrap_or_else(PoisonError::into_inner);
            first.get_or_insert(e);
            None
        }
    });
    let applied = found.and_then(|f| apply(slot, spec, cx, before.as_ref(), f, emitted));
    match applied {
        Some(mut out) => {
            reuse.hits.fetch_add(1, Ordering::Relaxed);
            out.key = key;
            Ok(Some(out))
        }
        None if reuse.required && !fixed.calls.is_empty() => Ok(Some(Outcome {
            result: Err(OpError::new(format!(
                "`{}` would call {}: no recorded answer for these inputs",
                cx.name,
                fixed.calls.join(", ")
            ))),
            attempts: 1,
            elapsed: std::time::Duration::ZERO,
            reused: None,
            key: None,
        })),
        None => Err(key),
    }
}

fn token(tokens: &[Token], t: u32) -> Option<&Token> {
    if t == NONE {
        None
    } else {
        tokens.get(t as usize)
    }
}

/// Applies recorded firing `f` to the operator in `slot`; `None` (nothing changed) when the
/// record does not fit this program (a data type it lacks, a value or state that does not read
/// back, an emission its ports refuse): the firing then runs live.
fn apply(
    slot: &mut Box<dyn Operator>,
    spec: &OpSpec,
    cx: &FiringCx<'_>,
    before: Option<&OpState>,
    f: RecordedFiring,
    emitted: &mut Emissions,
) -> Option<Outcome> {
    let mut values = Vec::with_capacity(f.emitted.len());
    for (port, t) in f.emitted {
        let info = type_by_name(&t.ty)?;
        let value = (info.from_json)(t.value).ok()?;
        if (port as usize) >= spec.outputs.len() {
            return None;
        }
        values.push((port, value));
    }
    let after = match f.after {
        Some(json) => Some(crate::operator::read_state(&**slot, json).ok()?),
        None => None,
    };
    super::attempt::check_emissions(&values, cx.shared.topo, cx.o, spec).ok()?;
    if before.is_some() && after.is_none() {
        return None;
    }
    let op = &mut **slot;
    crate::operator::capability::applying(cx.shared.caps, || op.replay(after.as_ref(), &values));
    emitted.clear();
    emitted.extend(values);
    Some(Outcome {
        result: Ok(()),
        attempts: 1,
        elapsed: std::time::Duration::ZERO,
        reused: Some(f.from),
        key: None,
    })
}

impl Cvm {
    /// Reuses recorded firings from `reuse` (see the module): from now on each firing of a
    /// reusable behavioral operator is looked up first. `None` removes it.
    pub fn set_reuse(&mut self, reuse: Option<Arc<Reuse>>) {
        self.context.reuse = reuse;
        self.update_keying();
    }

    /// The reuse installed, if any.
    pub fn reuse(&self) -> Option<&Arc<Reuse>> {
        self.context.reuse.as_ref().filter(|r| r.looks_up())
    }

    /// Keeps reuse and keys in step with the recorder: a journaled run computes the key of a
    /// firing that names a memory before the firing (what the memory held then is part of it);
    /// a looked-up firing goes through the firing routine's future (the hook's one call site).
    pub(super) fn update_keying(&mut self) {
        let looks_up = self.context.reuse.as_ref().is_some_and(|r| r.looks_up());
        if !looks_up {
            self.context.reuse = self
                .context
                .recorder
                .is_some()
                .then(|| Arc::new(Reuse::keying()));
        }
        let reuse = self.context.reuse.is_some();
        let net = &self.net;
        self.operators.guard(|o| {
            let node = &net.ops[o];
            node.spec.family == Family::Behavioral
                && reuse
                && (looks_up || names_memory(&node.spec.type_id))
        });
    }

    /// How many firings of the applied path were reused from a recorded run.
    pub fn reused_firings(&self) -> usize {
        self.history
            .path
            .iter()
            .flat_map(|&n| self.history.firing_range(n))
            .filter(|&f| self.history.reused_of(f).is_some())
            .count()
    }
}

fn names_memory(op_type: &str) -> bool {
    capability_params().any(|p| p.op_type == op_type && p.names == Named::Memory)
}

/// Keeps what the hook learnt of a committed firing in the history: where it was reused from,
/// and its key (computed before the firing). Called as the firing is applied, before its
/// record is added.
#[inline]
pub(super) fn keep(history: &mut crate::history::HistoryTree, out: &mut Outcome) {
    let firing = history.firings.len() as u32;
    if let Some(from) = out.reused.take() {
        history.reused.push((firing, from));
    }
    if let Some(k) = out.key {
        history.keys.push((firing, k));
    }
}
