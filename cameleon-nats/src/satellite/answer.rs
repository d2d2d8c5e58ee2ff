//! What a satellite answers: a firing request (run once per idempotency key, its panic caught,
//! its emissions and state sent back) and a tool call (through the satellite's gate).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::Message;
use cameleon::catalogue::{BuildContext, Catalogue};
use cameleon::connection::ConnState;
use cameleon::net::ToolPolicy;
use cameleon::operator::DetachedInputs;
use cameleon::operator::capability::Capabilities;
use cameleon::runtime::{CatchPanic, catch_panic};
use cameleon::tools::{ToolCall, ToolStatus};
use cameleon::types::{TypedValue, Value};
use cameleon::{Execution, OpError, Operator};
use tokio::sync::OwnedSemaphorePermit;

use super::Shared;
use super::intake::tool_refusal;
use crate::cache::Answer;
use crate::wire::{
    ErrorKind, OpReply, OpRequest, ToolReply, ToolRequest, WIRE_VERSION, WireEmission, names,
};

/// The reply's text for a call abandoned at the satellite's ceiling.
fn abandoned(satellite: &str, what: &str, limit: Duration) -> String {
    format!(
        "satellite `{satellite}` abandoned {what} after {} ms, its ceiling (`--max-call-ms`)",
        limit.as_millis()
    )
}

/// The wire version a message says it speaks (header first, else assumed current).
fn version_of(m: &Message) -> Option<u32> {
    m.headers
        .as_ref()
        .and_then(|h| h.get(names::VERSION))
        .and_then(|v| v.as_str().parse().ok())
}

fn version_error(v: u32) -> String {
    format!(
        "wire version mismatch: the request speaks version {v}, this satellite version {WIRE_VERSION} (run a satellite built with the same Caméléon version as the run; docs/wire.md)"
    )
}

/// Reads a firing request. `Err`: the reply to one the satellite does not take (another wire
/// version, unreadable, a type it does not host).
pub(super) fn read_op(shared: &Shared, m: &Message) -> Result<OpRequest, Box<OpReply>> {
    let name = &shared.name;
    if let Some(v) = version_of(m).filter(|v| *v != WIRE_VERSION) {
        return Err(Box::new(OpReply::failed(
            name,
            ErrorKind::Version,
            version_error(v),
        )));
    }
    let req: OpRequest = serde_json::from_slice(&m.payload).map_err(|e| {
        Box::new(OpReply::failed(
            name,
            ErrorKind::BadRequest,
            format!("satellite `{name}` cannot read the firing request: {e}"),
        ))
    })?;
    if req.v != WIRE_VERSION {
        return Err(Box::new(OpReply::failed(
            name,
            ErrorKind::Version,
            version_error(req.v),
        )));
    }
    if !shared.ops.contains(&req.ty) {
        return Err(Box::new(OpReply::failed(
            name,
            ErrorKind::Unknown,
            format!(
                "satellite `{name}` does not host operator type `{}`",
                req.ty
            ),
        )));
    }
    Ok(req)
}

/// A firing ready to run: its operator built from the request's type and params, its state
/// restored, its inputs and capabilities.
pub(super) struct Prepared {
    op: Box<dyn Operator>,
    detached: DetachedInputs,
    caps: Arc<dyn Capabilities>,
    ty: String,
    instance: String,
    /// The idempotency cache's key.
    key: String,
}

impl Prepared {
    /// Whether its operator is quick by declaration ([`Execution::Inline`]): it is answered
    /// at once, by the loop that took it, without a task of its own.
    pub(super) fn is_inline(&self) -> bool {
        self.op.execution() == Execution::Inline
    }
}

/// Builds the operator and restores its state. `Err`: the reply (`bad_request`).
pub(super) fn prepare(shared: &Shared, req: OpRequest) -> Result<Prepared, Box<OpReply>> {
    let name = &shared.name;
    let bad = |msg: String| Box::new(OpReply::failed(name, ErrorKind::BadRequest, msg));
    let cx = BuildContext {
        base_dir: Some(shared.base_dir.clone()),
        ..BuildContext::default()
    };
    let mut op = Catalogue::global()
        .build(&req.ty, &req.params, &cx)
        .map_err(|e| bad(format!("`{}` ({}): {e}", req.instance, req.ty)))?;
    if let Some(json) = req.state {
        let restored = cameleon::operator::read_state(&*op, json);
        match restored {
            Ok(s) => op.restore_state(&s),
            Err(e) => {
                return Err(bad(format!(
                    "the internal state sent for `{}` cannot be read back: {e}",
                    req.instance
                )));
            }
        }
    }
    let inputs: Vec<(ConnState, Option<Value>)> = req
        .inputs
        .into_iter()
        .map(|i| (i.state.into(), i.value.map(|t| t.0)))
        .collect();
    let key = format!("op:{}", req.key);
    let detached = DetachedInputs::new(
        inputs,
        u16::try_from(req.outputs.len()).unwrap_or(u16::MAX),
        &req.outputs,
        req.step,
        req.instance.clone(),
        req.run,
        req.branch,
        req.parallel,
    );
    let policy = req.tools.map(|p| ToolPolicy {
        allow: p.allow,
        approve: p.approve,
    });
    Ok(Prepared {
        op,
        detached,
        caps: shared.caps(policy),
        ty: req.ty,
        instance: req.instance,
        key,
    })
}

