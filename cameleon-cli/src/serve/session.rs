//! The served net and its engine: what the page shows (state, history, source, problems) and
//! what its buttons do, independent of HTTP.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value as Json, json};

use cameleon::capabilities::Runtime;
use cameleon::cm::{CmError, Loader};
use cameleon::engine::{Cvm, EndState, Event, Step, StepError};
use cameleon::journal::{Journal, RunOptions};
use cameleon::net::Net;
use cameleon::{ConnId, ConnState};

/// Engine events not yet sent to the page, filled by the engine's observer.
pub(crate) type Outbox = Arc<Mutex<Vec<Event>>>;

/// Longest value text sent for a connection's tooltip.
const MAX_VALUE_CHARS: usize = 2000;

/// The served file, its text, and its engine when the text is a valid net.
pub(crate) struct Session {
    /// The served `.cm` file: the only file the server writes.
    pub(crate) path: PathBuf,
    /// The file's text as last loaded or saved.
    pub(crate) text: String,
    /// The problems of `text`, when it is not a valid net.
    pub(crate) problems: Vec<Json>,
    /// The engine of the last valid version of the net.
    pub(crate) cvm: Option<Cvm>,
    /// How the last step or run ended, while nothing changed since.
    last_end: Option<EndState>,
    outbox: Outbox,
    allow_outside: bool,
    /// A run is in progress (the page shows Pause).
    pub(crate) running: bool,
    /// Bumped by every change: the page keeps the newest state it received.
    version: u64,
    /// The capabilities every engine of the session pins (`cameleon.yaml` beside the file).
    runtime: Runtime,
    /// `--journal DB`: every engine of the session is a journaled run in this file.
    journal: Option<PathBuf>,
    /// The id of the journaled run the engine is (with `--journal`).
    pub(crate) run_id: Option<String>,
}

/// A request the engine cannot do now: a JSON error with its HTTP status.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) message: String,
}

impl Refused {
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Refused {
            status: 400,
            message: message.into(),
        }
    }
    fn conflict(message: impl Into<String>) -> Self {
        Refused {
            status: 409,
            message: message.into(),
        }
    }
}

/// The problems of a `.cm` text as JSON: `[{"line","column","message","hint","code"}…]`.
pub(crate) fn problems_json(e: &CmError) -> Vec<Json> {
    e.problems()
        .iter()
        .map(|p| {
            json!({
                "line": p.line,
                "column": p.column,
                "message": p.message,
                "hint": p.hint,
                "code": p.kind.as_str(),
            })
        })
        .collect()
}

impl Session {
    /// Loads `path`; an invalid file gives a session with its problems and no engine. With
    /// `journal`, the engine is a run journaled into that file; a net that cannot be journaled
    /// is an error.
    pub(crate) fn open(
        path: PathBuf,
        allow_outside: bool,
        outbox: Outbox,
        runtime: Runtime,
        journal: Option<PathBuf>,
    ) -> Result<Self, String> {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let mut s = Session {
            path,
            text: String::new(),
            problems: Vec::new(),
            cvm: None,
            last_end: None,
            outbox,
            allow_outside,
            running: false,
            version: 0,
            runtime,
            journal,
            run_id: None,
        };
        s.load(text)?;
        Ok(s)
    }

    /// What can be drawn of the served text when it is not a valid net (see [`sketch`]).
    pub(crate) fn sketch(&self) -> Option<String> {
        sketch(&self.loader(), &self.text)
    }

