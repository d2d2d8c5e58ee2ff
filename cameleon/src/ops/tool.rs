//! `tool`: calls a tool through the run's tool gate (docs/tools.md).

use crate::operator;
use crate::operator::capability::{ToolCall, ToolResult, ToolStatus};
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::ops::ai::{FiringLog, ModelCall, ModelLog};
use crate::types::{DataBool, DataError, DataJSON, Value};

/// Calls the tool `name` through the run's tool gate with the JSON object on `in_args`, and
/// emits the tool's result on `out_result`.
///
/// The call obeys the net's `tools:` policy: a tool not under `allow:` or `approve:` is denied
/// and never runs. A tool under `approve:` is asked for first, before each firing: the operator
/// waits (the run stops in WAITING) on the question `allow tool `NAME` with args …?`, a
/// `DataBool` answered like an `ask`'s (docs/semantics.md §6.1) — yes calls the tool once, no
/// gives a `denied` result without calling it.
///
/// A denied, failed or timed-out call fails the firing — the run ends in ERROR naming the tool
/// and the status — unless `error` is connected, where the failure goes as a DataError.
///
/// The call and its whole result are recorded with the firing, as an `agent`'s calls are (its
/// internal state, a [`ModelLog`]): a net run as a tool leaves its inner run there (the
/// result's `meta.run`, history included) and its tokens (`meta.usage`, the firing's usage).
/// Replaying or undoing the firing never calls the tool again, nor a resumed journaled run:
/// the result is in the history (docs/tools.md#nets-as-tools).
#[operator(
    id = "tool",
    label = "Tool",
    family = behavioral,
    exec = blocking,
    emits = [[out_result], [error]]
)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallTool {
    /// the tool to call (`cameleon tools` lists them)
    #[param]
    pub name: String,
    /// A person's answer to the approval question, until the firing that uses it.
    approval: Option<bool>,
    /// The last firing's call and result (a net-tool's inner run included).
    log: ModelLog,
    /// the tool's arguments as a JSON object (e.g. from a `const`); `cameleon tools --json` gives each tool's schema
    #[input]
    in_args: In<DataJSON>,
    /// the tool's result (its `content`: text or JSON)
    #[output]
    out_result: Out<DataJSON>,
    /// optional to connect: a denied, failed or timed-out call goes here as a DataError instead of failing the run
    #[output]
    error: Out<DataError>,
}

impl CallTool {
    /// An operator calling tool `name`.
    pub fn new(name: impl Into<String>) -> Self {
        CallTool {
            name: name.into(),
            approval: None,
            log: ModelLog::default(),
        }
    }

    /// The last firing's call and result, as an `agent` records its calls.
    pub fn log(&self) -> &ModelLog {
        &self.log
    }
}

impl Run for CallTool {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let args = cx.get(Self::in_args)?.0.clone();
        let mut call = ToolCall::new(self.name.clone(), args)
            .principal(cx.instance())
            .idempotency_key(cx.idempotency_key());
        let approval = self.approval.take();
        if approval == Some(true) {
            call = call.approved_by(format!("the answer to `{}`", cx.instance()));
        }
        let result = match approval {
            Some(false) => ToolResult::denied(
                &self.name,
                format!(
                    "a person denied the call of tool `{}` (the answer to `{}` was no)",
                    self.name,
                    cx.instance()
                ),
            ),
            _ => cx.capabilities().tools().call_blocking(call.clone()),
        };
        let mut log = FiringLog::default();
        log.push(ModelCall::Tool {
            call,
            result: result.clone(),
        });
        self.log.set(log);
        if result.status == ToolStatus::Ok {
            cx.emit(Self::out_result, DataJSON(result.content));
            return Ok(());
        }
        let message = format!(
            "tool `{}` {}: {}",
            self.name,
            result.status,
            result.error.as_deref().unwrap_or("no reason given")
        );
        // A firing that used an answer spends it: a caught failure is applied with the state it
        // leaves (no answer), so the next call is asked again. (An uncaught failure applies
        // nothing, the answer included: the run stops there.)
        if approval.is_some() && cx.connected(Self::error) {
            cx.emit(
                Self::error,
                DataError {
                    operator: cx.instance().to_owned(),
                    message,
                },
            );
            return Ok(());
        }
        Err(OpError::new(message))
    }

    fn calls_tool(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn has_answer(&self) -> bool {
        self.approval.is_some()
    }

    fn answer(&mut self, value: Value) {
        if let Some(DataBool(yes)) = value.downcast_ref::<DataBool>() {
            self.approval = Some(*yes);
        }
    }
}

// Its firings have the effects of the tool it calls.
crate::submit_operator_effects!(crate::operator::capability::OperatorEffects {
    op_type: "tool",
    effects: crate::operator::capability::OpEffects::OfTools,
});
