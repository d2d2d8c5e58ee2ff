//! The firing context: what `run` reads and emits.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

#[cfg(doc)]
use super::Operator;
use super::capability::Capabilities;
use super::partial::{PartialSink, Partials};
use super::{InPort, InputHandle, OpError, OutPort};
use crate::connection::{ConnState, Token};
use crate::types::{DataType, Value};

/// A run's id (the first part of its firings' idempotency keys, docs/semantics.md §5.5): a
/// given text, or a UUID written out (hyphenated, lower case) the first time it is read — an
/// engine built for one `map` item after another reads its id only when an operator asks.
#[derive(Clone, Debug)]
pub(crate) struct RunId {
    uuid: u128,
    text: std::sync::OnceLock<Arc<str>>,
}

impl RunId {
    /// The id `text`.
    pub(crate) fn text(text: Arc<str>) -> Self {
        RunId {
            uuid: 0,
            text: std::sync::OnceLock::from(text),
        }
    }

    /// The id that is UUID `uuid`, written out when first read.
    pub(crate) fn uuid(uuid: u128) -> Self {
        RunId {
            uuid,
            text: std::sync::OnceLock::new(),
        }
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        self.text.get_or_init(|| {
            let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
            Arc::from(
                &*uuid::Uuid::from_u128(self.uuid)
                    .hyphenated()
                    .encode_lower(&mut buf),
            )
        })
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The untyped marker for [`Firing`] as the engine hands it to [`Operator::run`].
#[derive(Debug)]
pub enum Untyped {}

/// One input as a firing sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputSlot {
    pub(crate) state: ConnState,
    /// Token index in the engine's arena, or `u32::MAX` for none.
    pub(crate) token: u32,
}

/// What `run` works with: the inputs (value and state of each port) and the outputs it emits.
///
/// `O` is the operator type, for the typed accessors taking port handles
/// ([`get`](Self::get), [`emit`](Self::emit)); the engine passes `Firing<'_, Untyped>`, which
/// [`typed`](Self::typed) turns into the operator's own.
pub struct Firing<'a, O: ?Sized = Untyped> {
    pub(crate) tokens: &'a [Token],
    pub(crate) inputs: &'a [InputSlot],
    pub(crate) emitted: &'a mut Vec<(u16, Value)>,
    pub(crate) n_outputs: u16,
    pub(crate) step: u32,
    pub(crate) name: &'a str,
    pub(crate) run: &'a RunId,
    pub(crate) branch: u32,
    pub(crate) caps: &'a Arc<dyn Capabilities>,
    pub(crate) info: FiringInfo,
    pub(crate) _op: PhantomData<fn(&O)>,
}

/// What a firing knows of its place in the net beyond its ports' values: which outputs are
/// connected, whether the engine runs in parallel mode, and where its partial output goes.
#[derive(Clone, Default)]
pub(crate) struct FiringInfo {
    /// Bit `p`: output port `p` has at least one connection (ports from 64 on count as
    /// connected).
    pub(crate) connected: u64,
    /// The engine runs in parallel mode (docs/semantics.md §7).
    pub(crate) parallel: bool,
    /// Where partial output goes, while somebody listens ([`Firing::partial`]).
    pub(crate) partial: Option<PartialSink>,
}

impl fmt::Debug for FiringInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FiringInfo")
            .field("connected", &self.connected)
            .field("parallel", &self.parallel)
            .field("streaming", &self.partial.is_some())
            .finish()
    }
}

impl<O: ?Sized> fmt::Debug for Firing<'_, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Firing")
            .field("operator", &self.name)
            .field("step", &self.step)
            .field("inputs", &self.inputs.len())
            .field("emitted", &self.emitted.len())
            .field("generation", &self.caps.generation())
            .finish()
    }
}

