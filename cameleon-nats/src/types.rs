//! Operator types a run does not link: a satellite describes each type it hosts
//! ([`describe`]: ports, policy, family, params schema, state), and a run that lacks one adds it
//! to the catalogue it loads `.cm` files with ([`catalogue_with`]), as a *spec operator*: its
//! ports and firing rule come from the description, its params are checked against the schema,
//! and it fires only on a satellite (`placement: remote`, with `--nats`).
//!
//! The catalogue's entries are plain function pointers, so each remote-only type takes one of
//! [`MAX_REMOTE_TYPES`] slots of this process (a type seen again keeps its slot).

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use cameleon::catalogue::{BuildContext, BuildFn, Catalogue, CatalogueEntry, ParamInfo};
use cameleon::operator::{
    Firing, OpSettings, OpSpec, OpState, ParamError, Params, PortSpec, TypeRef,
};
use cameleon::policy::{Family, Policy};
use cameleon::tools::Schema;
use cameleon::{Execution, OpError, Operator};
use serde_json::{Value as Json, json};

use crate::wire::{WireOpType, WirePort};

/// How many operator types one process can take from satellites without linking them.
pub const MAX_REMOTE_TYPES: usize = 64;

/// The description of the operator type of `entry`, as a satellite sends it.
pub fn describe(entry: &CatalogueEntry) -> WireOpType {
    let spec = (entry.spec)();
    let ports = |ps: &[PortSpec]| -> Vec<WirePort> {
        ps.iter()
            .map(|p| WirePort {
                name: p.name.to_string(),
                ty: p.ty.display_name().into_owned(),
                optional: p.optional,
            })
            .collect()
    };
    // Whether it keeps a state: built with its defaults when it can be; else assumed, which is
    // always safe (a run then carries a `null` state for it).
    let stateful = (entry.build)(&Params::new(), &BuildContext::default())
        .map_or(true, |op| op.save_state().is_some());
    WireOpType {
        id: entry.id.to_owned(),
        label: entry.label.to_owned(),
        doc: entry.summary(),
        family: entry.family,
        policy: entry.policy,
        inputs: ports(&spec.inputs),
        outputs: ports(&spec.outputs),
        params: params_schema(entry.params),
        stateful,
    }
}

/// A JSON Schema of a params object from the catalogue's declarations.
fn params_schema(params: &[ParamInfo]) -> Json {
    fn of(ty: &str) -> Json {
        if let Some(inner) = ty.strip_suffix(" or null") {
            return json!({"anyOf": [of(inner), {"type": "null"}]});
        }
        if let Some(inner) = ty.strip_prefix("list of ") {
            return json!({"type": "array", "items": of(inner)});
        }
        match ty {
            "usize" | "u8" | "u16" | "u32" | "u64" => json!({"type": "integer", "minimum": 0}),
            "i32" | "i64" | "isize" => json!({"type": "integer"}),
            "f32" | "f64" => json!({"type": "number"}),
            "bool" => json!({"type": "boolean"}),
            "string" => json!({"type": "string"}),
            _ => json!({}),
        }
    }
    let props: serde_json::Map<String, Json> = params
        .iter()
        .map(|p| (p.name.to_owned(), of(p.ty)))
        .collect();
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.default.is_none())
        .map(|p| p.name)
        .collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// One remote-only type of this process.
struct Slot {
    id: &'static str,
    ty: WireOpType,
    spec: OpSpec,
    schema: Option<Schema>,
}

fn slots() -> &'static RwLock<Vec<Slot>> {
    static SLOTS: OnceLock<RwLock<Vec<Slot>>> = OnceLock::new();
    SLOTS.get_or_init(|| RwLock::new(Vec::new()))
}