    fn loader(&self) -> Loader<'static> {
        let mut l = Loader::new().allow_outside(self.allow_outside);
        if let Some(dir) = self.path.parent() {
            l = l.base_dir(if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir.to_path_buf()
            });
        }
        if let Some(name) = self.path.file_name() {
            l = l.file_name(name.to_string_lossy());
        }
        l
    }

    /// Takes `text` as the net: a new engine when it is valid, else its problems (the engine
    /// of the last valid version stays, so the page still shows it). `Err`: the net is valid
    /// but its journaled run could not start.
    fn load(&mut self, text: String) -> Result<(), String> {
        let r = match self.loader().load_str(&text) {
            Ok(net) => {
                self.problems.clear();
                self.engine(net).map(|cvm| self.install(cvm))
            }
            Err(e) => {
                self.problems = problems_json(&e);
                Ok(())
            }
        };
        self.text = text;
        r
    }

    /// The folder the served file's relative paths resolve against.
    fn base_dir(&self) -> PathBuf {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf)
    }

    /// A fresh engine for `net`, with the session's capabilities pinned; with `--journal`, a
    /// new journaled run (its id becomes the session's). `Err`: why the run cannot be
    /// journaled.
    fn engine(&mut self, net: Net) -> Result<Cvm, String> {
        let base = self.base_dir();
        let name = if net.name().is_empty() {
            self.path
                .file_stem()
                .map_or_else(|| "net".to_owned(), |s| s.to_string_lossy().into_owned())
        } else {
            net.name().to_owned()
        };
        let mut cvm = self.runtime.cvm(net, base.clone()).build();
        if let Some(db) = &self.journal {
            let opts = RunOptions {
                name: Some(name),
                base_dir: Some(base),
                allow_outside: self.allow_outside,
                generation: Some(cvm.generation()),
                ..RunOptions::default()
            };
            let id = Journal::create(db)
                .and_then(|j| j.start(&mut cvm, &opts))
                .map_err(|e| e.to_string())?;
            self.run_id = Some(id);
        }
        Ok(cvm)
    }

    /// Marks a change: the next state has a higher version.
    pub(crate) fn touch(&mut self) {
        self.version += 1;
    }

    fn install(&mut self, mut cvm: Cvm) {
        self.touch();
        let outbox = Arc::clone(&self.outbox);
        cvm.on_event(move |e| {
            outbox
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(e.clone());
        });
        self.cvm = Some(cvm);
        self.last_end = None;
    }

    /// Checks `text` as the served file: its problems (empty: valid).
    pub(crate) fn check(&self, text: &str) -> Vec<Json> {
        match self.loader().load_str(text) {
            Ok(_) => Vec::new(),
            Err(e) => problems_json(&e),
        }
    }

    /// Writes the canonical form of `text` to the served file and serves it. An invalid text
    /// is refused with its problems; nothing is written.
    pub(crate) fn save(&mut self, text: &str) -> Result<String, (Refused, Vec<Json>)> {
        let net = match self.loader().load_str(text) {
            Ok(net) => net,
            Err(e) => {
                let n = e.problems().len();
                return Err((
                    Refused::bad(format!(
                        "not saved: the text is not a valid net ({n} problem{})",
                        if n == 1 { "" } else { "s" }
                    )),
                    problems_json(&e),
                ));
            }
        };
        let canonical = format!("{}{}", leading_comments(text), net.to_cm());
        // With `--journal`, the saved net is a new run: started before anything is written.
        let cvm = match self.engine(net) {
            Ok(cvm) => cvm,
            Err(e) => return Err((Refused::conflict(format!("not saved: {e}")), Vec::new())),
        };
        if let Err(e) = std::fs::write(&self.path, &canonical) {
            return Err((
                Refused {
                    status: 500,
                    message: format!("cannot write `{}`: {e}", self.path.display()),
                },
                Vec::new(),
            ));
        }
        self.problems.clear();
        self.text = canonical.clone();
        self.install(cvm);
        Ok(canonical)
    }

    fn cvm(&mut self) -> Result<&mut Cvm, Refused> {
        self.cvm.as_mut().ok_or_else(|| {
            Refused::conflict("the served file is not a valid net: fix it in the Code view")
        })
    }

    fn idle(&self) -> Result<(), Refused> {
        if self.running {
            Err(Refused::conflict("a run is in progress: pause it first"))
        } else {
            Ok(())
        }
    }

    /// One step forward (a replay after `back`).
    pub(crate) fn step(&mut self) -> Result<(), Refused> {
        self.idle()?;
        let r = self.cvm()?.step();
        self.after_step(r)
    }

    /// One step executed anew from here: a recorded future becomes a branch.
    pub(crate) fn refire(&mut self) -> Result<(), Refused> {
        self.idle()?;
        let r = self.cvm()?.refire();
        self.after_step(r)
    }

    fn after_step(&mut self, r: Result<Step, StepError>) -> Result<(), Refused> {
        self.touch();
        match r {
            Ok(Step::Fired { .. }) => self.last_end = None,
            Ok(Step::Ended(end)) => self.last_end = Some(end),
            Err(StepError::Operator { op, error }) => {
                self.last_end = Some(EndState::Error {
                    op,
                    error: error.to_string(),
                })
            }
            Err(e) => return Err(Refused::conflict(e.to_string())),
        }
        Ok(())
    }

    /// Runs up to `n` steps; returns whether the run reached an end state.
    pub(crate) fn run_some(&mut self, n: usize) -> Result<bool, Refused> {
        for _ in 0..n {
            let r = self.cvm()?.step();
            self.after_step(r)?;
            if self.last_end.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One step back.
    pub(crate) fn back(&mut self) -> Result<(), Refused> {
        self.idle()?;
        self.cvm()?
            .back()
            .map_err(|e| Refused::conflict(e.to_string()))?;
        self.last_end = None;
        self.touch();
        Ok(())
    }

    /// A fresh engine at the initial marking (the history is dropped). With `--journal`, a
    /// new run: the previous one stays in the journal as it was, resumable.
    pub(crate) fn reset(&mut self) -> Result<(), Refused> {
        self.idle()?;
        let net = self.loader().load_str(&self.text).ok();
        match net {
            Some(net) => {
                let cvm = self.engine(net).map_err(Refused::conflict)?;
                self.install(cvm);
            }
            None => {
                // The text is invalid: rewind the last valid net instead.
                self.cvm()?.rewind();
                self.last_end = None;
                self.touch();
            }
        }
        Ok(())
    }

    /// Goes to step `step` of the current path (back, or forward by replay), after switching
    /// to branch number `branch` (an index into the history's branches) if given.
    pub(crate) fn goto(
        &mut self,
        branch: Option<usize>,
        step: Option<usize>,
    ) -> Result<(), Refused> {
        self.idle()?;
        self.touch();
        let cvm = self.cvm()?;
        if let Some(b) = branch {
            let branches = cvm.branches();
            let Some(br) = branches.get(b) else {
                return Err(Refused::bad(format!(
                    "no branch {b}: the history has {} branch(es)",
                    branches.len()
                )));
            };
            cvm.checkout(br.id)
                .map_err(|e| Refused::conflict(e.to_string()))?;
        }
        if let Some(target) = step {
            while cvm.depth() > target {
                cvm.back().map_err(|e| Refused::conflict(e.to_string()))?;
            }
            while cvm.depth() < target && cvm.history().redo_len() > 0 {
                match cvm.step() {
                    Ok(Step::Fired { .. }) => {}
                    Ok(Step::Ended(_)) => break,
                    Err(e) => return Err(Refused::conflict(e.to_string())),
                }
            }
        }
        self.last_end = None;
        Ok(())
    }

    /// Answers the question of `ask` operator `op`.
    pub(crate) fn provide(&mut self, op: &str, value: Json) -> Result<(), Refused> {
        self.cvm()?
            .provide_json(op, value)
            .map_err(|e| Refused::bad(e.to_string()))?;
        self.last_end = None;
        self.touch();
        Ok(())
    }

    /// The end state the net is in: where the last step or run stopped, or the terminal
    /// state of the marking.
    fn end(&self) -> Option<EndState> {
        let cvm = self.cvm.as_ref()?;
        cvm.terminal_state().or_else(|| self.last_end.clone())
    }

    /// `GET /api/state`: `{"step","end","fireable","connections","waiting",…}`.
    pub(crate) fn state_json(&self) -> Json {
        let mut m = Map::new();
        m.insert("version".into(), json!(self.version));
        let Some(cvm) = self.cvm.as_ref() else {
            m.insert("step".into(), json!(0));
            m.insert("end".into(), Json::Null);
            m.insert("fireable".into(), json!([]));
            m.insert("connections".into(), json!({}));
            m.insert("waiting".into(), json!([]));
            m.insert("valid".into(), json!(false));
            m.insert("running".into(), json!(false));
            m.insert("engine".into(), json!(false));
            return Json::Object(m);
        };
        let net = cvm.net();
        let end = self.end();
        m.insert("step".into(), json!(cvm.depth()));
        m.insert("end".into(), json!(end.as_ref().map(EndState::name)));
        m.insert("fireable".into(), json!(cvm.fireable()));
        let mut conns = Map::new();
        let mut values = Map::new();
        for (i, c) in net.connections().iter().enumerate() {
            let view = cvm.conn(ConnId(i as u32));
            let state = match view.state {
                ConnState::Empty => "EMPTY",
                ConnState::New => "NEW",
                ConnState::Old => "OLD",
            };
            conns.insert(c.name.clone(), json!(state));
            if let Some(v) = view.value() {
                values.insert(c.name.clone(), json!(shorten(&v.to_json().to_string())));
            }
        }
        m.insert("connections".into(), Json::Object(conns));
        let waiting: Vec<Json> = cvm
            .waiting()
            .into_iter()
            .map(|w| {
                json!({
                    "op": w.op,
                    "prompt": w.prompt,
                    "type": w.ty.name,
                    "context": crate::answers::context_of(cvm, &w.op),
                })
            })
            .collect();
        m.insert("waiting".into(), Json::Array(waiting));
        m.insert("values".into(), Json::Object(values));
        if let Some(e) = end {
            m.insert("end_detail".into(), json!(e.to_string()));
        }
        m.insert("redo".into(), json!(cvm.history().redo_len()));
        m.insert("branches".into(), json!(cvm.branches().len()));
        m.insert("valid".into(), json!(self.problems.is_empty()));
        m.insert("running".into(), json!(self.running));
        m.insert("engine".into(), json!(true));
        if let Some(id) = &self.run_id {
            m.insert("run_id".into(), json!(id));
        }
        Json::Object(m)
    }

    /// `GET /api/history`: the last `limit` applied entries, what a step would replay, and the
    /// branches — `{"entries":[{"step","ops":[…]}…],"redo":[…],"branches":[{"index","depth","current"}…],"depth"}`.
    pub(crate) fn history_json(&self, limit: usize) -> Json {
        let Some(cvm) = self.cvm.as_ref() else {
            return json!({"entries": [], "redo": [], "branches": [], "depth": 0});
        };
        let net = cvm.net();
        let h = cvm.history();
        let entry = |e: &cameleon::Entry| {
            json!({
                "step": e.step,
                "ops": e.firings.iter().map(|f| net.op(f.op).name.as_str()).collect::<Vec<_>>(),
            })
        };
        let entries = h.entries();
        let skip = entries.len().saturating_sub(limit);
        let redo: Vec<Json> = h.redo_entries().iter().take(limit).map(entry).collect();
        let branches: Vec<Json> = cvm
            .branches()
            .iter()
            .enumerate()
            .map(|(i, b)| json!({"index": i, "depth": b.depth, "current": b.current}))
            .collect();
        json!({
            "entries": entries[skip..].iter().map(entry).collect::<Vec<_>>(),
            "redo": redo,
            "branches": branches,
            "depth": cvm.depth(),
        })
    }
}

/// What can be drawn of a `.cm` text that is not a valid net: every operator it declares (with
/// its type's ports when the type is known, built from its params when they are valid), and
/// every connection between ports that exist. `None` when the text is not even readable YAML
/// of the `.cm` shape.
pub(crate) fn sketch(loader: &Loader<'_>, text: &str) -> Option<String> {
    use cameleon::BuildContext;
    use cameleon::catalogue::Catalogue;
    use cameleon::export::{Diagram, DiagramConn, DiagramOp};
    use cameleon::types::PortType as _;

    let file = loader.parse_str(text).ok()?;
    let catalogue = Catalogue::global();
    let any = cameleon::Any::INFO;
    let mut d = Diagram {
        name: file.name.clone().unwrap_or_default(),
        ..Diagram::default()
    };
    for o in &file.operators {
        let type_id = o.type_.clone().unwrap_or_default();
        let spec = catalogue.get(&type_id).map(|e| {
            o.params
                .as_ref()
                .and_then(|p| (e.build)(p, &BuildContext::default()).ok())
                .map_or_else(|| (e.spec)(), |op| op.spec())
        });
        let ports = |ps: &[cameleon::PortSpec]| -> Vec<(String, &'static cameleon::TypeInfo)> {
            ps.iter()
                .map(|p| {
                    let ty = match p.ty {
                        cameleon::TypeRef::Is(t) => t,
                        cameleon::TypeRef::Var(_) => any,
                    };
                    (p.name.to_string(), ty)
                })
                .collect()
        };
        d.ops.push(DiagramOp {
            name: o.id.clone(),
            label: spec.as_ref().map_or_else(
                || format!("unknown type `{type_id}`"),
                |s| s.label.to_string(),
            ),
            type_id: type_id.clone(),
            structural: spec
                .as_ref()
                .is_some_and(|s| s.family == cameleon::Family::Structural),
            inputs: spec.as_ref().map(|s| ports(&s.inputs)).unwrap_or_default(),
            outputs: spec.as_ref().map(|s| ports(&s.outputs)).unwrap_or_default(),
            pos: o.x.zip(o.y),
        });
    }
    let find = |end: &str, outputs: bool| -> Option<(usize, usize, &'static cameleon::TypeInfo)> {
        let (op, port) = end.trim().split_once('.')?;
        let i = d.ops.iter().position(|o| o.name == op)?;
        let ports = if outputs {
            &d.ops[i].outputs
        } else {
            &d.ops[i].inputs
        };
        let p = ports.iter().position(|(n, _)| n == port)?;
        Some((i, p, ports[p].1))
    };
    let conns: Vec<DiagramConn> = file
        .connections
        .iter()
        .filter_map(|c| {
            let (fo, fp, ty) = find(&c.from, true)?;
            let (to, tp, _) = find(&c.to, false)?;
            Some(DiagramConn {
                name: format!("{} -> {}", c.from.trim(), c.to.trim()),
                from: (fo, fp),
                to: (to, tp),
                ty,
            })
        })
        .collect();
    d.conns = conns;
    Some(d.svg())
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= MAX_VALUE_CHARS {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(MAX_VALUE_CHARS).collect();
        t.push('…');
        t
    }
}

/// The lines before the first YAML line (comments, blank lines), kept by Save as by `fmt`.
fn leading_comments(text: &str) -> &str {
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#')) {
            break;
        }
        end += line.len();
    }
    &text[..end]
}
