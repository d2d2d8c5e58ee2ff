//! What a run lends the tools it calls ([`Caller`]), so a net offered as a tool runs with its
//! caller's capabilities generation and meter, under the caller's policy intersected with its
//! own (docs/tools.md#nets-as-tools); and how a generation gets the nets its capabilities files
//! offer as tools ([`NetEntry`], [`NetToolMaker`]).

use std::path::PathBuf;
use std::sync::Arc;

use super::{CapabilitiesError, Generation, RunCapabilities};
use crate::net::ToolPolicy;
use crate::operator::capability::Meter;
use crate::tools::{Tool, ToolGate, ToolRegistry};

/// How deep net-tools may call net-tools when a `nets:` entry does not say (`max_depth`): a
/// call that would make the chain of nets running as tools longer is an `error` result naming
/// the chain.
pub const DEFAULT_MAX_DEPTH: u32 = 4;

/// A net a capabilities file offers as a tool (`nets: {NAME: FILE}`, or `{NAME: {file,
/// max_depth}}`): the tool's name, the `.cm` file (inside the capabilities file's folder), the
/// longest chain of net-tools it may end, and where it was configured (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetEntry {
    /// The tool's name.
    pub name: String,
    /// The `.cm` file, resolved.
    pub file: PathBuf,
    /// The longest chain of nets running as tools a call of this one may end.
    pub max_depth: u32,
    /// Where it was configured (`` `cameleon.yaml` line 4 ``).
    pub from: String,
}

/// Makes the tool of a [`NetEntry`], checked against the tools loaded so far, or says why the
/// net is not offered.
pub type MakeNetTool = fn(&NetEntry, &Arc<ToolRegistry>) -> Result<Arc<dyn Tool>, String>;

/// The names among `names` (the nets listed under `nets:`) that the net of a [`NetEntry`] may
/// call — those its `tools:` lists or its operators name — read against the tools of the
/// [`ToolRegistry`] (nothing verified; a net that does not load names none).
pub type NetToolCalls = fn(&NetEntry, &Arc<ToolRegistry>, &[String]) -> Vec<String>;

/// What turns a [`NetEntry`] into a tool of a generation — checked (`check --verify` must hold)
/// against the tools loaded so far — and says which other nets it may call, so each is made
/// after those. Submitted once, by the `nets` module ([`NetTool`](crate::nets::NetTool)); a
/// generation whose sources list nets without one fails to build.
#[derive(Clone, Copy, Debug)]
pub struct NetToolMaker {
    /// Makes the tool, or says why the net is not offered.
    pub make: MakeNetTool,
    /// The other nets it may call.
    pub calls: NetToolCalls,
}

inventory::collect!(NetToolMaker);

/// `base` plus the tools of `nets`, each loaded against the tools before it in an order where
/// every net comes after the nets it may call (whatever order they are listed in). `Err`: the
/// first net not offered, why — nets that may call each other in a cycle are not offered,
/// the cycle named.
pub(super) fn with_nets(
    base: &Arc<ToolRegistry>,
    nets: &[NetEntry],
) -> Result<Arc<ToolRegistry>, CapabilitiesError> {
    let Some(maker) = inventory::iter::<NetToolMaker>.into_iter().next() else {
        return Err(CapabilitiesError::Source {
            source_name: nets[0].from.clone(),
            message: "this program cannot offer nets as tools (no net-tool maker is linked in)"
                .into(),
        });
    };
    let names: Vec<String> = nets.iter().map(|n| n.name.clone()).collect();
    let calls: Vec<Vec<usize>> = nets
        .iter()
        .map(|n| {
            (maker.calls)(n, base, &names)
                .iter()
                .filter_map(|c| names.iter().position(|x| x == c))
                .collect()
        })
        .collect();
    let order = callees_first(&calls).map_err(|cycle| {
        let first = &nets[cycle[0]];
        let mut path: Vec<&str> = cycle.iter().map(|&i| nets[i].name.as_str()).collect();
        path.push(&first.name);
        CapabilitiesError::Net {
            name: first.name.clone(),
            from: first.from.clone(),
            message: format!(
                "net-tools may call each other in a cycle: {} (each lists the next in its `tools:` or names it in an operator); a net-tool may call the other nets of `nets:` but not itself, directly or through others",
                path.join(" → ")
            ),
        }
    })?;
    let mut r = ToolRegistry::new();
    r.extend_from(base);
    for i in order {
        let n = &nets[i];
        let so_far = {
            let mut s = ToolRegistry::new();
            s.extend_from(&r);
            Arc::new(s)
        };
        let tool = (maker.make)(n, &so_far).map_err(|message| CapabilitiesError::Net {
            name: n.name.clone(),
            from: n.from.clone(),
            message,
        })?;
        r.replace(tool);
    }
    Ok(Arc::new(r))
}

/// An order of the nodes `0..calls.len()` where each comes after the nodes it calls
/// (`calls[i]`), keeping the listed order where it can. `Err`: a cycle, as the nodes in it from
/// the first listed one.
fn callees_first(calls: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Visit {
        New,
        Open,
        Done,
    }
    fn visit(
        i: usize,
        calls: &[Vec<usize>],
        marks: &mut [Visit],
        path: &mut Vec<usize>,
        out: &mut Vec<usize>,
    ) -> Result<(), Vec<usize>> {
        match marks[i] {
            Visit::Done => return Ok(()),
            Visit::Open => {
                let at = path.iter().position(|&p| p == i).unwrap_or(0);
                return Err(path[at..].to_vec());
            }
            Visit::New => {}
        }
        marks[i] = Visit::Open;
        path.push(i);
        for &c in &calls[i] {
            visit(c, calls, marks, path, out)?;
        }
        path.pop();
        marks[i] = Visit::Done;
        out.push(i);
        Ok(())
    }
    let mut marks = vec![Visit::New; calls.len()];
    let mut out = Vec::with_capacity(calls.len());
    for i in 0..calls.len() {
        visit(i, calls, &mut marks, &mut Vec::new(), &mut out)?;
    }
    Ok(out)
}

