//! Unit tests of the catalogue: the standard operators as declared, building from params, and
//! the exports.

use serde_json::{Value as Json, json};

use super::*;
use crate::operator::{Execution, OpSettings, Params, PortSpec, TypeRef};
use crate::policy::{Family, Policy};

/// Every standard operator (the `ops` module table), with its ports (`name: type`, `T0` a type variable,
/// `?` an optional input), policy and params (`name=default`, `name!` required).
const STD: &[(&str, &str, &str, &str, &str)] = &[
    ("source", "", "out_data: DataString", "source", "value!"),
    ("const", "", "out_data: DataJSON", "source", "value!"),
    ("sink", "in_data: Any", "", "any", ""),
    (
        "file_loader",
        "",
        "out_data: Binary",
        "source",
        "path!, max_bytes=67108864",
    ),
    (
        "text_file",
        "",
        "out_data: DataString",
        "source",
        "path!, max_bytes=67108864",
    ),
    (
        "json_file",
        "",
        "out_data: DataJSON",
        "source",
        "path!, max_bytes=67108864",
    ),
    (
        "fork",
        "in_data: T0",
        "out_a: T0, out_b: T0",
        "any",
        "arity=2",
    ),
    (
        "join",
        "in_a: T0, in_b: T1",
        "out_data: T0",
        "all",
        "arity=2, quorum=null, cancel=[]",
    ),
    ("cancel", "in_data: T0", "out_data: T0", "any", "region!"),
    ("terminate", "in_data: T0", "", "any", ""),
    (
        "mutex",
        "in_done: Any, in_a: T0, in_b: T0",
        "out_a: T0, out_b: T0",
        "custom",
        "arity=2",
    ),
    (
        "milestone",
        "in_data: T0, in_reached: T1, in_expire: Any",
        "out_data: T0, out_passed: T1, out_late: T0",
        "custom",
        "",
    ),
    (
        "trigger",
        "in_data: T0, in_trigger: T1",
        "out_data: T0, out_lost: T1",
        "custom",
        "",
    ),
    (
        "thread_split",
        "in_data: T0",
        "out_data: T0",
        "custom",
        "n=2",
    ),
    ("thread_merge", "in_data: T0", "out_data: T0", "any", "n=2"),
    (
        "merge",
        "in_a: T0, in_b: T0",
        "out_data: T0",
        "any_no_guard",
        "arity=2",
    ),
    (
        "gate",
        "in_data: T0, in_condition: DataBool",
        "out_true: T0, out_false: T0",
        "custom",
        "",
    ),
    (
        "barrier",
        "in_a: T0, in_b: T1",
        "out_a: T0, out_b: T1",
        "all",
        "arity=2",
    ),
    (
        "guard",
        "in_data: T0",
        "out_continue: T0, out_exit: T0",
        "any",
        "continue_if!",
    ),
    (
        "accumulator",
        "in_data: Any, in_done?: Any",
        "out_data: DataJSON",
        "any_no_guard",
        "n=0",
    ),
    (
        "transform",
        "in_data: Any",
        "out_data: DataString",
        "any",
        "",
    ),
    (
        "format",
        "in_main: DataString, in_meta: DataString",
        "out_data: DataString",
        "all",
        "separator=\" \"",
    ),
    (
        "json_parse",
        "in_data: DataString",
        "out_data: DataJSON",
        "any",
        "",
    ),
    (
        "json_stringify",
        "in_data: DataJSON",
        "out_data: DataString",
        "any",
        "pretty=false",
    ),
    (
        "template",
        "in_template: DataString, in_data: DataJSON",
        "out_data: DataString",
        "all",
        "",
    ),
    (
        "binary_to_string",
        "in_data: Binary",
        "out_data: DataString",
        "any",
        "",
    ),
    (
        "json_get",
        "in_data: DataJSON",
        "out_data: DataJSON",
        "any",
        "path!",
    ),
    (
        "predicate",
        "in_data: Any",
        "out_data: DataBool",
        "any",
        "test!",
    ),
    (
        "chunker",
        "in_data: DataString",
        "out_data: DataChunk",
        "any",
        "size=512, overlap=0",
    ),
    (
        "counter",
        "in_data: DataJSON",
        "out_data: DataJSON",
        "any",
        "",
    ),
];

