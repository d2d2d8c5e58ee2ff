//! Operators that wait for a value from outside the net — the `ask` operator, a tool approval
//! — and the answers that let them fire (docs/semantics.md §6.1).
//!
//! An operator declares a [`Question`](crate::operator::Question) ([`Operator::question`]). While its
//! firing rule holds but it has no answer ([`Operator::has_answer`]) it is *waiting*: not in
//! the enabled set, listed by [`Cvm::waiting`]. A run that can only go on through waiting
//! operators stops in [`EndState::Waiting`](super::EndState::Waiting). [`Cvm::provide`] checks
//! an answer's type and hands it to the operator ([`Operator::answer`]), which keeps it in its
//! internal state: the firing that uses it is recorded like any other (its emission, the
//! operator's state before and after), so `back` and replay never ask again.
//!
//! [`Operator::question`]: crate::Operator::question
//! [`Operator::has_answer`]: crate::Operator::has_answer
//! [`Operator::answer`]: crate::Operator::answer

use super::{Cvm, Waiting};
use crate::connection::NONE;
use crate::net::{Net, OpNode};
use crate::operator::capability::{AskFirst, ToolAccess};
use crate::operator::{AnswerError, Question};
use crate::types::{DataBool, PortType, Value};

/// The question operator `node` of `net` asks: its own ([`Operator::question`]), or — for an
/// operator calling a tool the net's `tools:` policy lists under `approve:`, or under `allow:`
/// with effects the user has not granted (`tools`, the run's gate, says) — a `DataBool`
/// approval question (docs/semantics.md §6.1).
///
/// [`Operator::question`]: crate::Operator::question
pub(super) fn question_of(net: &Net, node: &OpNode, tools: &dyn ToolAccess) -> Option<Question> {
    node.op.question().or_else(|| {
        let tool = node.op.calls_tool()?;
        let listed = net.tool_policy()?.approve.iter().any(|t| t == tool);
        (listed || tools.asks_first(tool).is_some())
            .then(|| Question::new(format!("allow tool `{tool}`?"), DataBool::INFO))
    })
}

/// Longest argument text an approval question shows.
const MAX_ARGS_CHARS: usize = 200;

/// An answer [`Cvm::provide`] refused; nothing changed (a waiting run stays `WAITING`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProvideError {
    /// No operator of that name.
    #[error("no operator `{op}` in the net{}", asking_hint(.asking))]
    UnknownOperator {
        /// The name given.
        op: String,
        /// The operators that ask questions.
        asking: Vec<String>,
    },
    /// The operator asks no question.
    #[error("operator `{op}` asks no question: it takes no answer{}", asking_hint(.asking))]
    NotAsking {
        /// The operator.
        op: String,
        /// The operators that ask questions.
        asking: Vec<String>,
    },
    /// The answer does not fit the question.
    #[error("wrong answer for `{op}`: {error}")]
    Answer {
        /// The operator.
        op: String,
        /// What is wrong with the answer.
        error: AnswerError,
    },
}

