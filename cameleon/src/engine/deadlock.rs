//! Terminal states and the diagnosis of a deadlock (docs/semantics.md §6).

use super::{Cvm, EndState, Stuck, StuckReason};
use crate::connection::ConnState;
use crate::net::{gather, rule_holds};
use crate::policy::{Enabling, Policy};

impl Cvm {
    /// The terminal state the net is in, if no operator is enabled: `WAITING` when some operator
    /// waits for an answer (docs/semantics.md §6.1), else `COMPLETED` or `DEADLOCK`.
    pub fn terminal_state(&self) -> Option<EndState> {
        if self.marking.enabled.first().is_some() {
            return None;
        }
        if self.marking.waiting.first().is_some() {
            return Some(EndState::Waiting {
                waiting: self.waiting(),
            });
        }
        Some(if self.marking.states.contains(&ConnState::New) {
            EndState::Deadlock {
                stuck: self.stuck(),
            }
        } else {
            EndState::Completed
        })
    }

    /// Each consumer of a NEW connection, and why it is not enabled.
    fn stuck(&self) -> Vec<Stuck> {
        let mut seen = vec![false; self.net.ops.len()];
        let mut out = Vec::new();
        let (mut ins, mut outs) = (Vec::new(), Vec::new());
        for c in 0..self.marking.states.len() {
            if self.marking.states[c] != ConnState::New {
                continue;
            }
            let o = self.operators.topo.consumer[c] as usize;
            if std::mem::replace(&mut seen[o], true) {
                continue;
            }
            let node = &self.net.ops[o];
            gather(
                &self.operators.topo,
                &self.marking.states,
                o,
                &mut ins,
                &mut outs,
            );
            let e = Enabling {
                inputs: &ins,
                outputs: &outs,
                policy: self.operators.topo.policy[o],
            };
            let name = &node.name;
            if rule_holds(&*node.op, &e) {
                for &oc in self.operators.topo.outs(o) {
                    if self.marking.states[oc as usize] == ConnState::New {
                        let conn = &self.net.conns[oc as usize];
                        let port = node.spec.outputs[conn.from.port as usize].name.to_string();
                        out.push(Stuck {
                            message: format!(
                                "`{name}` is blocked: its output `{}` still holds an unconsumed token (back-pressure)",
                                conn.name
                            ),
                            op: name.clone(),
                            input: None,
                            output: Some(port),
                            reason: StuckReason::BackPressure,
                        });
                    }
                }
                continue;
            }
            let policy = self.operators.topo.policy[o];
            let before = out.len();
            for (p, s) in ins.iter().enumerate() {
                let reason = match (s, policy) {
                    (ConnState::Empty, Policy::Any | Policy::All | Policy::Custom) => {
                        StuckReason::Empty
                    }
                    (ConnState::Old, Policy::All) => StuckReason::Old,
                    _ => continue,
                };
                let port = node.spec.inputs[p].name.to_string();
                let message = match reason {
                    StuckReason::Empty => format!(
                        "`{name}` waits on input `{port}`, which is EMPTY (it never received a token)"
                    ),
                    _ => format!(
                        "`{name}` waits on input `{port}`, which is OLD (its `all` policy needs every input NEW)"
                    ),
                };
                out.push(Stuck {
                    op: name.clone(),
                    input: Some(port),
                    output: None,
                    reason,
                    message,
                });
            }
            if out.len() == before {
                out.push(Stuck {
                    op: name.clone(),
                    input: None,
                    output: None,
                    reason: StuckReason::CustomRule,
                    message: format!("`{name}` waits: its firing rule is false"),
                });
            }
        }
        out
    }
}