/// The parts of a firing context, as the engine (or a satellite) assembles them.
pub(crate) struct FiringParts<'a> {
    /// The token arena `inputs` index.
    pub(crate) tokens: &'a [Token],
    /// Per input port: its state and token.
    pub(crate) inputs: &'a [InputSlot],
    pub(crate) n_outputs: u16,
    /// The logical step (1-based).
    pub(crate) step: u32,
    /// The instance name.
    pub(crate) name: &'a str,
    /// The run's id and the branch the step extends (the idempotency key).
    pub(crate) run: &'a RunId,
    pub(crate) branch: u32,
    pub(crate) caps: &'a Arc<dyn Capabilities>,
    pub(crate) info: FiringInfo,
}

impl<'a> Firing<'a> {
    /// The engine's view of a firing: what it reads (`parts`), where its emissions go.
    #[inline]
    pub(crate) fn new(parts: FiringParts<'a>, emitted: &'a mut Vec<(u16, Value)>) -> Self {
        let FiringParts {
            tokens,
            inputs,
            n_outputs,
            step,
            name,
            run,
            branch,
            caps,
            info,
        } = parts;
        Firing {
            tokens,
            inputs,
            emitted,
            n_outputs,
            step,
            name,
            run,
            branch,
            caps,
            info,
            _op: PhantomData,
        }
    }
}

