//! Reuse across runs (docs/cli.md): the journal argument of `run --reuse`, `cameleon diff`
//! (where two recorded runs part) and `cameleon test` (a net re-run against a recorded run,
//! every model, embedder and tool call answered from the record).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value as Json, json};

use super::{DiffArgs, Io, TestArgs, exit, report_invalid};
use cameleon::capabilities::CapabilitiesError;
use cameleon::cm::folder_of;
use cameleon::engine::{Cvm, EndState, Reuse, ReuseSource};
use cameleon::journal::{Journal, JournalError, ReuseJournal};

use crate::satellite::NatsArgs;

/// `diff`'s help after its options.
pub(super) const DIFF_HELP: &str = "\
Firings are matched per operator: the k-th firing of an operator in RUN_A against its k-th in
RUN_B. Equal: the same params, inputs and outputs; changed: not; new: only in RUN_B; removed: only in
RUN_A. No operator runs.

Exit codes: 0 the same firings, 1 different, 2 invalid (not a journal, an unknown run id).

Examples:
  cameleon diff runs.db 0193… 0194…
  cameleon diff runs.db 0193… 0194… --json
  cameleon diff nats://10.0.0.5:4222 0193… 0194…   # a journal on NATS JetStream";

/// `test`'s help after its options.
pub(super) const TEST_HELP: &str = "\
Every model, embedder and tool call must find a recorded firing with the same key in run
RUN_ID of DB (`run --journal DB` recorded it): none is made, so the test runs offline, the same
every time, for free. A call without one fails, naming it (`answer` would call model `default`:
no recorded answer for these inputs). Operators that call nothing run as usual.

Exit codes: 0 every sink received what it received in the recorded run, 1 a sink differs or a
call has no recorded answer (the first differing firing is shown), 2 invalid (the file, the
journal, the run id).

Examples:
  cameleon run rag.cm --journal golden.db          # once, with the models
  cameleon test rag.cm --against golden.db 0193…   # then, offline, after each change
  cameleon test rag.cm --against nats://10.0.0.5:4222 0193…   # a run on NATS JetStream";

/// Where recorded runs are: a journal file, or a journal on NATS JetStream (its URL).
#[derive(Debug)]
pub(super) enum Source {
    File(PathBuf),
    Bus(String),
}

/// A journal argument: a file path, or a `nats://` (`tls://`) URL; `PATH:RUN_ID` or
/// `nats://HOST:PORT:RUN_ID` where a run is meant. Returns the store and the run id.
pub(super) fn journal_arg(arg: &str) -> Result<(Source, Option<String>), String> {
    if let Some((url, run)) = crate::bus::split_run(arg) {
        return Ok((Source::Bus(url.to_owned()), run.map(str::to_owned)));
    }
    if arg.contains("://") {
        return Err(format!(
            "`{arg}`: not a journal file, nor a `nats://` or `tls://` URL of a journal on NATS JetStream"
        ));
    }
    if Path::new(arg).exists() {
        return Ok((Source::File(PathBuf::from(arg)), None));
    }
    match arg.rsplit_once(':') {
        Some((path, id)) if !path.is_empty() && !id.is_empty() && Path::new(path).exists() => {
            Ok((Source::File(PathBuf::from(path)), Some(id.to_owned())))
        }
        _ => Ok((Source::File(PathBuf::from(arg)), None)),
    }
}

/// Opens `run --reuse DB[:RUN_ID]` (or `nats://HOST:PORT[:RUN_ID]`, reached with `nats`'s
/// credentials and prefix) as a reuse source.
pub(super) fn open_reuse(arg: &str, required: bool, nats: &NatsArgs) -> Result<Arc<Reuse>, String> {
    let (source, run) = journal_arg(arg)?;
    let source: Arc<dyn ReuseSource> = match source {
        Source::File(path) => {
            Arc::new(ReuseJournal::open(&path, run.as_deref()).map_err(|e| e.to_string())?)
        }
        Source::Bus(url) => Arc::new(
            crate::bus::open(&url, nats, 30_000)
                .and_then(|j| j.reuse(run.as_deref()))
                .map_err(|e| e.to_string())?,
        ),
    };
    Ok(Arc::new(Reuse::new(source, required)))
}

/// One firing of a run's trace, with the values of what it consumed.
#[derive(Clone, Debug)]
struct Firing {
    step: u64,
    op: String,
    /// The operator's params in its run's net.
    params: Json,
    inputs: Json,
    outputs: Json,
}

impl Firing {
    /// What is compared: params, inputs, outputs.
    fn compared(&self) -> Json {
        json!({"params": self.params, "inputs": self.inputs, "outputs": self.outputs})
    }
}