fn ports(ps: &[PortSpec]) -> String {
    let v: Vec<String> = ps
        .iter()
        .map(|p| {
            let opt = if p.optional { "?" } else { "" };
            format!("{}{opt}: {}", p.name, p.ty.display_name())
        })
        .collect();
    v.join(", ")
}

fn params(ps: &[ParamInfo]) -> String {
    let v: Vec<String> = ps
        .iter()
        .map(|p| match p.default {
            Some(d) => format!("{}={d}", p.name),
            None => format!("{}!", p.name),
        })
        .collect();
    v.join(", ")
}

#[test]
fn global_catalogue_has_every_standard_operator_as_declared() {
    let cat = Catalogue::global();
    for &(id, ins, outs, policy, ps) in STD {
        let e = cat
            .get(id)
            .unwrap_or_else(|| panic!("`{id}` is not in the catalogue"));
        let spec = (e.spec)();
        assert_eq!(spec.type_id, id);
        assert_eq!(ports(&spec.inputs), ins, "inputs of {id}");
        assert_eq!(ports(&spec.outputs), outs, "outputs of {id}");
        assert_eq!(e.policy.as_str(), policy, "policy of {id}");
        assert_eq!(spec.policy, e.policy, "policy of {id}'s spec");
        assert_eq!(params(e.params), ps, "params of {id}");
        assert!(!e.summary().is_empty(), "{id} has no description");
        assert!(!e.summary().contains('\n'));
    }
    assert_eq!(cat.get("switch").map(|e| e.id), Some("gate"));
    assert_eq!(cat.get("sync").map(|e| e.id), Some("barrier"));
    let ids: Vec<&str> = cat.iter().map(|e| e.id).collect();
    assert!(ids.is_sorted(), "iteration is sorted by id: {ids:?}");
}

#[test]
fn structural_and_behavioral_families_follow_the_libraries() {
    let cat = Catalogue::global();
    for id in ["fork", "join", "merge", "gate", "barrier", "guard"] {
        assert_eq!(
            cat.get(id).map(|e| e.family),
            Some(Family::Structural),
            "{id}"
        );
    }
    for id in ["accumulator", "chunker", "sink", "source", "transform"] {
        assert_eq!(
            cat.get(id).map(|e| e.family),
            Some(Family::Behavioral),
            "{id}"
        );
    }
}

#[test]
fn quick_standard_operators_run_inline_and_file_readers_on_the_blocking_pool() {
    let cat = Catalogue::global();
    let cx = BuildContext::default();
    let inline = [
        "source",
        "const",
        "sink",
        "transform",
        "format",
        "json_parse",
        "json_stringify",
        "template",
        "binary_to_string",
        "json_get",
        "predicate",
        "chunker",
        "counter",
        "accumulator",
    ];
    let kinds = [
        (&inline[..], Execution::Inline),
        (
            &["file_loader", "text_file", "json_file"],
            Execution::Blocking,
        ),
        (&["delay"], Execution::Async),
    ];
    for (ids, kind) in kinds {
        for id in ids {
            let e = cat.get(id).unwrap_or_else(|| panic!("`{id}` is missing"));
            assert_eq!(e.execution, kind, "catalogue entry of {id}");
            // What the engine asks: the built instance's own answer.
            let mut p = Params::new();
            for info in e.params.iter().filter(|i| i.default.is_none()) {
                let v = match info.ty {
                    "test" => json!({"lt": 1}),
                    "json" => json!(1),
                    _ => json!("x"),
                };
                p.insert(info.name.into(), v);
            }
            let op = cat
                .build(id, &p, &cx)
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(op.execution(), kind, "instance of {id}");
            assert_eq!(e.settings, OpSettings::NONE, "{id}");
        }
    }
    // Structural operators run inline whatever they declare; the entry says so.
    for id in ["fork", "join", "merge", "gate", "barrier", "guard"] {
        assert_eq!(cat.get(id).map(|e| e.execution), Some(Execution::Inline));
    }
}

#[test]
fn emission_sets_are_declared_for_routing_operators() {
    let cat = Catalogue::global();
    let sets = |id: &str| cat.get(id).map(|e| (e.spec)().emits).unwrap_or_default();
    assert_eq!(sets("gate"), vec![vec![0], vec![1]]);
    assert_eq!(sets("guard"), vec![vec![0], vec![1]]);
    assert_eq!(sets("accumulator"), vec![vec![], vec![0]]);
    assert!(sets("fork").is_empty());
}

