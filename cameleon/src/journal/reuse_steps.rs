//! Recorded runs held in memory as the source of a run that reuses their firings
//! (docs/semantics.md §5.9), for a store with no index of its own (the JetStream store of
//! `cameleon-nats`, docs/journal.md "Reuse from JetStream"): the runs' entries are read once,
//! when the source is made; their keys go into a hash index, and the bodies of the entries that
//! hold keys are kept to decode a hit's firing.
//!
//! A miss is one hash probe; a hit decodes one firing of one body in memory. The cost is paid
//! up front — reading every entry of the runs named — and in memory — the bodies of the entries
//! with reusable firings. As with [`super::ReuseJournal`], firings recorded after the source
//! was made are not found, the entries are untrusted input (a record that does not read back
//! is a miss: the operator runs) and a key recorded by several runs points to the newest run's
//! firing, the first of it.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::EncodedStep;
use super::codec;
use super::reuse::KeyHasher;
use crate::engine::{FiringKey, RecordedFiring, ReuseSource};

/// Where a key points: the run (its index, oldest first), the entry (its index among the
/// entries kept), the firing's index in the step, and the ports of its tokens.
#[derive(Clone, Debug)]
struct Loc {
    run: u32,
    entry: u32,
    firing: u32,
    ports: Box<[Option<u16>]>,
}

/// An entry kept for its firings: its step and its body.
#[derive(Debug)]
struct Kept {
    step: u32,
    body: Box<str>,
}

/// Runs' recorded firings, indexed by key in memory.
pub struct StepsReuse {
    store: String,
    /// Run ids, oldest first.
    runs: Vec<String>,
    entries: Vec<Kept>,
    index: HashMap<FiringKey, Loc, BuildHasherDefault<KeyHasher>>,
}

impl std::fmt::Debug for StepsReuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepsReuse")
            .field("store", &self.store)
            .field("runs", &self.runs.len())
            .field("keys", &self.index.len())
            .finish_non_exhaustive()
    }
}

impl StepsReuse {
    /// Indexes `runs` — each run's id and its entries in node order — given oldest first;
    /// `store` names the store in errors.
    pub fn new(store: impl Into<String>, runs: Vec<(String, Vec<EncodedStep>)>) -> StepsReuse {
        let mut out = StepsReuse {
            store: store.into(),
            runs: Vec::with_capacity(runs.len()),
            entries: Vec::new(),
            index: HashMap::default(),
        };
        for (r, (id, steps)) in runs.into_iter().enumerate() {
            let run = u32::try_from(r).unwrap_or(u32::MAX);
            out.runs.push(id);
            for s in steps {
                let Some(keys) = s.keys.as_deref() else {
                    continue;
                };
                let found = codec::read_keys(keys);
                if found.is_empty() {
                    continue;
                }
                let entry = u32::try_from(out.entries.len()).unwrap_or(u32::MAX);
                for (key, firing, ports) in found {
                    let loc = Loc {
                        run,
                        entry,
                        firing,
                        ports: ports.into(),
                    };
                    // A later run's firing replaces; within a run, the first stays.
                    match out.index.get_mut(&key) {
                        Some(old) if old.run >= loc.run => {}
                        Some(old) => *old = loc,
                        None => {
                            out.index.insert(key, loc);
                        }
                    }
                }
                out.entries.push(Kept {
                    step: s.step,
                    body: s.body.into_boxed_str(),
                });
            }
        }
        out
    }

    /// How many keys the index holds.
    pub fn keys(&self) -> usize {
        self.index.len()
    }
}

impl ReuseSource for StepsReuse {
    fn find(&self, key: FiringKey) -> Result<Option<RecordedFiring>, String> {
        let Some(l) = self.index.get(&key) else {
            return Ok(None);
        };
        let (Some(kept), Some(run)) = (
            self.entries.get(l.entry as usize),
            self.runs.get(l.run as usize),
        ) else {
            return Ok(None);
        };
        let part = codec::decode_firing(&kept.body, l.firing)
            .map_err(|e| format!("cannot read a recorded firing of `{}`: {e}", self.store))?;
        let Some(firing) = part else {
            return Ok(None);
        };
        Ok(super::reuse::recorded(run, kept.step, firing, &l.ports))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `keys` of one firing (index `firing`, its tokens on `ports`), as the encoder writes
    /// them.
    fn keys(key: FiringKey, firing: u32, ports: &[u16]) -> Vec<u8> {
        let mut b = key.to_be_bytes().to_vec();
        b.extend_from_slice(&firing.to_le_bytes());
        b.extend_from_slice(&(ports.len() as u32).to_le_bytes());
        for p in ports {
            b.extend_from_slice(&p.to_le_bytes());
        }
        b
    }

    fn step(node: u32, value: i64, keys: Option<Vec<u8>>) -> EncodedStep {
        EncodedStep {
            node,
            parent: node.checked_sub(1),
            step: node + 1,
            branch: 1,
            ops: r#"["inc"]"#.into(),
            body: format!(
                r#"{{"parent":null,"firings":[{{"op":0,"tokens":[{{"type":"DataInt","value":{value}}}],"after":{{"n":{value}}}}}]}}"#
            ),
            keys,
        }
    }

    #[test]
    fn a_key_finds_the_newest_runs_first_firing_and_a_miss_finds_nothing() {
        let old = vec![step(0, 1, Some(keys(7, 0, &[0]))), step(1, 2, None)];
        let new = vec![
            step(0, 3, None),
            step(1, 4, Some(keys(7, 0, &[0]))),
            step(2, 5, Some(keys(7, 0, &[0]))),
            step(3, 6, Some(keys(8, 0, &[0]))),
        ];
        let r = StepsReuse::new("nats://x", vec![("old".into(), old), ("new".into(), new)]);
        assert_eq!(r.keys(), 2);
        let hit = r.find(7).unwrap().expect("a hit");
        assert_eq!((hit.from.run.as_str(), hit.from.step), ("new", 2));
        assert_eq!(hit.emitted.len(), 1);
        assert_eq!(hit.emitted[0].0, 0);
        assert_eq!(hit.after, Some(serde_json::json!({"n": 4})));
        assert!(r.find(9).unwrap().is_none());
        // Ports that do not match the recorded tokens: a miss, not an error.
        let bad = vec![step(0, 1, Some(keys(5, 0, &[0, 1])))];
        let r = StepsReuse::new("nats://x", vec![("r".into(), bad)]);
        assert!(r.find(5).unwrap().is_none());
    }
}
