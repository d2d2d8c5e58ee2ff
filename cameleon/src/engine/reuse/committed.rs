//! The reuse key of a committed firing, as a journal records it (docs/semantics.md §5.9): the
//! same key the engine looks up before a firing, computed after the fact from the history, with
//! the digests of the values the journal already wrote kept in a [`KeyCache`].

use super::super::record::CommittedFiring;
use super::{FiringKey, Fixed, fixed, key, token, value_digest, write_state};
use crate::connection::{NONE, Token};

/// What a journal writes of each committed firing so a later run can reuse it: the key and
/// the output port of each emitted token. Keeps each operator's fixed part, and the digest of
/// each value the journal wrote (by token index, with the value: a token index reused after a
/// backward step holds another value, and its digest is computed again).
#[derive(Debug, Default)]
pub struct KeyCache {
    fixed: Vec<Option<Option<Fixed>>>,
    values: Vec<Option<(crate::types::Value, u128)>>,
    buf: Vec<u8>,
    digests: Vec<Option<u128>>,
}

impl KeyCache {
    /// An empty cache.
    pub fn new() -> Self {
        KeyCache::default()
    }

    /// Whether some operator of `cvm`'s net may be reused (has a fixed part of a key): when
    /// none does, no firing of the net has a reuse key.
    pub fn any_keyed(&mut self, cvm: &crate::engine::Cvm) -> bool {
        let n = cvm.net.ops.len();
        if self.fixed.len() < n {
            self.fixed.resize(n, None);
        }
        let mut any = false;
        for (o, node) in cvm.net.ops.iter().enumerate() {
            let f = self.fixed[o].get_or_insert_with(|| {
                fixed(
                    &*node.op,
                    &node.spec,
                    cvm.operators.topo.out_connected[o],
                    &*cvm.context.capabilities,
                )
            });
            any |= f.is_some();
        }
        any
    }

    /// Keeps the digest of token `index`, emitted by `firing`, whose value the journal wrote as
    /// `json` — unless the operator reading it is known not to be reusable (a key is computed
    /// only from the inputs of an operator that is; a token written to no connection is no
    /// one's input).
    pub fn wrote_value(
        &mut self,
        firing: &CommittedFiring<'_>,
        index: u32,
        token: &Token,
        json: &[u8],
    ) {
        let net = &firing.cvm().net;
        let reader = firing
            .written()
            .find(|(_, _, new)| *new == index)
            .map(|(c, _, _)| net.conns[c.index()].to.op.index());
        let Some(reader) = reader else { return };
        if let Some(Some(None)) = self.fixed.get(reader) {
            return;
        }
        let i = index as usize;
        if self.values.len() <= i {
            self.values.resize(i + 1, None);
        }
        self.values[i] = Some((token.value.clone(), value_digest(token.type_name(), json)));
    }
}

/// The digest of token `index` (`token`): kept by [`KeyCache::wrote_value`] when it still holds
/// that value, else computed into `buf`.
fn digest_of(
    values: &[Option<(crate::types::Value, u128)>],
    buf: &mut Vec<u8>,
    index: u32,
    token: &Token,
) -> Option<u128> {
    if let Some(Some((v, d))) = values.get(index as usize)
        && crate::types::Value::ptr_eq(v, &token.value)
    {
        return Some(*d);
    }
    buf.clear();
    token.value.write_json(buf).ok()?;
    Some(value_digest(token.type_name(), buf))
}

impl CommittedFiring<'_> {
    /// The firing's reuse key, if its operator may be reused (see the module); `before`: the
    /// JSON of its state before, as the journal wrote it.
    pub fn reuse_key(&self, cache: &mut KeyCache, before: Option<&[u8]>) -> Option<FiringKey> {
        let cvm = self.cvm();
        let o = self.op().index();
        let KeyCache {
            fixed: all,
            values,
            buf,
            digests,
        } = cache;
        if all.len() <= o {
            all.resize(o + 1, None);
        }
        let node = &cvm.net.ops[o];
        let fixed = all[o]
            .get_or_insert_with(|| {
                fixed(
                    &*node.op,
                    &node.spec,
                    cvm.operators.topo.out_connected[o],
                    &*cvm.context.capabilities,
                )
            })
            .as_ref()?;
        // Computed before the firing, by the hook (what a memory held then is part of it).
        if let Some(k) = cvm.history.key_of(self.firing_index()) {
            return Some(k);
        }
        if !fixed.memories.is_empty() {
            return None;
        }
        let mut state = Vec::new();
        let before = match (before, self.before()) {
            (Some(b), _) => Some(b),
            (None, Some(s)) => {
                write_state(s, &mut state).ok()?;
                Some(&state[..])
            }
            (None, None) => None,
        };
        // The inputs as the firing read them: a connection some firing of this step wrote held
        // the token that write replaced.
        let n = self.node_index();
        let h = &cvm.history;
        let written_in_step = |c: u32| {
            h.firing_range(n)
                .flat_map(|f| h.written_range(f))
                .map(|i| h.written[i])
                .find(|w| w.conn == c)
                .map(|w| w.prior_tok)
        };
        digests.clear();
        for &c in cvm.operators.topo.ins(o) {
            if c == NONE {
                digests.push(None);
                continue;
            }
            let t = written_in_step(c).unwrap_or(cvm.marking.token_of[c as usize]);
            digests.push(match token(&cvm.marking.tokens, t) {
                Some(tok) => Some(digest_of(values, buf, t, tok)?),
                None => None,
            });
        }
        key(
            fixed,
            before,
            digests.iter().copied(),
            &*cvm.context.capabilities,
        )
    }

    /// The output port of each token the firing emitted, in emission order (`None`: written to
    /// no connection).
    pub fn token_ports(&self) -> Vec<Option<u16>> {
        let cvm = self.cvm();
        self.tokens()
            .map(|(t, _)| {
                self.written()
                    .find(|(_, _, new)| *new == t)
                    .map(|(c, _, _)| cvm.net.conns[c.index()].from.port)
            })
            .collect()
    }
}