#[test]
fn arity_param_adds_lettered_ports_with_their_own_type_variables() {
    let cat = Catalogue::global();
    let cx = BuildContext::default();
    let mut p = Params::new();
    p.insert("arity".into(), json!(3));
    let barrier = cat.build("sync", &p, &cx).unwrap().spec();
    assert_eq!(ports(&barrier.inputs), "in_a: T0, in_b: T1, in_c: T2");
    assert_eq!(ports(&barrier.outputs), "out_a: T0, out_b: T1, out_c: T2");
    let fork = cat.build("fork", &p, &cx).unwrap();
    assert_eq!(
        ports(&fork.spec().outputs),
        "out_a: T0, out_b: T0, out_c: T0"
    );
    assert_eq!(fork.params().get("arity"), Some(&json!(3)));
    let join = cat.build("join", &p, &cx).unwrap().spec();
    assert_eq!(join.inputs[2].ty, TypeRef::Var(2));
    p.insert("arity".into(), json!(27));
    let e = cat.build("merge", &p, &cx).err().expect("an error");
    assert!(e.to_string().contains("between 2 and 26"), "{e}");
}

#[test]
fn factory_rejects_unknown_missing_and_ill_typed_params() {
    let cat = Catalogue::global();
    let cx = BuildContext::default();
    let with = |k: &str, v: Json| {
        let mut p = Params::new();
        p.insert(k.into(), v);
        p
    };

    let BuildError::Param(e) = cat
        .build("chunker", &with("sise", json!(3)), &cx)
        .err()
        .expect("an error")
    else {
        panic!("a param error")
    };
    assert_eq!(e.message, "unknown param `sise`");
    assert_eq!(e.hint.as_deref(), Some("did you mean `size`?"));

    let BuildError::Param(e) = cat
        .build("guard", &Params::new(), &cx)
        .err()
        .expect("an error")
    else {
        panic!("a param error")
    };
    assert_eq!(e.param.as_deref(), Some("continue_if"));
    assert!(
        e.message.contains("missing param `continue_if` (test)"),
        "{e}"
    );

    let BuildError::Param(e) = cat
        .build("chunker", &with("size", json!("big")), &cx)
        .err()
        .expect("an error")
    else {
        panic!("a param error")
    };
    assert_eq!(e.param.as_deref(), Some("size"));
    assert_eq!(e.message, "param `size` expects usize, got `\"big\"`");

    let e = cat
        .build("guard", &with("continue_if", json!({"lower": 3})), &cx)
        .err()
        .expect("an error");
    assert!(e.to_string().contains("expects test"), "{e}");

    let BuildError::Param(e) = cat
        .build("chunker", &with("overlap", json!(600)), &cx)
        .err()
        .expect("an error")
    else {
        panic!("a param error")
    };
    assert_eq!(e.param.as_deref(), Some("overlap"));
}

#[test]
fn factory_fills_defaults_and_writes_params_back() {
    let cat = Catalogue::global();
    let cx = BuildContext::default();
    let op = cat.build("chunker", &Params::new(), &cx).unwrap();
    assert_eq!(
        Json::Object(op.params()),
        json!({"size": 512, "overlap": 0})
    );
    let op = cat.build("format", &Params::new(), &cx).unwrap();
    assert_eq!(op.params().get("separator"), Some(&json!(" ")));
    let mut p = Params::new();
    p.insert("continue_if".into(), json!({"lt": 10}));
    let op = cat.build("guard", &p, &cx).unwrap();
    assert_eq!(
        Json::Object(op.params()),
        json!({"continue_if": {"lt": 10}})
    );
}

#[test]
fn register_rejects_a_second_entry_with_the_same_id() {
    let mut cat = Catalogue::new();
    cat.register::<crate::ops::Gate>().unwrap();
    let e = cat
        .register::<crate::ops::Gate<crate::types::DataString>>()
        .expect_err("`gate` is registered twice");
    assert_eq!(e.id, "gate");
    assert!(cat.get("switch").is_some());
}