/// Answers a prepared firing, once per idempotency key; `permit` is its place among the
/// satellite's `concurrency`.
pub(super) async fn answer_op(
    shared: &Arc<Shared>,
    p: Prepared,
    permit: OwnedSemaphorePermit,
) -> OpReply {
    let key = p.key.clone();
    let s = Arc::clone(shared);
    match shared
        .op_cache
        .answer(&key, |r| r.ok, async move { run_op(&s, p, permit).await })
        .await
    {
        Answer::Ran(r) => r,
        Answer::Cached(mut r) => {
            r.cached = true;
            r
        }
    }
}

/// [`answer_op`] at once, for an inline operator ([`Prepared::is_inline`]). `Err`: the same
/// key is running now: the firing and its place back, to wait for it with [`answer_op`].
pub(super) fn answer_op_now(
    shared: &Shared,
    p: Prepared,
    permit: OwnedSemaphorePermit,
) -> Result<OpReply, Box<(Prepared, OwnedSemaphorePermit)>> {
    let key = p.key.clone();
    match shared.op_cache.answer_now(
        &key,
        |r| r.ok,
        (p, permit),
        |(p, permit)| run_inline(shared, p, permit),
    ) {
        Ok(Answer::Ran(r)) => Ok(r),
        Ok(Answer::Cached(mut r)) => {
            r.cached = true;
            Ok(r)
        }
        Err(back) => Err(Box::new(back)),
    }
}

/// Fires an inline operator here and now.
fn run_inline(shared: &Shared, p: Prepared, permit: OwnedSemaphorePermit) -> OpReply {
    shared.executions.fetch_add(1, Ordering::SeqCst);
    let Prepared {
        mut op,
        detached,
        caps,
        ty,
        ..
    } = p;
    let mut emitted = Vec::new();
    let result = {
        let mut cx = detached.firing(&mut emitted, &caps);
        catch_panic(|| op.run(&mut cx)).unwrap_or_else(|p| Err(OpError::panicked(&p)))
    };
    drop(permit);
    reply(&shared.name, &*op, &ty, emitted, result)
}

/// Fires the prepared operator once — abandoned at the satellite's ceiling: an async operator
/// is dropped there; a blocking one cannot be interrupted, so its thread keeps `permit` (its
/// place) until it ends, and its result is dropped.
async fn run_op(shared: &Arc<Shared>, p: Prepared, permit: OwnedSemaphorePermit) -> OpReply {
    if p.is_inline() {
        return run_inline(shared, p, permit);
    }
    shared.executions.fetch_add(1, Ordering::SeqCst);
    let name = shared.name.clone();
    let Prepared {
        mut op,
        detached,
        caps,
        ty,
        instance,
        ..
    } = p;
    let what = || format!("the firing of `{instance}` ({ty})");
    let limit = shared.config.max_call;
    let (op, emitted, result) = match op.execution() {
        Execution::Async => {
            let mut emitted = Vec::new();
            let result = {
                let mut cx = detached.firing(&mut emitted, &caps);
                let fired = CatchPanic::new(op.run_async(&mut cx));
                let fired = match limit {
                    Some(l) => match tokio::time::timeout(l, fired).await {
                        Ok(r) => r,
                        Err(_) => {
                            return OpReply::failed(
                                &name,
                                ErrorKind::Timeout,
                                abandoned(&name, &what(), l),
                            );
                        }
                    },
                    None => fired.await,
                };
                fired.unwrap_or_else(|p| Err(OpError::panicked(&p)))
            };
            drop(permit);
            (op, emitted, result)
        }
        _ => {
            let what = what();
            let handle = tokio::task::spawn_blocking(move || {
                let _place = permit;
                let mut emitted = Vec::new();
                let result = {
                    let mut cx = detached.firing(&mut emitted, &caps);
                    catch_panic(|| op.run(&mut cx)).unwrap_or_else(|p| Err(OpError::panicked(&p)))
                };
                (op, emitted, result)
            });
            let joined = match limit {
                Some(l) => match tokio::time::timeout(l, handle).await {
                    Ok(j) => j,
                    Err(_) => {
                        return OpReply::failed(
                            &name,
                            ErrorKind::Timeout,
                            abandoned(&name, &what, l),
                        );
                    }
                },
                None => handle.await,
            };
            match joined {
                Ok(x) => x,
                Err(e) => {
                    return OpReply::failed(&name, ErrorKind::Failed, format!("panicked: {e}"));
                }
            }
        }
    };
    reply(&name, &*op, &ty, emitted, result)
}

