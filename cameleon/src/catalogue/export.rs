//! The catalogue exported for people and LLMs: [`Catalogue::to_json`] and
//! [`Catalogue::to_markdown`], both opening with a guide to writing a `.cm` file.

use serde_json::{Value as Json, json};

use super::{Catalogue, CatalogueEntry};
use crate::operator::capability::{Effect, OpEffects};
use crate::operator::{OpSettings, OpSpec, PortSpec};
use crate::policy::Policy;

/// How to write a `.cm` file with the catalogue's operators: the preamble of both exports.
const CM_GUIDE: &str = r#"A Caméléon pipeline is a `.cm` file (YAML). Each operator instance has an `id` (its unique name), a `type` (a catalogue id below) and optional `params`; each connection goes from an output port `instance.port` to an input port `instance.port`.

```yaml
cameleon: 1
name: example
operators:
  - id: src
    type: source
    params: { value: "hello world" }
  - id: up
    type: transform
  - id: out
    type: sink
connections:
  - from: src.out_data
    to: up.in_data
  - from: up.out_data
    to: out.in_data
```

Rules:
- Every input port has exactly one incoming connection, except optional inputs, which may have none. An output port may feed any number of connections, or none.
- A connection's source and target have the same data type. An input of type `Any` (on a behavioral operator) accepts every type. `T0`, `T1`… are type variables of a structural operator: every port of one instance with the same variable carries the same type, fixed by its connections.
- Params not listed for an operator are errors; params without a default are required. Operators whose ports are `in_a, in_b, …` or `out_a, out_b, …` take an `arity` param (default 2) that adds ports `in_c`/`out_c`, `in_d`/`out_d`, … in order.
- A `test` param is a one-key map evaluated on the JSON value of a token (a DataString compares as a string): `{lt: 10}`, `{le: 10}`, `{gt: 0}`, `{ge: 0}`, `{eq: "stop"}`, `{ne: 3}`, `{contains: "x"}`, `{not: {…}}`, `{all: […]}`, `{any: […]}`.
- A firing policy says when an operator fires from the states of its inputs (NEW: a value not yet consumed; OLD: consumed; EMPTY: nothing yet): `any` is the usual one; `all` waits for every input; structural operators (`fork`, `join`, `merge`, `gate`, `guard`, …) route tokens, behavioral ones compute values. Each operator's ports below say what they carry and when to connect the optional ones.
- A loop goes through a `merge` (its entry; it fires with an EMPTY input) and leaves through a `guard` or a `gate`: `merge.out_data` → the loop's body → `guard.in_data`; `guard.out_continue` → `merge.in_b` (the back edge); `guard.out_exit` → what follows the loop. A loop runs at most `config: max_loop_iterations` times per operator (LOOP_LIMIT after).
- Files: `text_file`, `json_file` and `file_loader` read `path` relative to the `.cm` file's folder; a path that leaves it (absolute, or through `..`) is refused unless the command is given `--allow-outside`.
- Tools (`cameleon tools --json` lists each with the JSON Schema of its arguments) are called by a `tool` operator (param `name`) whose `in_args` receives the arguments as a JSON object, e.g. from a `const`. A net may call only the tools its top-level `tools:` key allows: `tools: {allow: [calc, read_file], approve: [write_file]}` (after `config:`, before `operators:`); without that key every tool call is denied.
- Models: `llm`, `llm_json`, `agent`, `embed`, `index` and `retrieve` use a chat model, an embedder or a memory by name (params `model` and `memory`, `default` unless set), defined in a capabilities file (`cameleon.yaml` beside the `.cm` file, or `--capabilities FILE`). With nothing configured, the offline defaults are the chat model `extractive` — **not generative**: it answers by quoting the context sentences that best match the prompt, and `llm_json` and an `agent` offered tools refuse it — the embedder `hash` (feature hashing of words, 384 dimensions) and the memory `flat` (in process). `model: extractive` and `model: hash` name the offline ones whatever `default` is. `cameleon check` reports a name the capabilities do not define. A budget bounds what a run spends on models: `config: {budget: {tokens: 20000, cost_usd: 0.50}}` (each bound optional; `cost_usd` counts at the `price_usd` of the capabilities file) — the run stops in BUDGET (exit 4) before the first model request once a bound is reached, sub-nets and maps included."#;

impl Catalogue {
    /// The catalogue as JSON: a `.cm` writing guide (`format`), the data types, the firing
    /// policies, and every operator (sorted by id) with its aliases, label, family, policy,
    /// execution kind (`exec`) and default `settings` (`timeout_ms`, `retry`, when declared),
    /// description, ports with types, params with types and defaults, and emission sets —
    /// enough for an LLM to write a valid `.cm` from this text alone.
    pub fn to_json(&self) -> Json {
        let operators: Vec<Json> = self.iter().map(entry_json).collect();
        let types: Vec<Json> = crate::types::all_types()
            .into_iter()
            .map(|t| json!(t.name))
            .chain(std::iter::once(json!("Any")))
            .collect();
        let policies: serde_json::Map<String, Json> = Policy::ALL
            .into_iter()
            .map(|p| (p.as_str().to_owned(), json!(p.describe())))
            .collect();
        json!({
            "format": CM_GUIDE,
            "types": types,
            "policies": policies,
            "operators": operators,
        })
    }