/// The spec a description gives, or why it cannot be placed.
fn spec_of(t: &WireOpType) -> Result<OpSpec, String> {
    if t.family != Family::Behavioral {
        return Err(format!(
            "operator type `{}` is structural: only behavioral operators run on satellites",
            t.id
        ));
    }
    if t.policy == Policy::Custom {
        return Err(format!(
            "operator type `{}` has its own firing rule (`custom`), which a run cannot evaluate without linking it",
            t.id
        ));
    }
    let port = |p: &WirePort| -> Result<PortSpec, String> {
        let ty = match p.ty.strip_prefix('T').and_then(|n| n.parse::<u8>().ok()) {
            Some(v) => TypeRef::Var(v),
            None => TypeRef::Is(cameleon::types::type_by_name(&p.ty).ok_or_else(|| {
                format!("operator type `{}`: port `{}` has data type `{}`, which this program does not know (`cameleon catalogue --json` lists its types)", t.id, p.name, p.ty)
            })?),
        };
        let mut s = PortSpec::new(Cow::Owned(p.name.clone()), ty);
        s.optional = p.optional;
        Ok(s)
    };
    let label = if t.label.is_empty() {
        t.id.clone()
    } else {
        t.label.clone()
    };
    let mut spec = OpSpec::new(t.id.clone(), label, t.family, t.policy);
    spec.inputs = t.inputs.iter().map(port).collect::<Result<_, _>>()?;
    spec.outputs = t.outputs.iter().map(port).collect::<Result<_, _>>()?;
    Ok(spec)
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// A catalogue with every type of this program and, for each described type this program lacks,
/// a spec operator. `Err`: a description that cannot be placed, or too many types.
pub fn catalogue_with(types: &[WireOpType]) -> Result<Catalogue, String> {
    let mut cat = Catalogue::global().clone();
    for t in types {
        if cat.get(&t.id).is_some() {
            continue;
        }
        let spec = spec_of(t)?;
        let schema = match &t.params {
            Json::Null => None,
            s => Some(Schema::compile(s).map_err(|e| {
                format!(
                    "operator type `{}`: its params schema is not a JSON Schema: {e}",
                    t.id
                )
            })?),
        };
        let n = {
            let mut slots = slots()
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = match slots.iter().position(|s| s.id == t.id) {
                Some(n) => n,
                None if slots.len() < MAX_REMOTE_TYPES => {
                    slots.push(Slot {
                        id: leak(&t.id),
                        ty: t.clone(),
                        spec: spec.clone(),
                        schema: None,
                    });
                    slots.len() - 1
                }
                None => {
                    return Err(format!(
                        "more than {MAX_REMOTE_TYPES} operator types from satellites that this program does not link"
                    ));
                }
            };
            slots[n].ty = t.clone();
            slots[n].spec = spec;
            slots[n].schema = schema;
            n
        };
        let id = slots().read().map(|s| s[n].id).unwrap_or("");
        cat.insert(CatalogueEntry {
            id,
            aliases: &[],
            label: leak(if t.label.is_empty() { &t.id } else { &t.label }),
            family: t.family,
            policy: t.policy,
            doc: leak(&t.doc),
            params: &[],
            // The wire's type descriptions carry no port docs (docs/wire.md).
            ports: &[],
            spec: SPEC_FNS[n],
            build: BUILD_FNS[n],
            execution: Execution::Async,
            settings: OpSettings::default(),
        })
        .map_err(|e| e.to_string())?;
    }
    Ok(cat)
}

fn spec_slot<const N: usize>() -> OpSpec {
    let slots = slots()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    slots[N].spec.clone()
}

fn build_slot<const N: usize>(
    params: &Params,
    _cx: &BuildContext,
) -> Result<Box<dyn Operator>, ParamError> {
    let slots = slots()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let slot = &slots[N];
    if let Some(schema) = &slot.schema {
        let problems = schema.problems(&Json::Object(params.clone()), 4);
        if let Some(first) = problems.first() {
            return Err(ParamError::new(None, format!(
                "the params of `{}` do not match the schema its satellite gives: {first}",
                slot.id
            ))
            .with_hint(format!("`cameleon satellites --nats URL --json` shows the types the satellites host; `{}` is one", slot.id)));
        }
    }
    Ok(Box::new(SpecOp {
        spec: slot.spec.clone(),
        params: params.clone(),
        state: slot.ty.stateful.then_some(Json::Null),
    }))
}

macro_rules! slots {
    ($f:ident: $($n:literal)*) => { [$($f::<$n>),*] };
}

const SPEC_FNS: [fn() -> OpSpec; MAX_REMOTE_TYPES] = slots!(spec_slot:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

const BUILD_FNS: [BuildFn; MAX_REMOTE_TYPES] = slots!(build_slot:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63);

/// An instance of an operator type this program does not link: its ports and firing rule from
/// its description, its state as JSON. It fires only through a satellite.
struct SpecOp {
    spec: OpSpec,
    params: Params,
    /// The internal state as its satellite last returned it (`null` before the first firing);
    /// `None` for a stateless type.
    state: Option<Json>,
}

impl Operator for SpecOp {
    fn spec(&self) -> OpSpec {
        self.spec.clone()
    }

    fn params(&self) -> Params {
        self.params.clone()
    }

    fn run(&mut self, _cx: &mut Firing<'_>) -> Result<(), OpError> {
        Err(OpError::new(format!(
            "operator type `{}` is not linked into this program: it fires on a satellite only (give the instance `placement: remote` and run with `--nats URL`)",
            self.spec.type_id
        )))
    }

    fn save_state(&self) -> Option<OpState> {
        self.state.clone().map(OpState::serde)
    }

    fn restore_state(&mut self, state: &OpState) {
        if let Some(j) = state.get::<Json>() {
            self.state = Some(j.clone());
        }
    }
}
