//! Answers to the questions of `ask` operators (docs/semantics.md §6.1) given on the command
//! line: `--answer OP=VALUE` (repeatable; an `ask` that asks several times takes them in order),
//! `--answers FILE.json` (`{"OP": VALUE, …}`, each value in its JSON form), and, when standard
//! input is a terminal, a prompt for each question still unanswered.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};
use std::path::Path;

use serde_json::Value as Json;

use cameleon::engine::{Cvm, Waiting};

/// One answer as given: typed text (`--answer`, the prompt) or JSON (`--answers`).
#[derive(Clone, Debug)]
enum Given {
    Text(String),
    Json(Json),
}

/// The answers given on the command line, per operator, in order.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    queue: BTreeMap<String, VecDeque<Given>>,
}

impl Answers {
    /// Reads `--answer OP=VALUE`s, then the `--answers` file; what is wrong, as a sentence.
    pub(crate) fn from_args(answer: &[String], file: Option<&Path>) -> Result<Self, String> {
        let mut a = Answers::default();
        for arg in answer {
            let Some((op, value)) = arg.split_once('=') else {
                return Err(format!(
                    "`--answer {arg}` has no `=`: write `--answer OP=VALUE`, e.g. `--answer approve=yes`"
                ));
            };
            a.push(op.trim(), Given::Text(value.to_owned()));
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the answers file `{}`: {e}", path.display()))?;
            let json: Json = serde_json::from_str(&text)
                .map_err(|e| format!("the answers file `{}` is not JSON: {e}", path.display()))?;
            let Json::Object(map) = json else {
                return Err(format!(
                    "the answers file `{}` must hold one JSON object, {{\"OP\": VALUE, …}}",
                    path.display()
                ));
            };
            for (op, value) in map {
                a.push(&op, Given::Json(value));
            }
        }
        Ok(a)
    }

    fn push(&mut self, op: &str, g: Given) {
        self.queue.entry(op.to_owned()).or_default().push_back(g);
    }

    /// Checks every answer against its question (the operator exists, asks, and the value has
    /// the question's type) before anything runs.
    pub(crate) fn check(&self, cvm: &Cvm) -> Result<(), String> {
        for (op, given) in &self.queue {
            let Some(q) = cvm.question(op) else {
                let asking = cvm.asking();
                let hint = if asking.is_empty() {
                    "this net has no `ask` operator".to_owned()
                } else {
                    format!("the operators that ask are: {}", asking.join(", "))
                };
                return Err(format!(
                    "cannot answer `{op}`: it asks no question ({hint})"
                ));
            };
            for g in given {
                let r = match g {
                    Given::Text(t) => q.from_text(t),
                    Given::Json(j) => q.from_json(j.clone()),
                };
                if let Err(e) = r {
                    return Err(format!("wrong answer for `{op}` ({}): {e}", q.prompt));
                }
            }
        }
        Ok(())
    }

    /// Gives each operator of `ops` its next answer, if one is left; returns whether any was
    /// given.
    pub(crate) fn provide(&mut self, cvm: &mut Cvm, ops: &[String]) -> Result<bool, String> {
        let mut any = false;
        for op in ops {
            let Some(g) = self.queue.get_mut(op).and_then(VecDeque::pop_front) else {
                continue;
            };
            let r = match g {
                Given::Text(t) => cvm.provide_text(op, &t),
                Given::Json(j) => cvm.provide_json(op, j),
            };
            r.map_err(|e| e.to_string())?;
            any = true;
        }
        Ok(any)
    }

    /// Every operator that has answers left.
    pub(crate) fn ops(&self) -> Vec<String> {
        self.queue
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(op, _)| op.clone())
            .collect()
    }
}

/// Asks each waiting question on the terminal (`stderr` for the question, `stdin` for the
/// answer) until it gets an answer of the right type; an empty line or the end of input leaves
/// the rest unanswered. Returns whether any answer was given.
pub(crate) fn prompt(
    cvm: &mut Cvm,
    waiting: &[Waiting],
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> std::io::Result<bool> {
    let mut any = false;
    for w in waiting {
        if let Some(context) = context_of(cvm, &w.op) {
            writeln!(stderr, "\n`{}` shows: {context}", w.op)?;
        }
        loop {
            let hint = match w.ty.name {
                "DataBool" => " [yes/no]",
                "DataJSON" => " [JSON]",
                _ => "",
            };
            write!(stderr, "{}{hint} (`{}`, empty to stop): ", w.prompt, w.op)?;
            stderr.flush()?;
            let Some(line) = read_line(stdin)? else {
                return Ok(any);
            };
            if line.is_empty() {
                return Ok(any);
            }
            match cvm.provide_text(&w.op, &line) {
                Ok(()) => {
                    any = true;
                    break;
                }
                Err(e) => writeln!(stderr, "{e}")?,
            }
        }
    }
    Ok(any)
}

/// The value on the first input of operator `op` (an `ask`'s `in_context`), as JSON text.
fn context_of(cvm: &Cvm, op: &str) -> Option<String> {
    context_value(cvm, op).map(|v| v.to_json().to_string())
}

/// The value on the first input of operator `op` (an `ask`'s `in_context`).
pub(crate) fn context_value<'a>(cvm: &'a Cvm, op: &str) -> Option<&'a cameleon::Value> {
    let id = cvm.net().op_id(op)?;
    let conn = cvm
        .net()
        .connections()
        .iter()
        .position(|c| c.to.op == id && c.to.port == 0)?;
    let token = cvm.conn(cameleon::connection::ConnId(conn as u32)).token;
    token.map(|t| &t.value)
}

/// One line of `r` without its line ending; `None` at the end of input.
fn read_line(r: &mut dyn Read) -> std::io::Result<Option<String>> {
    let mut bytes = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match r.read(&mut b)? {
            0 if bytes.is_empty() => return Ok(None),
            0 => break,
            _ if b[0] == b'\n' => break,
            _ => bytes.push(b[0]),
        }
    }
    let line = String::from_utf8_lossy(&bytes);
    Ok(Some(line.trim_end_matches('\r').trim().to_owned()))
}
