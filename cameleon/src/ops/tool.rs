//! `tool`: calls a tool through the run's tool gate (docs/tools.md).

use crate::operator;
use crate::operator::capability::{ToolCall, ToolStatus};
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{DataError, DataJSON};

/// Calls the tool `name` through the run's tool gate with the JSON object on `in_args`, and
/// emits the tool's result on `out_result`.
///
/// The call obeys the net's `tools:` policy: a tool not under `allow:` is denied and never runs.
/// A denied, failed or timed-out call fails the firing — the run ends in ERROR naming the tool
/// and the status — unless `error` is connected, where the failure goes as a DataError.
/// Replaying or undoing the firing never calls the tool again: the result is in the history.
#[operator(
    id = "tool",
    label = "Tool",
    family = behavioral,
    exec = blocking,
    emits = [[out_result], [error]]
)]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallTool {
    /// the tool to call (`cameleon tools` lists them)
    #[param]
    pub name: String,
    #[input]
    in_args: In<DataJSON>,
    #[output]
    out_result: Out<DataJSON>,
    #[output]
    error: Out<DataError>,
}

impl CallTool {
    /// An operator calling tool `name`.
    pub fn new(name: impl Into<String>) -> Self {
        CallTool { name: name.into() }
    }
}

impl Run for CallTool {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let args = cx.get(Self::in_args)?.0.clone();
        let call = ToolCall::new(self.name.clone(), args)
            .principal(cx.instance())
            .idempotency_key(cx.idempotency_key());
        let result = cx.capabilities().tools().call_blocking(call);
        if result.status == ToolStatus::Ok {
            cx.emit(Self::out_result, DataJSON(result.content));
            return Ok(());
        }
        Err(OpError::new(format!(
            "tool `{}` {}: {}",
            self.name,
            result.status,
            result.error.as_deref().unwrap_or("no reason given")
        )))
    }
}