/// The firings of `cvm`'s history, in order, each with the values it consumed (the last value
/// written to each connection it consumed).
fn firings(cvm: &Cvm) -> Vec<Firing> {
    let mut last: HashMap<String, Json> = HashMap::new();
    let mut out = Vec::new();
    for line in cvm.trace_lines() {
        let consumed = line["consumed"].as_array().cloned().unwrap_or_default();
        let inputs: serde_json::Map<String, Json> = consumed
            .iter()
            .filter_map(|c| c.as_str())
            .map(|c| (c.to_owned(), last.get(c).cloned().unwrap_or(Json::Null)))
            .collect();
        let mut outputs = serde_json::Map::new();
        for e in line["emitted"].as_array().into_iter().flatten() {
            let conn = e["conn"].as_str().unwrap_or_default().to_owned();
            last.insert(conn.clone(), e["value"].clone());
            // The value, once per output port: the connection's name starts with it.
            let port = conn.split(" -> ").next().unwrap_or(&conn).to_owned();
            outputs.insert(port, e["value"].clone());
        }
        let op = line["op"].as_str().unwrap_or_default().to_owned();
        let params = cvm
            .net()
            .op_id(&op)
            .map(|id| Json::Object(cvm.net().operators()[id.index()].params()))
            .unwrap_or(Json::Null);
        out.push(Firing {
            step: line["step"].as_u64().unwrap_or_default(),
            op,
            params,
            inputs: Json::Object(inputs),
            outputs: Json::Object(outputs),
        });
    }
    out
}

/// How two runs compare, firing by firing: the k-th firing of an operator in one against the
/// k-th firing of the same operator in the other.
#[derive(Debug, Default)]
struct Compared {
    equal: usize,
    changed: usize,
    /// Firings of B with no counterpart in A.
    new: usize,
    /// Firings of A with no counterpart in B.
    removed: usize,
    /// The first firing (in B's order, then A's) that is not equal: A's and B's.
    first: Option<(Option<Firing>, Option<Firing>)>,
}

impl Compared {
    fn same(&self) -> bool {
        self.changed == 0 && self.new == 0 && self.removed == 0
    }
}

fn compare(a: &[Firing], b: &[Firing]) -> Compared {
    let mut by_op: HashMap<&str, Vec<&Firing>> = HashMap::new();
    for f in a {
        by_op.entry(&f.op).or_default().push(f);
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut c = Compared::default();
    let mut candidates: Vec<(u64, Option<Firing>, Option<Firing>)> = Vec::new();
    for f in b {
        let k = seen.entry(&f.op).or_default();
        let other = by_op.get(f.op.as_str()).and_then(|v| v.get(*k)).copied();
        *k += 1;
        match other {
            Some(o) if o.compared() == f.compared() => c.equal += 1,
            Some(o) => {
                c.changed += 1;
                candidates.push((o.step.min(f.step), Some(o.clone()), Some(f.clone())));
            }
            None => {
                c.new += 1;
                candidates.push((f.step, None, Some(f.clone())));
            }
        }
    }
    for (op, fs) in &by_op {
        let used = seen.get(op).copied().unwrap_or(0);
        if fs.len() > used {
            c.removed += fs.len() - used;
            candidates.push((fs[used].step, Some(fs[used].clone()), None));
        }
    }
    // The first difference: the earliest step, on either side.
    candidates.sort_by_key(|(step, a, _)| (*step, a.is_none()));
    c.first = candidates.into_iter().next().map(|(_, a, b)| (a, b));
    c
}

/// The first place two JSON values differ: its path, and each side there (shortened).
fn difference(a: &Json, b: &Json, path: &str) -> Option<(String, String, String)> {
    match (a, b) {
        _ if a == b => None,
        (Json::Object(x), Json::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => difference(u, v, &p),
                    (u, v) => Some((p, short(u), short(v))),
                }
            })
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| difference(u, v, &format!("{path}/{i}"))),
        (Json::String(x), Json::String(y)) => {
            // Where the texts part, with a little of what comes before.
            let at = x
                .char_indices()
                .zip(y.chars())
                .find(|((_, c), d)| c != d)
                .map_or(x.len().min(y.len()), |((i, _), _)| i);
            let from = x[..at].char_indices().rev().nth(20).map_or(0, |(i, _)| i);
            let cut = |s: &str| {
                let tail: String = s.get(from..).unwrap_or_default().chars().take(60).collect();
                format!("{}\"{tail}\"", if from > 0 { "…" } else { "" })
            };
            Some((path.to_owned(), cut(x), cut(y)))
        }
        _ => Some((path.to_owned(), short(Some(a)), short(Some(b)))),
    }
}

