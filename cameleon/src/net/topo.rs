//! The net's topology as flat index tables: what the enabling rules, the engine and the verifier
//! walk on every firing (no hashing, no allocation).

use crate::connection::NONE;
use crate::operator::Region;
use crate::policy::Policy;
use crate::types::TypeInfo;

use super::Net;

/// The net's topology, flattened: per operator its input connections and its output ports, per
/// output port its connections, per connection its producer and consumer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Topo {
    /// Per op, start into `in_conn` (len = ops + 1).
    pub(crate) in_start: Vec<u32>,
    /// Per input port: its connection, or NONE (optional, unconnected).
    pub(crate) in_conn: Vec<u32>,
    /// Per op, start into `port_start` (global output port index; len = ops + 1).
    pub(crate) out_start: Vec<u32>,
    /// Per global output port, start into `out_conns` (len = ports + 1).
    pub(crate) port_start: Vec<u32>,
    /// Output connections grouped by port, ports grouped by op.
    pub(crate) out_conns: Vec<u32>,
    /// Per global output port, its resolved type (`None` for `Any`: not checked).
    pub(crate) port_type: Vec<Option<&'static TypeInfo>>,
    /// Per connection: producer op, consumer op, consumer's input port.
    pub(crate) producer: Vec<u32>,
    pub(crate) consumer: Vec<u32>,
    pub(crate) consumer_port: Vec<u16>,
    /// Per connection: its consumer's global input index (into `in_conn`).
    pub(crate) in_slot: Vec<u32>,
    /// Per connection: its producer's global output port index (into `port_start`).
    pub(crate) out_port: Vec<u32>,
    pub(crate) policy: Vec<Policy>,
    /// Per op: bit `p` set when output port `p` (< 64) has a connection.
    pub(crate) out_connected: Vec<u64>,
    /// Per op, start into `cancel_conns` (len = ops + 1): the connections a firing of the op
    /// cancels (docs/semantics.md §10.4). Empty for an operator without a cancellation.
    pub(crate) cancel_start: Vec<u32>,
    pub(crate) cancel_conns: Vec<u32>,
    /// Per op: the output whose emission triggers its cancellation, or `NO_PORT` (every
    /// firing).
    pub(crate) cancel_on: Vec<u16>,
    /// Whether some operator declares a cancellation.
    pub(crate) any_cancel: bool,
}

/// "No output port": a cancellation every firing performs.
pub(crate) const NO_PORT: u16 = u16::MAX;

impl Topo {
    pub(crate) fn new(net: &Net) -> Self {
        let mut t = Topo::default();
        let n_conns = net.conns.len();
        let mut in_of: Vec<Vec<u32>> = net
            .ops
            .iter()
            .map(|o| vec![NONE; o.spec.inputs.len()])
            .collect();
        let mut out_of: Vec<Vec<Vec<u32>>> = net
            .ops
            .iter()
            .map(|o| vec![Vec::new(); o.spec.outputs.len()])
            .collect();
        t.producer = Vec::with_capacity(n_conns);
        for (i, c) in net.conns.iter().enumerate() {
            in_of[c.to.op.index()][c.to.port as usize] = i as u32;
            out_of[c.from.op.index()][c.from.port as usize].push(i as u32);
            t.producer.push(c.from.op.0);
            t.consumer.push(c.to.op.0);
            t.consumer_port.push(c.to.port);
        }
        for (o, node) in net.ops.iter().enumerate() {
            t.in_start.push(t.in_conn.len() as u32);
            t.in_conn.extend(&in_of[o]);
            t.out_start.push(t.port_start.len() as u32);
            for (p, conns) in out_of[o].iter().enumerate() {
                t.port_start.push(t.out_conns.len() as u32);
                t.out_conns.extend(conns);
                let ty = node.out_types[p];
                t.port_type.push((!ty.is_any()).then_some(ty));
            }
            // docs/semantics.md §3: an operator with zero inputs and no custom rule uses `Source`.
            let policy = match node.spec.policy {
                Policy::Custom => Policy::Custom,
                _ if node.spec.inputs.is_empty() => Policy::Source,
                p => p,
            };
            t.policy.push(policy);
            let mut connected = 0u64;
            for (p, conns) in out_of[o].iter().enumerate().take(64) {
                if !conns.is_empty() {
                    connected |= 1 << p;
                }
            }
            t.out_connected.push(connected);
        }
        t.in_start.push(t.in_conn.len() as u32);
        t.out_start.push(t.port_start.len() as u32);
        t.port_start.push(t.out_conns.len() as u32);
        t.in_slot = net
            .conns
            .iter()
            .map(|c| t.in_start[c.to.op.index()] + c.to.port as u32)
            .collect();
        t.out_port = net
            .conns
            .iter()
            .map(|c| t.out_start[c.from.op.index()] + c.from.port as u32)
            .collect();
        for node in &net.ops {
            t.cancel_start.push(t.cancel_conns.len() as u32);
            let Some(cancels) = &node.spec.cancels else {
                t.cancel_on.push(NO_PORT);
                continue;
            };
            t.any_cancel = true;
            t.cancel_on.push(cancels.when.unwrap_or(NO_PORT));
            let start = t.cancel_conns.len();
            match &cancels.region {
                Region::Net => t.cancel_conns.extend(0..n_conns as u32),
                Region::Ops(names) => {
                    for name in names {
                        // Unknown names are reported by validation; a built net has none.
                        let Some(r) = net.ops.iter().position(|o| o.name == *name) else {
                            continue;
                        };
                        let range = t.in_range(r);
                        for i in range {
                            let c = t.in_conn[i];
                            if c != NONE && !t.cancel_conns[start..].contains(&c) {
                                t.cancel_conns.push(c);
                            }
                        }
                    }
                }
            }
        }
        t.cancel_start.push(t.cancel_conns.len() as u32);
        t
    }

    /// The connections a firing of op `o` cancels (docs/semantics.md §10.4).
    #[inline]
    pub(crate) fn cancels(&self, o: usize) -> &[u32] {
        &self.cancel_conns[self.cancel_start[o] as usize..self.cancel_start[o + 1] as usize]
    }

    /// Op `o`'s range in per-input-port tables.
    #[inline]
    pub(crate) fn in_range(&self, o: usize) -> std::ops::Range<usize> {
        self.in_start[o] as usize..self.in_start[o + 1] as usize
    }

    /// Op `o`'s range in per-output-port tables.
    #[inline]
    pub(crate) fn out_range(&self, o: usize) -> std::ops::Range<usize> {
        self.out_start[o] as usize..self.out_start[o + 1] as usize
    }

    #[inline]
    pub(crate) fn ins(&self, o: usize) -> &[u32] {
        &self.in_conn[self.in_start[o] as usize..self.in_start[o + 1] as usize]
    }

    #[inline]
    pub(crate) fn n_outputs(&self, o: usize) -> usize {
        (self.out_start[o + 1] - self.out_start[o]) as usize
    }

    /// Every output connection of op `o`.
    #[inline]
    pub(crate) fn outs(&self, o: usize) -> &[u32] {
        let a = self.port_start[self.out_start[o] as usize] as usize;
        let b = self.port_start[self.out_start[o + 1] as usize] as usize;
        &self.out_conns[a..b]
    }

    /// The connections of output port `p` of op `o`.
    #[inline]
    pub(crate) fn port_conns(&self, o: usize, p: usize) -> &[u32] {
        let gp = self.out_start[o] as usize + p;
        &self.out_conns[self.port_start[gp] as usize..self.port_start[gp + 1] as usize]
    }
}