#[test]
fn json_export_lists_ports_types_policies_and_params_of_every_operator() {
    let cat = Catalogue::global();
    let j = cat.to_json();
    let ops = j["operators"].as_array().unwrap();
    assert_eq!(ops.len(), cat.len());
    for &(id, ..) in STD {
        assert!(ops.iter().any(|o| o["id"] == id), "{id} missing from JSON");
    }
    let chunker = ops.iter().find(|o| o["id"] == "chunker").unwrap();
    assert_eq!(chunker["policy"], "any");
    assert_eq!(chunker["family"], "behavioral");
    assert_eq!(
        chunker["inputs"],
        json!([{"name": "in_data", "type": "DataString", "optional": false, "doc": "the text to split"}])
    );
    assert_eq!(chunker["params"][0]["name"], "size");
    assert_eq!(chunker["params"][0]["type"], "usize");
    assert_eq!(chunker["params"][0]["default"], 512);
    assert_eq!(chunker["params"][0]["required"], false);
    assert_eq!(chunker["exec"], "inline");
    assert_eq!(chunker["settings"], json!({}));
    let text_file = ops.iter().find(|o| o["id"] == "text_file").unwrap();
    assert_eq!(text_file["exec"], "blocking");
    assert_eq!(text_file["effects"], "read");
    let gate = ops.iter().find(|o| o["id"] == "gate").unwrap();
    assert_eq!(gate["aliases"], json!(["switch"]));
    assert_eq!(gate["emits"], json!([["out_true"], ["out_false"]]));
    assert!(j["format"].as_str().unwrap().contains("connections:"));
    assert!(j["types"].as_array().unwrap().contains(&json!("DataChunk")));
    assert_eq!(j["policies"]["all"], Policy::All.describe());
}

#[test]
fn markdown_export_has_a_section_per_operator_with_its_ports_and_params() {
    let cat = Catalogue::global();
    let md = cat.to_markdown();
    for e in cat.iter() {
        assert!(
            md.contains(&format!("### `{}` — {}", e.id, e.label)),
            "{}",
            e.id
        );
        assert!(md.contains(&e.summary()));
    }
    assert!(md.contains("- inputs:\n  - `in_data: DataString`: the text to split\n"));
    assert!(md.contains(
        "  - `in_after: Any` (optional): optional, any type: connect the index's output so retrieval waits for indexing\n"
    ));
    // A variadic group's doc names every port of the group.
    assert!(md.contains("  - `in_b: T1`: another branch to wait for"));
    assert!(md.contains("  - `size` (usize, default `512`): characters per chunk (≥ 1)"));
    assert!(md.contains("  - `continue_if` (test, required): "));
    assert!(md.contains("- aliases: `switch`"));
    assert!(md.contains("- exec: `async`\n"), "delay's execution kind");
    assert!(md.contains("emits one of: {`out_true`} or {`out_false`}"));
}

/// An LLM writes `.cm` files from the catalogue alone: every port and every param of every
/// operator type says what it is for.
#[test]
fn every_port_and_param_of_every_operator_says_what_it_is_for() {
    let cat = Catalogue::global();
    let mut missing = Vec::new();
    for e in cat.iter() {
        let spec = (e.spec)();
        for p in spec.inputs.iter().chain(&spec.outputs) {
            if e.port_doc(&p.name).is_none_or(|d| d.trim().is_empty()) {
                missing.push(format!("{}.{}", e.id, p.name));
            }
        }
        for p in e.params {
            if p.doc.trim().is_empty() {
                missing.push(format!("{} param {}", e.id, p.name));
            }
        }
    }
    assert!(missing.is_empty(), "undocumented: {}", missing.join(", "));
}

#[test]
fn a_variadic_groups_doc_covers_its_later_letters_only() {
    let group = PortDoc {
        name: "in_b",
        group: true,
        doc: "another branch",
    };
    assert!(group.documents("in_b"));
    assert!(group.documents("in_c") && group.documents("in_z"));
    assert!(
        !group.documents("in_a"),
        "a letter before the group's first"
    );
    assert!(!group.documents("out_c") && !group.documents("in_data") && !group.documents("in_cc"));
    let single = PortDoc {
        name: "in_b",
        group: false,
        doc: "one port",
    };
    assert!(single.documents("in_b") && !single.documents("in_c"));
    // On a real operator: `mutex` documents `in_done` apart from its group `in_a`, `in_b`, ….
    let mutex = Catalogue::global().get("mutex").unwrap();
    assert_ne!(mutex.port_doc("in_done"), mutex.port_doc("in_c"));
    assert_eq!(mutex.port_doc("in_a"), mutex.port_doc("in_c"));
}