fn asking_hint(asking: &[String]) -> String {
    match asking {
        [] => " (no operator of this net asks one)".to_owned(),
        _ => format!(
            " (operators that ask: {})",
            asking
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl Cvm {
    /// Asks each operator's question anew, for the run's capabilities now (an approval depends
    /// on the gate's grants and the tools' effects).
    pub(super) fn ask_questions(&mut self) {
        let tools = self.context.capabilities.tools();
        self.operators.questions = self
            .net
            .ops
            .iter()
            .map(|n| question_of(&self.net, n, tools))
            .collect();
        self.operators.any_asks = self.operators.questions.iter().any(Option::is_some);
        self.refresh_all();
    }

    /// The operators waiting for an answer now — their rule holds, they have none — in
    /// declaration order, with their questions. Other operators may be enabled too (in
    /// parallel branches); the run stops in `WAITING` only when nothing else can fire.
    ///
    /// An approval question names the tool and the arguments the call would have: `allow tool
    /// `write_file` with args {"path":"a.txt",…}?`.
    pub fn waiting(&self) -> Vec<Waiting> {
        self.marking
            .waiting
            .iter()
            .filter_map(|o| {
                let q = self.operators.questions[o].as_ref()?;
                Some(Waiting {
                    op: self.net.ops[o].name.clone(),
                    prompt: self.approval_prompt(o).unwrap_or_else(|| q.prompt.clone()),
                    ty: q.ty,
                })
            })
            .collect()
    }

    /// The prompt of operator `o`'s approval question, with the arguments on its first input;
    /// `None` when its question is its own.
    fn approval_prompt(&self, o: usize) -> Option<String> {
        let op = &self.net.ops[o].op;
        let tool = op.calls_tool()?;
        if op.question().is_some() {
            return None;
        }
        let start = self.operators.topo.in_start[o] as usize;
        let conn = *self.operators.topo.in_conn.get(start)?;
        let args = if conn == NONE || self.marking.token_of[conn as usize] == NONE {
            "none".to_owned()
        } else {
            let text = self.marking.tokens[self.marking.token_of[conn as usize] as usize]
                .value
                .to_json()
                .to_string();
            if text.chars().count() > MAX_ARGS_CHARS {
                let mut t: String = text.chars().take(MAX_ARGS_CHARS).collect();
                t.push('…');
                t
            } else {
                text
            }
        };
        let why = match self.context.capabilities.tools().asks_first(tool) {
            Some(AskFirst::Ungranted(effects)) => format!(
                " (it {}; `--grant {tool}` lets it run unasked)",
                effects.describe()
            ),
            _ => String::new(),
        };
        Some(format!("allow tool `{tool}` with args {args}?{why}"))
    }

    /// The question operator `op` asks, if it asks one.
    pub fn question(&self, op: &str) -> Option<&crate::operator::Question> {
        let id = self.net.op_id(op)?;
        self.operators.questions[id.index()].as_ref()
    }

    /// The operators that ask questions, in declaration order.
    pub fn asking(&self) -> Vec<&str> {
        self.operators
            .questions
            .iter()
            .enumerate()
            .filter(|(_, q)| q.is_some())
            .map(|(o, _)| self.net.ops[o].name.as_str())
            .collect()
    }

    /// Answers operator `op`'s question with `value`: the operator fires with it when its rule
    /// holds (at once, if it is waiting). An answer given before the operator waits is kept
    /// until then; a second answer before it fires replaces the first. After a backward step
    /// over the firing that used an answer, a forward step replays that firing (same answer);
    /// answer again and [`refire`](Self::refire) to take another branch.
    ///
    /// Refused, changing nothing, when `op` does not exist, asks no question, or `value` is
    /// not of the question's type.
    pub fn provide(&mut self, op: &str, value: Value) -> Result<(), ProvideError> {
        let o = self.asker(op)?;
        if let Some(q) = &self.operators.questions[o]
            && let Err(error) = q.check(&value)
        {
            return Err(ProvideError::Answer {
                op: op.to_owned(),
                error,
            });
        }
        self.net.ops[o].op.answer(value);
        self.refresh(o);
        Ok(())
    }

    /// [`provide`](Self::provide) an answer given as JSON (an API request, an answers file),
    /// read as the question's type ([`Question::from_json`](crate::operator::Question::from_json)).
    pub fn provide_json(&mut self, op: &str, json: serde_json::Value) -> Result<(), ProvideError> {
        let o = self.asker(op)?;
        let value = match &self.operators.questions[o] {
            Some(q) => q.from_json(json),
            None => return Err(self.not_asking(op)),
        }
        .map_err(|error| ProvideError::Answer {
            op: op.to_owned(),
            error,
        })?;
        self.provide(op, value)
    }

    /// [`provide`](Self::provide) an answer typed by a person (`--answer OP=VALUE`, a
    /// terminal prompt), read as the question's type
    /// ([`Question::from_text`](crate::operator::Question::from_text)).
    pub fn provide_text(&mut self, op: &str, text: &str) -> Result<(), ProvideError> {
        let o = self.asker(op)?;
        let value = match &self.operators.questions[o] {
            Some(q) => q.from_text(text),
            None => return Err(self.not_asking(op)),
        }
        .map_err(|error| ProvideError::Answer {
            op: op.to_owned(),
            error,
        })?;
        self.provide(op, value)
    }

    fn asker(&self, op: &str) -> Result<usize, ProvideError> {
        let Some(id) = self.net.op_id(op) else {
            return Err(ProvideError::UnknownOperator {
                op: op.to_owned(),
                asking: self.asking().into_iter().map(str::to_owned).collect(),
            });
        };
        if self.operators.questions[id.index()].is_none() {
            return Err(self.not_asking(op));
        }
        Ok(id.index())
    }

    fn not_asking(&self, op: &str) -> ProvideError {
        ProvideError::NotAsking {
            op: op.to_owned(),
            asking: self.asking().into_iter().map(str::to_owned).collect(),
        }
    }
}
