//! Mapping a run's marking from net OLD onto net NEW (docs/migration.md): tokens by connection
//! identity (`from.op.port -> to.op.port` and its data type), operator states by operator id
//! and type, both through the renames given.

use serde::Serialize;

use crate::history::{ConnRecord, MarkingRecord, StateRecord};
use crate::net::Net;
use crate::verify::{map_connections, renamed};

/// A marking of OLD mapped onto NEW.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Mapped {
    /// The marking on NEW (its names).
    #[serde(skip)]
    pub marking: MarkingRecord,
    /// The connections whose token moves (their NEW names).
    pub moved: Vec<String>,
    /// The operators whose state is carried (their NEW ids).
    pub carried: Vec<String>,
    /// What is left behind: the states of operators NEW lacks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<String>,
}

/// Maps marking `m` of `old` onto `new`. `Err`: everything that cannot move — a token
/// (consumed or not) on a connection NEW lacks or whose type changed, a state of an operator whose type
/// changed or that does not read back as NEW's operator's state — each naming the connection
/// or the operator.
pub fn map_marking(
    old: &Net,
    new: &Net,
    m: &MarkingRecord,
    renames: &[(String, String)],
) -> Result<Mapped, Vec<String>> {
    let conns = map_connections(old, new, renames);
    let mut out = Mapped::default();
    let mut cannot = Vec::new();
    for cr in &m.conns {
        let Some(c) = old.conn_id(&cr.conn) else {
            cannot.push(format!(
                "the token on `{}`: OLD has no such connection",
                cr.conn
            ));
            continue;
        };
        match (&conns[c.index()], cr.new) {
            (Ok(t), _) => {
                let name = new.connections()[*t].name.clone();
                out.moved.push(name.clone());
                out.marking.conns.push(ConnRecord {
                    conn: name,
                    ..cr.clone()
                });
            }
            // A consumed token too: it is the record that the work before it was done (left
            // behind, a finished run would map onto NEW's initial marking and start again).
            (Err(why), new) => cannot.push(format!(
                "the {} token on `{}`: {why}",
                if new { "unconsumed" } else { "consumed" },
                cr.conn
            )),
        }
    }
    for sr in &m.states {
        let id = renamed(&sr.op, renames);
        let Some(o) = new.op_id(&id) else {
            out.left
                .push(format!("the state of `{}` (NEW has no `{id}`)", sr.op));
            continue;
        };
        let node = new.op(o);
        if node.spec.type_id != sr.ty {
            cannot.push(format!(
                "the state of `{}`: it is a `{}` in OLD, a `{}` in NEW",
                sr.op, sr.ty, node.spec.type_id
            ));
            continue;
        }
        if let Err(e) = crate::operator::read_state(node.operator(), sr.state.clone()) {
            cannot.push(format!(
                "the state of `{}`: it does not read back as NEW's `{id}`'s: {e}",
                sr.op
            ));
            continue;
        }
        out.carried.push(id.clone());
        out.marking.states.push(StateRecord {
            op: id,
            ..sr.clone()
        });
    }
    if cannot.is_empty() {
        Ok(out)
    } else {
        Err(cannot)
    }
}

/// Parses `old=new` renames, each naming an operator of `old` and one of `new`. `Err`: the
/// first that does not.
pub fn parse_renames(
    given: &[String],
    old: &Net,
    new: &Net,
) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in given {
        let Some((a, b)) = r.split_once('=') else {
            return Err(format!("--rename `{r}`: expected OLD_ID=NEW_ID"));
        };
        let (a, b) = (a.trim(), b.trim());
        if old.op_id(a).is_none() {
            return Err(format!(
                "--rename `{r}`: the run's net has no operator `{a}`"
            ));
        }
        if new.op_id(b).is_none() {
            return Err(format!("--rename `{r}`: the new net has no operator `{b}`"));
        }
        if out.iter().any(|(x, _)| x == a) {
            return Err(format!("--rename `{r}`: `{a}` is renamed twice"));
        }
        out.push((a.to_owned(), b.to_owned()));
    }
    Ok(out)
}