impl<'a, O: ?Sized> Firing<'a, O> {
    /// The same firing, seen through operator type `P`'s port handles.
    pub fn typed<P: ?Sized>(&mut self) -> Firing<'_, P> {
        Firing {
            tokens: self.tokens,
            inputs: self.inputs,
            emitted: &mut *self.emitted,
            n_outputs: self.n_outputs,
            step: self.step,
            name: self.name,
            run: self.run,
            branch: self.branch,
            caps: self.caps,
            info: self.info.clone(),
            _op: PhantomData,
        }
    }

    /// Whether somebody watches this firing's partial output ([`partial`](Self::partial)): an
    /// operator that must do more to produce it (ask a model to stream its answer) does so
    /// only then. `false` during a replay, a backward step or a resume, which never fire.
    #[inline]
    pub fn streaming(&self) -> bool {
        self.info.partial.is_some()
    }

    /// Shows `text` as the next piece of this firing's output while it runs (a model's answer
    /// as it is written): the engine publishes it as an [`Event::Partial`](crate::Event::Partial)
    /// to the run's watchers ([`Cvm::events`](crate::Cvm::events)). Pieces are appended to
    /// each other; the firing's result is still what it emits. Partial output is never
    /// recorded — history and journal keep the emitted result only — so it may be cut short
    /// or absent (nobody listens: nothing happens) without changing the run
    /// (docs/semantics.md §4.12).
    #[inline]
    pub fn partial(&self, text: &str) {
        if let Some(sink) = &self.info.partial {
            sink(self.step, self.name, text);
        }
    }

    /// A handle sending this firing's partial output, owned (`Send + Sync + 'static`): for a
    /// task or a callback that cannot borrow the firing context (see [`Partials`]).
    pub fn partials(&self) -> Partials {
        Partials::new(self.info.partial.as_ref(), self.step, self.name)
    }

    /// The capabilities of the run: chat models, embedders, memories, tools (through the tool
    /// gate) and the observer, from the generation the run pinned when it started (see
    /// [`capability`](super::capability)).
    pub fn capabilities(&self) -> &'a dyn Capabilities {
        &**self.caps
    }

    /// The same capabilities, shared: for work the firing hands on to other engines — the
    /// runs of a sub-net's or a `map`'s inner net use the capabilities of the firing that
    /// starts them.
    pub fn capabilities_shared(&self) -> Arc<dyn Capabilities> {
        Arc::clone(self.caps)
    }

    /// The logical step of this firing (1-based).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The id of the run this firing belongs to (a journaled run's id, else the engine's own).
    pub fn run_id(&self) -> &str {
        self.run.as_str()
    }

    /// The branch of the history this firing extends (1 for the first line; each re-fire that
    /// leaves a recorded future behind starts the next number, docs/semantics.md §5.4).
    pub fn branch(&self) -> u32 {
        self.branch
    }

    /// A key that names this firing and stays the same when the firing runs again:
    /// `"{run}/{branch}/{step}/{op}"` (docs/semantics.md §5.5).
    ///
    /// A journaled run that crashed during a firing runs that firing again when it resumes —
    /// effects are at-least-once. An operator with side effects outside the net (a payment, an
    /// e-mail, a write to another system) passes this key along (an `Idempotency-Key` header, a
    /// unique column) so the second attempt is recognised and not done twice. Retries of one
    /// firing share its key too.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}/{}/{}", self.run, self.branch, self.step, self.name)
    }

    /// The instance name of the firing operator.
    pub fn instance(&self) -> &str {
        self.name
    }

    /// Whether output port `i` has at least one connection: an emission there goes somewhere.
    /// An operator with an optional output (an `error: DataError` that catches failures only
    /// when connected, docs/semantics.md §4.11) reads it.
    pub fn output_connected(&self, i: usize) -> bool {
        i >= 64 || self.info.connected & (1 << i) != 0
    }

    /// Whether output `port` has at least one connection (see
    /// [`output_connected`](Self::output_connected)).
    pub fn connected<T: ?Sized>(&self, port: OutPort<O, T>) -> bool {
        self.output_connected(port.index as usize)
    }

    /// Whether the engine runs in parallel mode (docs/semantics.md §7): an operator that runs
    /// work of its own concurrently (`map`, docs/semantics.md §10.3) does so only then.
    pub fn parallel(&self) -> bool {
        self.info.parallel
    }

    /// Number of input ports.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// State of input port `i` (an unconnected optional input is OLD). Out of range: EMPTY.
    pub fn state_at(&self, i: usize) -> ConnState {
        self.inputs.get(i).map_or(ConnState::Empty, |s| s.state)
    }

    /// Value of input port `i`, NEW or OLD; `None` if it has none (EMPTY, or optional and
    /// unconnected).
    pub fn value_at(&self, i: usize) -> Option<&'a Value> {
        let slot = self.inputs.get(i)?;
        self.tokens.get(slot.token as usize).map(|t| &t.value)
    }

    /// Emits `value` on output port `i`. Emitting twice on one port in a firing is an error the
    /// engine reports when `run` returns.
    pub fn emit_at(&mut self, i: usize, value: impl Into<Value>) {
        let i = u16::try_from(i).unwrap_or(u16::MAX);
        self.emitted.push((i, value.into()));
    }

    /// Number of output ports.
    pub fn output_count(&self) -> usize {
        self.n_outputs as usize
    }

    /// Input `port`'s value as a `T`. Errors when the input has no value.
    pub fn get<T: DataType>(&self, port: InPort<O, T>) -> Result<&'a T, OpError> {
        let v = self
            .value_at(port.index as usize)
            .ok_or_else(|| OpError::new(format!("input `{}` has no value", port.name)))?;
        v.downcast_ref::<T>().ok_or_else(|| {
            OpError::new(format!(
                "input `{}` holds a {}, expected {}",
                port.name,
                v.type_name(),
                T::INFO.name
            ))
        })
    }

    /// Input `port`'s value as a `T`, if it has one.
    pub fn try_get<T: DataType>(&self, port: InPort<O, T>) -> Option<&'a T> {
        self.value_at(port.index as usize)?.downcast_ref()
    }

    /// Input `port`'s value, untyped (for `Any` and type-variable ports).
    pub fn value(&self, port: impl InputHandle<O>) -> Option<&'a Value> {
        self.value_at(port.index())
    }

    /// Input `port`'s state.
    pub fn state(&self, port: impl InputHandle<O>) -> ConnState {
        self.state_at(port.index())
    }

    /// Whether input `port` is NEW (fresh) in this firing.
    pub fn is_new(&self, port: impl InputHandle<O>) -> bool {
        self.state(port) == ConnState::New
    }

    /// Emits `value` on output `port`.
    pub fn emit<T: DataType>(&mut self, port: OutPort<O, T>, value: T) {
        self.emit_at(port.index as usize, Value::new(value));
    }

    /// Emits an already-built value on output `port` (for `Any` and type-variable ports).
    pub fn emit_value<T: ?Sized>(&mut self, port: OutPort<O, T>, value: Value) {
        self.emit_at(port.index as usize, value);
    }

    /// Passes input `from`'s value to output `to` as a shared reference (structural operators).
    pub fn forward<T: ?Sized>(
        &mut self,
        from: InPort<O, T>,
        to: OutPort<O, T>,
    ) -> Result<(), OpError> {
        let v = self
            .value_at(from.index as usize)
            .ok_or_else(|| OpError::new(format!("input `{}` has no value", from.name)))?
            .clone();
        self.emit_at(to.index as usize, v);
        Ok(())
    }
}