fn short(v: Option<&Json>) -> String {
    match v {
        None => "(absent)".to_owned(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 80 {
                format!("{}…", s.chars().take(80).collect::<String>())
            } else {
                s
            }
        }
    }
}

fn compared_json(c: &Compared) -> Json {
    let mut v = json!({
        "same": c.same(),
        "equal": c.equal,
        "changed": c.changed,
        "new": c.new,
        "removed": c.removed,
    });
    if let Some((a, b)) = &c.first {
        let side = |f: &Option<Firing>| {
            f.as_ref().map(|f| {
                json!({"step": f.step, "params": f.params, "inputs": f.inputs, "outputs": f.outputs})
            })
        };
        let op = a.as_ref().or(b.as_ref()).map(|f| f.op.clone());
        let mut first = json!({"op": op, "a": side(a), "b": side(b)});
        if let (Some(x), Some(y)) = (a, b)
            && let Some((path, u, w)) = difference(&x.compared(), &y.compared(), "")
        {
            first["difference"] = json!({"path": path, "a": u, "b": w});
        }
        v["first"] = first;
    }
    v
}

fn compared_text(c: &Compared, a: &str, b: &str) -> String {
    let mut s = String::new();
    if let Some((x, y)) = &c.first {
        let op = x.as_ref().or(y.as_ref()).map_or("", |f| f.op.as_str());
        let at = |f: &Option<Firing>| f.as_ref().map_or("-".to_owned(), |f| f.step.to_string());
        s += &format!(
            "first difference: `{op}` ({a} step {}, {b} step {})\n",
            at(x),
            at(y)
        );
        for (what, get) in [
            (
                "inputs",
                (|f: &Firing| f.inputs.clone()) as fn(&Firing) -> Json,
            ),
            ("outputs", |f: &Firing| f.outputs.clone()),
        ] {
            let side = |f: &Option<Firing>| {
                f.as_ref()
                    .map_or("(no such firing)".into(), |f| short(Some(&get(f))))
            };
            s += &format!(
                "  {what:<8} {a}: {}\n  {:<8} {b}: {}\n",
                side(x),
                "",
                side(y)
            );
        }
        if let (Some(x), Some(y)) = (x, y)
            && let Some((path, u, w)) = difference(&x.compared(), &y.compared(), "")
        {
            s += &format!("  at {path}: {u} → {w}\n");
        }
    }
    s += &format!(
        "firings: {} equal, {} changed, {} new, {} removed\n",
        c.equal, c.changed, c.new, c.removed
    );
    s
}

/// A recorded run, opened without running anything: run `id` of `source`, its stored net naming
/// the nets offered as tools by `capabilities` (else by the capabilities files of the folder it
/// was recorded in); with `reuse`, its recorded firings as a reuse source too.
fn recorded(
    source: &Source,
    id: &str,
    capabilities: Option<&Path>,
    nats: &NatsArgs,
    reuse: bool,
) -> Result<(Cvm, Option<Arc<dyn ReuseSource>>), JournalError> {
    let path = match source {
        Source::Bus(url) => {
            return crate::bus::recorded(url, nats, id, capabilities, reuse)
                .map(|(cvm, r)| (cvm, r.map(|r| Arc::new(r) as Arc<dyn ReuseSource>)));
        }
        Source::File(path) => path,
    };
    let journal = Journal::open(path)?;
    let dir = journal
        .recorded_folder(Some(id))
        .ok()
        .and_then(|f| f.base_dir)
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let names =
        crate::net_tools::with_net_tools(cameleon::journal::Names::default(), &dir, capabilities);
    let cvm = journal.open_run_with_names(id, &names)?.cvm;
    let source = if reuse {
        Some(Arc::new(ReuseJournal::open(path, Some(id))?) as Arc<dyn ReuseSource>)
    } else {
        None
    };
    Ok((cvm, source))
}

fn failed(e: &str, json: bool, io: &mut Io<'_>) -> std::io::Result<i32> {
    writeln!(io.stderr, "error: {e}")?;
    if json {
        writeln!(io.stdout, "{}", json!({ "error": e }))?;
    }
    Ok(exit::INVALID)
}