/// What a run lends the tools it calls through its gate ([`ToolGate::caller`]): its generation,
/// its meter (budget and spending), what its gate lets through, and the chain of nets running
/// as tools it is in. A net offered as a tool ([`NetTool`](crate::nets::NetTool)) reads it from
/// its call's [`ToolContext::caller`](crate::tools::ToolContext::caller).
#[derive(Debug)]
pub struct Caller {
    generation: Arc<Generation>,
    meter: Arc<Meter>,
    /// What the calling gate lets through; `None`: any tool (the user's own `cameleon call`).
    policy: Option<ToolPolicy>,
    /// The nets running as tools this caller is in, outermost first.
    chain: Vec<String>,
}

impl Caller {
    pub(super) fn new(
        generation: Arc<Generation>,
        meter: Arc<Meter>,
        policy: Option<ToolPolicy>,
        chain: Vec<String>,
    ) -> Self {
        Caller {
            generation,
            meter,
            policy,
            chain,
        }
    }

    /// The caller's generation.
    pub fn generation(&self) -> &Arc<Generation> {
        &self.generation
    }

    /// The nets running as tools the caller is in, outermost first (empty: a run of its own).
    pub fn chain(&self) -> &[String] {
        &self.chain
    }

    /// The capabilities of net-tool `tool`'s run for this caller: the same generation and
    /// meter (so its model requests count toward the caller's budget), a gate applying the
    /// caller's policy intersected with the net's own `tools:` (`policy`), the generation's
    /// grants, file tools confined to `base_dir`; its own calls lend the chain one longer.
    pub fn nested(
        &self,
        tool: &str,
        policy: Option<&ToolPolicy>,
        base_dir: impl Into<PathBuf>,
    ) -> Arc<RunCapabilities> {
        let policy = intersect(self.policy.as_ref(), policy);
        let mut chain = self.chain.clone();
        chain.push(tool.to_owned());
        let g = &self.generation;
        let inner = Caller::new(
            Arc::clone(g),
            Arc::clone(&self.meter),
            Some(policy.clone().unwrap_or_default()),
            chain,
        );
        let gate = ToolGate::new(Arc::clone(g.tools()), policy.as_ref(), base_dir)
            .grants(g.grants.keys().cloned())
            .caller(Arc::new(inner));
        Arc::new(RunCapabilities {
            generation: Arc::clone(g),
            gate,
            meter: Arc::clone(&self.meter),
        })
    }
}

/// The policy of a net run as a tool: what both the caller's gate (`None`: anything) and the
/// net's `tools:` (`None`: nothing) let through — `allow` where both allow, `approve` where both
/// let the tool through and one asks a person first.
///
/// ```
/// # use cameleon::net::ToolPolicy;
/// # use cameleon::capabilities::intersect;
/// let caller = ToolPolicy { allow: vec!["calc".into(), "read_file".into()], approve: vec!["write_file".into()] };
/// let inner = ToolPolicy { allow: vec!["calc".into(), "write_file".into(), "list_dir".into()], approve: vec!["read_file".into()] };
/// let p = intersect(Some(&caller), Some(&inner)).unwrap();
/// assert_eq!(p.allow, ["calc"]);
/// assert_eq!(p.approve, ["write_file", "read_file"]);
/// assert_eq!(intersect(Some(&caller), None), None);
/// ```
pub fn intersect(caller: Option<&ToolPolicy>, inner: Option<&ToolPolicy>) -> Option<ToolPolicy> {
    let inner = inner?;
    let Some(c) = caller else {
        return Some(inner.clone());
    };
    let through = |t: &String| c.allow.contains(t) || c.approve.contains(t);
    let allow: Vec<String> = inner
        .allow
        .iter()
        .filter(|t| c.allow.contains(t))
        .cloned()
        .collect();
    let approve: Vec<String> = inner
        .allow
        .iter()
        .filter(|t| c.approve.contains(t))
        .chain(inner.approve.iter().filter(|t| through(t)))
        .cloned()
        .collect();
    Some(ToolPolicy { allow, approve })
}

#[cfg(test)]
mod tests {
    use super::callees_first;

    #[test]
    fn nets_come_after_the_nets_they_call_and_a_cycle_is_named() {
        // 0 calls 2, 2 calls 1: 1, 2, 0.
        assert_eq!(
            callees_first(&[vec![2], vec![], vec![1]]),
            Ok(vec![1, 2, 0])
        );
        // Listed order kept where nothing calls anything.
        assert_eq!(callees_first(&[vec![], vec![], vec![]]), Ok(vec![0, 1, 2]));
        // 0 → 1 → 2 → 1: the cycle 1 → 2.
        assert_eq!(callees_first(&[vec![1], vec![2], vec![1]]), Err(vec![1, 2]));
        // A net calling itself.
        assert_eq!(callees_first(&[vec![0]]), Err(vec![0]));
    }
}