/// The reply to a firing that ran: its emissions and state, or its failure.
fn reply(
    name: &str,
    op: &dyn Operator,
    ty: &str,
    emitted: Vec<(u16, Value)>,
    result: Result<(), OpError>,
) -> OpReply {
    if let Err(e) = result {
        return OpReply::failed(name, ErrorKind::Failed, e.message().to_owned());
    }
    let state = match op.save_state().map(|s| s.to_json()).transpose() {
        Ok(s) => s,
        Err(e) => {
            return OpReply::failed(
                name,
                ErrorKind::Failed,
                format!(
                    "the internal state of an operator of type `{ty}` cannot be sent back: {e}"
                ),
            );
        }
    };
    OpReply {
        v: WIRE_VERSION,
        satellite: name.to_owned(),
        ok: true,
        emitted: emitted
            .into_iter()
            .map(|(port, v)| WireEmission {
                port,
                value: TypedValue(v),
            })
            .collect(),
        state,
        error: None,
        kind: None,
        cached: false,
    }
}

/// Answers one tool call: the gate on the satellite, the tool alone allowed (the caller's gate
/// applied the run's policy), `meta.origin` naming the satellite, at most `max_call` long.
pub(super) async fn handle_tool(
    shared: &Arc<Shared>,
    m: &Message,
    permit: OwnedSemaphorePermit,
) -> ToolReply {
    let name = shared.name.clone();
    let failed = |tool: &str, kind: ErrorKind, msg: String| tool_refusal(&name, tool, kind, msg);
    if let Some(v) = version_of(m).filter(|v| *v != WIRE_VERSION) {
        return failed("?", ErrorKind::Version, version_error(v));
    }
    let req: ToolRequest = match serde_json::from_slice(&m.payload) {
        Ok(r) => r,
        Err(e) => {
            return failed(
                "?",
                ErrorKind::BadRequest,
                format!("satellite `{name}` cannot read the tool call: {e}"),
            );
        }
    };
    if req.v != WIRE_VERSION {
        return failed(&req.tool, ErrorKind::Version, version_error(req.v));
    }
    if !shared.tools.contains(&req.tool) {
        return failed(
            &req.tool,
            ErrorKind::Unknown,
            format!("satellite `{name}` does not host tool `{}`", req.tool),
        );
    }
    if req.approved_by.is_none() && shared.config.approve.contains(&req.tool) {
        return ToolReply {
            v: WIRE_VERSION,
            satellite: name.clone(),
            result: super::caps::needs_approval(&name, &req.tool),
            cached: false,
            kind: None,
        };
    }
    let run = {
        let s = Arc::clone(shared);
        let req = req.clone();
        async move {
            let _place = permit;
            s.executions.fetch_add(1, Ordering::SeqCst);
            // The satellite's own capabilities: a net offered as a tool runs with them.
            let mut gate = s
                .generation
                .for_call(&req.tool, s.base_dir.clone())
                .gate()
                .clone();
            if let Some(l) = s.config.max_call {
                gate = gate.timeout(l);
            }
            let mut result = gate
                .call(ToolCall {
                    tool: req.tool.clone(),
                    args: req.args,
                    principal: req.principal,
                    idempotency_key: req.key,
                    // The run's gate decided (an approval included); this gate allows the tool.
                    approved_by: req.approved_by,
                })
                .await;
            result.meta.origin = format!("satellite:{}", s.name);
            ToolReply {
                v: WIRE_VERSION,
                satellite: s.name.clone(),
                result,
                cached: false,
                kind: None,
            }
        }
    };
    match &req.key {
        Some(key) => {
            let key = format!("tool:{}:{key}", req.tool);
            match shared
                .tool_cache
                .answer(&key, |r| r.result.status == ToolStatus::Ok, run)
                .await
            {
                Answer::Ran(r) => r,
                Answer::Cached(mut r) => {
                    r.cached = true;
                    r
                }
            }
        }
        None => run.await,
    }
}
