//! `delay`: waits, asynchronously, then passes its input on. For demos and tests of parallel
//! mode — and the reference for what `#[operator(…, exec = async)]` generates.

use std::time::Duration;

use serde_json::json;

use crate::catalogue::{BuildContext, CatalogueEntry, ParamError, ParamInfo, ParamReader};
use crate::connection::ConnState;
use crate::operator::{
    Emitted, Execution, Firing, InputSet, OpError, OpFuture, OpSpec, OpState, Operator, Params,
    RunAsync, TypeRef, run_async_blocking, run_async_boxed,
};
use crate::policy::{Family, Policy};
use crate::types::Value;

/// Waits `ms` milliseconds without blocking a thread, then passes `in_data` to `out_data`
/// unchanged (the same shared value). Behavioral, `any` policy, async: in parallel mode the
/// delays of one step overlap.
///
/// Its ports carry one type variable, like a structural operator's: `out_data` has the type of
/// whatever feeds `in_data`, so a delay can be put on any connection without a conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delay {
    /// Milliseconds to wait.
    pub ms: u64,
}

impl Delay {
    /// The default wait, in milliseconds.
    pub const DEFAULT_MS: u64 = 100;

    /// A delay of `ms` milliseconds.
    pub fn new(ms: u64) -> Self {
        Delay { ms }
    }
}

impl Default for Delay {
    fn default() -> Self {
        Delay::new(Delay::DEFAULT_MS)
    }
}

impl RunAsync for Delay {
    async fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        let v = cx
            .value_at(0)
            .cloned()
            .ok_or_else(|| OpError::new("input `in_data` has no value"))?;
        cx.emit_at(0, v);
        Ok(())
    }
}

// What `#[operator(id = "delay", label = "Delay", family = behavioral, exec = async)]` writes.
impl Operator for Delay {
    fn spec(&self) -> OpSpec {
        OpSpec::new("delay", "Delay", Family::Behavioral, Policy::Any)
            .input("in_data", TypeRef::Var(0))
            .output("out_data", TypeRef::Var(0))
    }
    fn params(&self) -> Params {
        let mut p = Params::new();
        p.insert("ms".into(), json!(self.ms));
        p
    }
    fn consumes(&self, inputs: &[ConnState]) -> InputSet {
        <Self as RunAsync>::consumes(self, inputs)
    }
    fn execution(&self) -> Execution {
        Execution::Async
    }
    fn run(&mut self, cx: &mut Firing<'_>) -> Result<(), OpError> {
        run_async_blocking(self, cx)
    }
    fn run_async<'a>(&'a mut self, cx: &'a mut Firing<'_>) -> OpFuture<'a> {
        run_async_boxed(self, cx)
    }
    fn rollback(&mut self, before: Option<&OpState>, emitted: &[(u16, Value)]) {
        <Self as RunAsync>::rollback(self, &Emitted::new(emitted));
        if let Some(b) = before {
            self.restore_state(b);
        }
    }
}

const PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "ms",
    ty: "u64",
    default: Some("100"), // Delay::DEFAULT_MS
    doc: "milliseconds to wait",
}];

fn build(params: &Params, _cx: &BuildContext) -> Result<Box<dyn Operator>, ParamError> {
    let r = ParamReader::new(params, PARAMS)?;
    let op = Delay::new(r.read::<u64>("ms")?);
    <Delay as RunAsync>::validate(&op)?;
    Ok(Box::new(op))
}

// What `#[operator]` submits for it.
crate::submit_operator!(CatalogueEntry {
    id: "delay",
    aliases: &[],
    label: "Delay",
    family: Family::Behavioral,
    policy: Policy::Any,
    doc: "Waits `ms` milliseconds without blocking a thread, then passes `in_data` to `out_data` unchanged.\n\nIts ports carry one type variable: `out_data` has the type of whatever feeds `in_data`. Async: in parallel mode the delays of one step overlap.",
    params: PARAMS,
    spec: || Operator::spec(&Delay::default()),
    build,
});