    /// The catalogue as Markdown: the same facts as [`to_json`](Self::to_json), for people and
    /// LLM prompts.
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut md = String::from("# Caméléon operator catalogue\n\n## Writing a `.cm` file\n\n");
        md.push_str(CM_GUIDE);
        md.push_str("\n\nData types: ");
        let types: Vec<String> = crate::types::all_types()
            .into_iter()
            .map(|t| format!("`{}`", t.name))
            .collect();
        md.push_str(&types.join(", "));
        md.push_str(", and `Any` (inputs only).\n\nFiring policies:\n");
        for p in Policy::ALL {
            let _ = writeln!(md, "- `{p}`: {}", p.describe());
        }
        md.push_str("\n## Operators\n");
        for e in self.iter() {
            let spec = (e.spec)();
            let _ = write!(md, "\n### `{}` — {}\n\n{}\n\n", e.id, e.label, e.summary());
            let _ = writeln!(
                md,
                "- family: {} · firing: `{}` ({})",
                e.family,
                e.policy,
                e.policy.describe()
            );
            let _ = writeln!(
                md,
                "- exec: `{}`{}",
                e.execution.as_str(),
                settings_md(&e.settings)
            );
            let effects = crate::operator::capability::operator_effects(e.id);
            if effects != OpEffects::Fixed(Effect::None) {
                let _ = writeln!(md, "- effects: `{effects}`{}", effects_md(effects));
            }
            if !e.aliases.is_empty() {
                let a: Vec<String> = e.aliases.iter().map(|a| format!("`{a}`")).collect();
                let _ = writeln!(md, "- aliases: {}", a.join(", "));
            }
            ports_md(&mut md, "inputs", e, &spec.inputs);
            ports_md(&mut md, "outputs", e, &spec.outputs);
            if !spec.emits.is_empty() {
                let sets: Vec<String> = emits_names(&spec)
                    .into_iter()
                    .map(|set| {
                        let names: Vec<String> = set.iter().map(|n| format!("`{n}`")).collect();
                        if names.is_empty() {
                            "nothing".to_owned()
                        } else {
                            format!("{{{}}}", names.join(", "))
                        }
                    })
                    .collect();
                let _ = writeln!(md, "- emits one of: {}", sets.join(" or "));
            }
            if e.params.is_empty() {
                md.push_str("- params: none\n");
            } else {
                md.push_str("- params:\n");
                for p in e.params {
                    let default = p
                        .default
                        .map_or_else(|| "required".to_owned(), |d| format!("default `{d}`"));
                    let _ = writeln!(md, "  - `{}` ({}, {}): {}", p.name, p.ty, default, p.doc);
                }
            }
        }
        md
    }
}

/// What an operator type's effects mean, after their name.
fn effects_md(e: OpEffects) -> &'static str {
    match e {
        OpEffects::OfTools => " (those of the tools it may call)",
        OpEffects::Fixed(e) => match e {
            Effect::Read => " (reads local files)",
            Effect::Write => " (writes local files)",
            Effect::External => " (acts on the outside world)",
            Effect::None => "",
        },
    }
}

/// The default settings, after the execution kind: ` · timeout 5000 ms · retry: max 3, backoff 200 ms`.
fn settings_md(s: &OpSettings) -> String {
    let mut out = String::new();
    if let Some(ms) = s.timeout_ms {
        out.push_str(&format!(" · timeout {ms} ms"));
    }
    if let Some(r) = s.retry {
        out.push_str(&format!(
            " · retry: max {}, backoff {} ms",
            r.max, r.backoff_ms
        ));
    }
    out
}

/// `- inputs:` and one line per port, with what it is for: `` - `in_data: Any` (optional): … ``.
fn ports_md(md: &mut String, what: &str, e: &CatalogueEntry, ports: &[PortSpec]) {
    use std::fmt::Write as _;
    if ports.is_empty() {
        let _ = writeln!(md, "- {what}: none");
        return;
    }
    let _ = writeln!(md, "- {what}:");
    for p in ports {
        let opt = if p.optional { " (optional)" } else { "" };
        let doc = e
            .port_doc(&p.name)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let _ = writeln!(md, "  - `{}: {}`{opt}{doc}", p.name, p.ty.display_name());
    }
}

fn emits_names(spec: &OpSpec) -> Vec<Vec<&str>> {
    spec.emits
        .iter()
        .map(|set| {
            set.iter()
                .filter_map(|&i| spec.outputs.get(i as usize).map(|p| &*p.name))
                .collect()
        })
        .collect()
}

fn entry_json(e: &CatalogueEntry) -> Json {
    let spec = (e.spec)();
    let port = |p: &PortSpec| {
        json!({
            "name": p.name,
            "type": p.ty.display_name(),
            "optional": p.optional,
            "doc": e.port_doc(&p.name),
        })
    };
    let params: Vec<Json> = e
        .params
        .iter()
        .map(|p| {
            let default = p
                .default
                .map(|d| serde_json::from_str::<Json>(d).unwrap_or_else(|_| json!(d)));
            json!({
                "name": p.name,
                "type": p.ty,
                "required": p.default.is_none(),
                "default": default,
                "doc": p.doc,
            })
        })
        .collect();
    json!({
        "id": e.id,
        "aliases": e.aliases,
        "label": e.label,
        "family": e.family,
        "policy": e.policy,
        "exec": e.execution,
        "settings": e.settings,
        "effects": crate::operator::capability::operator_effects(e.id),
        "doc": e.summary(),
        "inputs": spec.inputs.iter().map(port).collect::<Vec<_>>(),
        "outputs": spec.outputs.iter().map(port).collect::<Vec<_>>(),
        "params": params,
        "emits": emits_names(&spec),
    })
}
