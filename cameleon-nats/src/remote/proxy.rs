//! The proxies a run uses: [`RemoteOp`], which fires a `placement: remote` instance on a
//! satellite and answers everything else with the local instance, and [`RemoteTool`], a tool
//! reached the same way.

use std::time::Duration;

use cameleon::connection::ConnState;
use cameleon::operator::capability::ToolManifest;
use cameleon::operator::{
    FiniteControl, Firing, OpFuture, OpSettings, OpSpec, OpState, Params, Question,
};
use cameleon::policy::Enabling;
use cameleon::tools::{Tool, ToolContext, ToolError, ToolOutput};
use cameleon::types::{TypedValue, Value};
use cameleon::{Execution, InputSet, OpError, Operator};
use serde_json::Value as Json;

use super::Remote;
use crate::wire::{
    ErrorKind, OpReply, OpRequest, ToolRequest, WIRE_VERSION, WireInput, WirePolicy,
};

/// The proxy of a `placement: remote` instance: fires on a satellite, answers everything
/// else with the local instance.
pub(super) struct RemoteOp {
    pub(super) inner: Box<dyn Operator>,
    pub(super) remote: Remote,
    pub(super) ty: String,
    pub(super) instance: String,
    pub(super) policy: Option<WirePolicy>,
    pub(super) limit: Duration,
}

impl RemoteOp {
    fn request(&self, cx: &Firing<'_>) -> Result<OpRequest, OpError> {
        let state = match self.inner.save_state() {
            None => None,
            Some(s) => Some(s.to_json().map_err(|e| {
                OpError::new(format!(
                    "`{}` cannot run on a satellite: {e}",
                    self.instance
                ))
            })?),
        };
        Ok(OpRequest {
            v: WIRE_VERSION,
            run: cx.run_id().to_owned(),
            branch: cx.branch(),
            step: cx.step(),
            instance: cx.instance().to_owned(),
            key: cx.idempotency_key(),
            ty: self.ty.clone(),
            params: self.inner.params(),
            inputs: (0..cx.input_count())
                .map(|i| WireInput {
                    state: cx.state_at(i).into(),
                    value: match cx.state_at(i) {
                        ConnState::Empty => None,
                        _ => cx.value_at(i).map(|v| TypedValue(v.clone())),
                    },
                })
                .collect(),
            outputs: (0..cx.output_count())
                .map(|p| cx.output_connected(p))
                .collect(),
            parallel: cx.parallel(),
            state,
            tools: self.policy.clone(),
        })
    }

    fn apply(&mut self, reply: OpReply, cx: &mut Firing<'_>) -> Result<(), OpError> {
        if !reply.ok {
            let why = reply.error.unwrap_or_else(|| "no reason given".to_owned());
            return Err(OpError::new(match reply.kind {
                Some(ErrorKind::Failed | ErrorKind::Timeout) | None => why,
                Some(_) => format!("satellite `{}`: {why}", reply.satellite),
            }));
        }
        if let Some(json) = reply.state {
            let s = cameleon::operator::read_state(&*self.inner, json).map_err(|e| {
                OpError::new(format!(
                    "the internal state of `{}` sent by satellite `{}` cannot be read: {e}",
                    self.instance, reply.satellite
                ))
            })?;
            self.inner.restore_state(&s);
        }
        for e in reply.emitted {
            cx.emit_at(e.port as usize, e.value.0);
        }
        Ok(())
    }
}

impl Operator for RemoteOp {
    fn spec(&self) -> OpSpec {
        self.inner.spec()
    }

    fn params(&self) -> Params {
        self.inner.params()
    }

    fn can_fire(&self, e: &Enabling<'_>) -> bool {
        self.inner.can_fire(e)
    }

    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        self.inner.consumes(inputs)
    }

    fn control(&self) -> Option<&dyn FiniteControl> {
        self.inner.control()
    }

    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        let req = self.request(cx)?;
        let remote = self.remote.clone();
        let limit = self.limit;
        let reply = cameleon::runtime::block_on(async move { remote.fire(&req, limit).await })?;
        self.apply(reply, cx)
    }

    fn execution(&self) -> Execution {
        Execution::Async
    }

    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        Box::pin(async move {
            let req = self.request(cx)?;
            // In parallel mode the step's remote firings go out together.
            let reply = if cx.parallel() {
                self.remote.fire_with_step(&req, self.limit).await?
            } else {
                self.remote.fire(&req, self.limit).await?
            };
            self.apply(reply, cx)
        })
    }

    fn fresh(&self) -> Option<Box<dyn Operator>> {
        let inner = self.inner.fresh()?;
        Some(Box::new(RemoteOp {
            inner,
            remote: self.remote.clone(),
            ty: self.ty.clone(),
            instance: self.instance.clone(),
            policy: self.policy.clone(),
            limit: self.limit,
        }))
    }

    // The engine asks a person before a firing that calls an `approve:` tool: so here too, at
    // the run, before the firing (with the answer in its state) goes to a satellite.
    fn calls_tool(&self) -> Option<&str> {
        self.inner.calls_tool()
    }

    fn question(&self) -> Option<Question> {
        self.inner.question()
    }

    fn has_answer(&self) -> bool {
        self.inner.has_answer()
    }

    fn answer(&mut self, value: Value) {
        self.inner.answer(value);
    }

    fn settings(&self) -> OpSettings {
        self.inner.settings()
    }

    fn save_state(&self) -> Option<OpState> {
        self.inner.save_state()
    }

    fn restore_state(&mut self, state: &OpState) {
        self.inner.restore_state(state);
    }

    fn rollback(&mut self, before: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.rollback(before, emitted);
    }

    fn replay(&mut self, after: Option<&OpState>, emitted: &[(u16, Value)]) {
        self.inner.replay(after, emitted);
    }
}

/// A tool that runs on a satellite: called through the run's gate like any other (policy and
/// argument check there), answered with the satellite's result, `meta.origin` naming it.
#[derive(Debug)]
pub struct RemoteTool {
    manifest: ToolManifest,
    remote: Remote,
}

impl RemoteTool {
    /// The tool of `manifest` (its effects as its satellite advertised them, `external` when
    /// it did not say), reached through `remote`.
    pub fn new(manifest: ToolManifest, remote: Remote) -> Self {
        RemoteTool { manifest, remote }
    }
}

impl Tool for RemoteTool {
    fn manifest(&self) -> &ToolManifest {
        &self.manifest
    }

    fn origin(&self) -> &str {
        "satellite"
    }

    fn call<'a>(&'a self, cx: &'a ToolContext, args: Json) -> ToolOutput<'a> {
        let req = ToolRequest {
            v: WIRE_VERSION,
            tool: self.manifest.name.clone(),
            args,
            principal: cx.principal.clone(),
            key: cx.idempotency_key.clone(),
            approved_by: cx.approved_by.clone(),
        };
        ToolOutput::Pending(Box::pin(async move {
            let reply = self.remote.call_tool(&req, self.remote.timeout).await?;
            cx.report_origin(reply.result.meta.origin.clone());
            match reply.result.status {
                cameleon::tools::ToolStatus::Ok => Ok(reply.result.content),
                cameleon::tools::ToolStatus::Timeout => {
                    Err(ToolError::timeout(reply.result.error.unwrap_or_default()))
                }
                _ => Err(ToolError::new(reply.result.error.unwrap_or_default())),
            }
        }))
    }
}