/// `diff DB RUN_A RUN_B`: exit 0 the same firings, 1 different, 2 invalid.
pub(super) fn diff(a: &DiffArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let source = match journal_arg(&a.db) {
        Ok((p, None)) => p,
        Ok((_, Some(_))) => return failed("give the runs as RUN_A RUN_B, not DB:RUN", a.json, io),
        Err(e) => return failed(&e, a.json, io),
    };
    let (ra, rb) = match (
        recorded(&source, &a.run_a, None, &a.nats, false),
        recorded(&source, &a.run_b, None, &a.nats, false),
    ) {
        (Ok((x, _)), Ok((y, _))) => (x, y),
        (Err(e), _) | (_, Err(e)) => return failed(&e.to_string(), a.json, io),
    };
    let c = compare(&firings(&ra), &firings(&rb));
    if a.json {
        writeln!(io.stdout, "{}", compared_json(&c))?;
    } else {
        if c.same() {
            writeln!(io.stdout, "same: {} equal firings", c.equal)?;
        } else {
            write!(io.stdout, "{}", compared_text(&c, "A", "B"))?;
        }
    }
    Ok(if c.same() { exit::OK } else { exit::DIFFERS })
}

/// `test FILE.cm --against DB RUN_ID`: exit 0 every sink as recorded, 1 different (or a call
/// with no recorded answer), 2 invalid.
pub(super) fn test(a: &TestArgs, io: &mut Io<'_>) -> std::io::Result<i32> {
    let net = match crate::satellite::load(
        &a.file,
        a.allow_outside,
        a.json,
        None,
        a.capabilities.as_deref(),
        io,
    )? {
        Ok(net) => net,
        Err(code) => return Ok(code),
    };
    let source = match journal_arg(&a.against) {
        Ok((p, _)) => p,
        Err(e) => return failed(&e, a.json, io),
    };
    let caps = a.capabilities.as_deref();
    let (reference, reuse) = match recorded(&source, &a.run_id, caps, &a.nats, true) {
        Ok((cvm, Some(s))) => (cvm, Arc::new(Reuse::new(s, true))),
        Ok((_, None)) => return failed("the recorded run's firings were not read", a.json, io),
        Err(e) => return failed(&e.to_string(), a.json, io),
    };
    let rt = match crate::trust::sources(&folder_of(&a.file), a.capabilities.as_deref(), &a.grant)
        .build()
    {
        Ok(rt) => rt,
        Err(CapabilitiesError::File(e)) => {
            report_invalid(&e, a.json, io)?;
            return Ok(exit::INVALID);
        }
        Err(e) => return failed(&e.to_string(), a.json, io),
    };
    let mut cvm = rt
        .cvm(net, folder_of(&a.file))
        .mode(reference.mode())
        .build();
    cvm.set_reuse(Some(Arc::clone(&reuse)));
    let end = match cvm.run() {
        Ok(end) => end,
        Err(e) => return failed(&e.to_string(), a.json, io),
    };
    let mut sinks = Vec::new();
    for o in cvm.net().operators() {
        if !o.spec.outputs.is_empty() {
            continue;
        }
        let now: Vec<Json> = cvm.received(&o.name).iter().map(|v| v.to_json()).collect();
        let was: Vec<Json> = match reference.net().op_id(&o.name) {
            Some(_) => reference
                .received(&o.name)
                .iter()
                .map(|v| v.to_json())
                .collect(),
            None => Vec::new(),
        };
        if now != was {
            sinks.push((o.name.clone(), was, now));
        }
    }
    let error = match &end {
        EndState::Completed => None,
        EndState::Error { op, error } => Some(format!("`{op}` failed: {error}")),
        other => Some(format!("the run ended in {}", other.name())),
    };
    let equal = sinks.is_empty() && error.is_none();
    let c = compare(&firings(&reference), &firings(&cvm));
    if a.json {
        let sinks: Vec<Json> = sinks
            .iter()
            .map(|(n, was, now)| json!({"sink": n, "recorded": was, "now": now}))
            .collect();
        let v = json!({
            "equal": equal,
            "end": end.name(),
            "error": error,
            "reused": reuse.hits(),
            "sinks": sinks,
            "diff": compared_json(&c),
        });
        writeln!(io.stdout, "{v}")?;
    } else if equal {
        writeln!(
            io.stdout,
            "ok: every sink as in run {} ({} firings reused)",
            a.run_id,
            reuse.hits()
        )?;
    } else {
        writeln!(io.stdout, "FAILED against run {}", a.run_id)?;
        if let Some(e) = &error {
            writeln!(io.stdout, "  {e}")?;
        }
        for (n, was, now) in &sinks {
            writeln!(
                io.stdout,
                "  sink `{n}`: recorded {} / now {}",
                short(Some(&Json::Array(was.clone()))),
                short(Some(&Json::Array(now.clone())))
            )?;
        }
        write!(io.stdout, "{}", compared_text(&c, "recorded", "now"))?;
    }
    Ok(if equal { exit::OK } else { exit::DIFFERS })
}