/// The inputs of one firing held outside any engine, for a process that runs operators on
/// behalf of another — a satellite (docs/semantics.md §11). [`firing`](Self::firing) hands
/// [`Operator::run`] the same [`Firing`] the engine would: the same values and states, the same
/// run, branch, step and instance name (so the same idempotency key), the same connected
/// outputs.
pub struct DetachedInputs {
    tokens: Vec<Token>,
    inputs: Vec<InputSlot>,
    n_outputs: u16,
    step: u32,
    name: String,
    run: RunId,
    branch: u32,
    info: FiringInfo,
}

impl fmt::Debug for DetachedInputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetachedInputs")
            .field("operator", &self.name)
            .field("step", &self.step)
            .field("inputs", &self.inputs.len())
            .finish_non_exhaustive()
    }
}

impl DetachedInputs {
    /// The inputs of firing `step` of instance `name` in `run` on `branch`: per input port its
    /// state and value (`None` for none), the number of output ports, and which of them are
    /// connected (`connected[p]`; ports beyond the slice count as connected).
    #[allow(clippy::too_many_arguments)] // one constructor mirroring the engine's firing context
    pub fn new(
        inputs: Vec<(ConnState, Option<Value>)>,
        n_outputs: u16,
        connected: &[bool],
        step: u32,
        name: impl Into<String>,
        run: impl Into<String>,
        branch: u32,
        parallel: bool,
    ) -> Self {
        let mut tokens = Vec::with_capacity(inputs.len());
        let mut slots = Vec::with_capacity(inputs.len());
        for (state, value) in inputs {
            let token = match value {
                Some(value) => {
                    tokens.push(Token {
                        value,
                        step: 0,
                        op: crate::connection::OpId(0),
                    });
                    (tokens.len() - 1) as u32
                }
                None => u32::MAX,
            };
            slots.push(InputSlot { state, token });
        }
        let mut mask = u64::MAX;
        for (p, c) in connected.iter().enumerate().take(64) {
            if !c {
                mask &= !(1 << p);
            }
        }
        DetachedInputs {
            tokens,
            inputs: slots,
            n_outputs,
            step,
            name: name.into(),
            run: RunId::text(Arc::from(run.into())),
            branch,
            info: FiringInfo {
                connected: mask,
                parallel,
                partial: None,
            },
        }
    }

    /// The firing context over these inputs, emitting into `emitted`, with the capabilities
    /// `caps`.
    pub fn firing<'a>(
        &'a self,
        emitted: &'a mut Vec<(u16, Value)>,
        caps: &'a Arc<dyn Capabilities>,
    ) -> Firing<'a> {
        Firing::new(
            FiringParts {
                tokens: &self.tokens,
                inputs: &self.inputs,
                n_outputs: self.n_outputs,
                step: self.step,
                name: &self.name,
                run: &self.run,
                branch: self.branch,
                caps,
                info: self.info.clone(),
            },
            emitted,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::RunId;

    #[test]
    fn a_lazy_run_id_reads_as_its_uuid_written_out_before_and_after_a_clone() {
        let uuid = uuid::Uuid::now_v7();
        let id = RunId::uuid(uuid.as_u128());
        let early = id.clone(); // cloned before it was ever read
        assert_eq!(id.as_str(), uuid.hyphenated().to_string());
        let late = id.clone(); // cloned after
        assert_eq!(early.as_str(), id.as_str());
        assert_eq!(late.as_str(), id.as_str());
        assert_eq!(RunId::text("run-7".into()).as_str(), "run-7");
    }
}
