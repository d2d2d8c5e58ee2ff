//! Tests of loading and writing `.cm` files.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::net::ProblemKind;
use crate::ops::{Const, Fork, Format, Guard, Merge, Sink, Source, Test, Transform};

const RICH: &str = "\
cameleon: 1
name: rich
config:
  mode: parallel
  max_loop_iterations: 50
operators:
  - id: zero
    type: const
    label: Start at zero
    instance: 3
    x: 90
    y: 150.5
    params:
      value: {n: 0, tags: [a, b c, \"true\"], nested: {deep: [1, 2.5, null]}}
  - id: loop
    type: merge
  - id: check
    type: guard
    params:
      continue_if: {lt: 3}
  - id: out
    type: sink
connections:
  - from: zero.out_data
    to: loop.in_a
  - from: loop.out_data
    to: check.in_data
  - from: check.out_continue
    to: loop.in_b
  - from: check.out_exit
    to: out.in_data
";

fn problems(text: &str) -> Vec<CmProblem> {
    Net::from_cm(text)
        .expect_err("the text should not load")
        .problems()
        .to_vec()
}

#[test]
fn canonical_text_round_trips_byte_for_byte() {
    let net = Net::from_cm(RICH).unwrap();
    assert_eq!(net.to_cm(), RICH);
    let again = Net::from_cm(&net.to_cm()).unwrap();
    assert_eq!(again, net);
}

#[test]
fn loading_keeps_instance_label_position_and_config() {
    let net = Net::from_cm(RICH).unwrap();
    let zero = &net.operators()[0];
    assert_eq!(zero.instance, Some(3));
    assert_eq!(zero.pos, Some((90.0, 150.5)));
    assert_eq!(zero.label.as_deref(), Some("Start at zero"));
    assert_eq!(net.config().mode, crate::net::Mode::Parallel);
    assert_eq!(net.config().max_loop_iterations, 50);
}

#[test]
fn a_net_built_in_code_writes_and_reads_back_equal() {
    let mut b = Net::builder("code");
    b.add("text", Source::new("a: b # not a comment\n\"quoted\"\ttab"))
        .at(10.0, -20.25)
        .label("Text");
    b.add("n", Const::new(json!({"k": [1, 2.0, "x, y", {"": null}]})));
    b.add("fork", Fork::<crate::types::Any>::new(3).unwrap());
    b.add(
        "fmt",
        Format {
            separator: " | ".into(),
        },
    );
    b.add("t", Transform::new());
    b.add("out", Sink::new());
    b.add("out2", Sink::new()).instance(7);
    b.connect("text.out_data", "fork.in_data")
        .connect("fork.out_a", "fmt.in_main")
        .connect("fork.out_b", "fmt.in_meta")
        .connect("fork.out_c", "out2.in_data")
        .connect("fmt.out_data", "t.in_data")
        .connect("t.out_data", "out.in_data")
        .connect("n.out_data", "out2.in_data");
    // `out2.in_data` has two connections: fix it with a merge to keep the net valid.
    let mut b2 = Net::builder("code");
    b2.add("text", Source::new("a: b # not a comment\n\"quoted\"\ttab"))
        .at(10.0, -20.25)
        .label("Text");
    b2.add("n", Const::new(json!({"k": [1, 2.0, "x, y", {"": null}]})));
    b2.add("fork", Fork::<crate::types::Any>::new(3).unwrap());
    b2.add(
        "fmt",
        Format {
            separator: " | ".into(),
        },
    );
    b2.add("t", Transform::new());
    b2.add("m", Merge::<crate::types::Any>::new(2).unwrap());
    b2.add("out", Sink::new());
    b2.add("out2", Sink::new()).instance(7);
    b2.connect("text.out_data", "fork.in_data")
        .connect("fork.out_a", "fmt.in_main")
        .connect("fork.out_b", "fmt.in_meta")
        .connect("fork.out_c", "m.in_a")
        .connect("n.out_data", "t.in_data")
        .connect("fmt.out_data", "m.in_b")
        .connect("m.out_data", "out2.in_data")
        .connect("t.out_data", "out.in_data");
    let e = b.build().expect_err("`out2.in_data` has two connections");
    assert_eq!(e.problems.len(), 1, "{e}");
    assert_eq!(e.problems[0].kind, ProblemKind::InputHasManyConnections);
    assert!(
        e.problems[0]
            .message
            .contains("`out2.in_data` has 2 connections"),
        "{}",
        e.problems[0].message
    );
    let net = b2.build().unwrap();
    let text = net.to_cm();
    let back = Net::from_cm(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(back, net);
    assert_eq!(back.to_cm(), text);
}

#[test]
fn files_of_the_original_shape_load_unchanged() {
    // No `cameleon`, no `name`, no `type`: `id` is the catalogue id.
    let text = "\
operators:
  - id: source
    label: Hello
    instance: 1
    x: 90
    y: 150
    params: {value: hello}
  - id: transform
    instance: 1
    x: 300
    y: 150
  - id: sink
    instance: 2
    x: 500
    y: 150
connections:
  - from: source.out_data
    to: transform.in_data
  - from: transform.out_data
    to: sink.in_data
";
    let net = Net::from_cm(text).unwrap();
    let types: Vec<&str> = net.operators().iter().map(|o| &*o.spec.type_id).collect();
    assert_eq!(types, ["source", "transform", "sink"]);
    assert_eq!(net.operators()[2].instance, Some(2));
    assert_eq!(net.operators()[1].pos, Some((300.0, 150.0)));
    // The canonical form makes the type explicit and keeps the rest.
    let canonical = net.to_cm();
    assert!(canonical.starts_with("cameleon: 1\noperators:\n  - id: source\n    type: source\n    label: Hello\n    instance: 1\n    x: 90\n    y: 150\n"), "{canonical}");
}

#[test]
fn aliases_are_written_as_the_catalogue_id() {
    let text = "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: c, type: const, params: {value: true}}\n  - {id: g, type: switch}\n  - {id: out, type: sink}\nconnections:\n  - {from: s.out_data, to: g.in_data}\n  - {from: c.out_data, to: g.in_condition}\n  - {from: g.out_true, to: out.in_data}\n";
    let ps = problems(text);
    // `const` gives DataJSON, the gate's condition is a DataBool: the alias `switch` is the gate.
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!(ps[0].kind, CmProblemKind::Net(ProblemKind::TypeMismatch));
    assert_eq!((ps[0].line, ps[0].column), (8, 6));
    assert_eq!(
        ps[0].message,
        "type mismatch: `c.out_data` gives DataJSON, but `g.in_condition` expects DataBool"
    );
    let text = text
        .replace(
            "{id: c, type: const, params: {value: true}}",
            "{id: c, type: predicate, params: {test: {eq: x}}}",
        )
        .replace(
            "{from: c.out_data, to: g.in_condition}",
            "{from: c.out_data, to: g.in_condition}\n  - {from: s2.out_data, to: c.in_data}",
        )
        .replace(
            "operators:\n",
            "operators:\n  - {id: s2, type: source, params: {value: x}}\n",
        );
    let net = Net::from_cm(&text).unwrap_or_else(|e| panic!("{e}"));
    assert!(net.to_cm().contains("  - id: g\n    type: gate\n"));
}

#[test]
fn every_problem_of_a_file_is_reported_with_line_column_and_hint() {
    let text = "\
cameleon: 1
name: broken
operators:
  - id: src
    type: source
    params: {value: hi}
  - id: up
    type: transfrom
  - id: chunk
    type: chunker
    params: {size: 10, overlp: 2}
  - id: flag
    type: sink
    colour: red
  - id: out
    type: sink
connections:
  - from: src.out_dat
    to: chunk.in_data
  - from: src.out_data
    to: out.in_data
  - from: up.out_data
    to: flag.in_data
  - from: chunk.out_data
    to: out.in_data
";
    let ps = problems(text);
    let summary: Vec<(CmProblemKind, usize)> = ps.iter().map(|p| (p.kind, p.line)).collect();
    assert_eq!(
        summary,
        [
            (CmProblemKind::UnknownType, 8),
            (CmProblemKind::Param, 11),
            (CmProblemKind::Schema, 14),
            (CmProblemKind::Net(ProblemKind::UnknownPort), 18),
            (CmProblemKind::Net(ProblemKind::InputHasManyConnections), 25),
        ],
        "{ps:#?}"
    );
    assert_eq!(ps[0].hint.as_deref(), Some("did you mean `transform`?"));
    assert_eq!(ps[0].column, 11);
    assert_eq!(ps[0].snippet, "    type: transfrom");
    assert_eq!(ps[1].hint.as_deref(), Some("did you mean `overlap`?"));
    assert_eq!(ps[2].message, "unknown key `colour` in an operator");
    assert_eq!(ps[3].hint.as_deref(), Some("did you mean `out_data`?"));
    assert!(
        ps[4]
            .hint
            .as_deref()
            .unwrap_or_default()
            .contains("join them with a merge")
    );
    // `up` has an unknown type: the connection from it is not reported a second time.
    assert!(
        !ps.iter()
            .any(|p| p.message.contains("unknown operator `up`"))
    );
}

/// Two swapped letters are one typo (an optimal-string-alignment distance of 1): in a short
/// name, where two edits would be too many to suggest anything, the loader still suggests the
/// name meant — for a type, a key, a param, a port.
#[test]
fn a_transposed_pair_of_letters_gets_a_did_you_mean() {
    let text = "\
naem: swapped
operators:
  - id: src
    type: source
    params: {value: hi}
  - id: cut
    type: chunker
    params: {szie: 10}
  - id: out
    type: snik
connections:
  - from: src.out_data
    to: cut.in_data
";
    let ps = problems(text);
    let found: Vec<(CmProblemKind, usize, Option<&str>)> = ps
        .iter()
        .map(|p| (p.kind, p.line, p.hint.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (CmProblemKind::Schema, 1, Some("did you mean `name`?")),
            (CmProblemKind::Param, 8, Some("did you mean `size`?")),
            (CmProblemKind::UnknownType, 10, Some("did you mean `sink`?")),
        ],
        "{ps:#?}"
    );
    assert_eq!(ps[0].message, "unknown key `naem` in the file");
    assert!(ps[1].message.contains("`szie`"), "{}", ps[1].message);
    assert_eq!(ps[2].message, "unknown operator type `snik`");
    let ps = problems(
        "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: o, type: sink}\nconnections:\n  - {from: s.out_data, to: o.in_dtaa}\n",
    );
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!(ps[0].kind, CmProblemKind::Net(ProblemKind::UnknownPort));
    assert_eq!(
        (ps[0].line, ps[0].hint.as_deref()),
        (5, Some("did you mean `in_data`?"))
    );
    // A longer misspelling: `tranfsorm`.
    let ps = problems("operators:\n  - {id: t, type: tranfsorm}\n");
    assert_eq!(ps[0].kind, CmProblemKind::UnknownType);
    assert_eq!(ps[0].hint.as_deref(), Some("did you mean `transform`?"));
}

#[test]
fn a_wrong_input_port_is_reported_once_not_also_as_an_unconnected_input() {
    let ps = problems(
        "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: o, type: sink}\nconnections:\n  - {from: s.out_data, to: o.in_dat}\n",
    );
    let kinds: Vec<_> = ps.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [CmProblemKind::Net(ProblemKind::UnknownPort)],
        "{ps:#?}"
    );
    assert_eq!(ps[0].hint.as_deref(), Some("did you mean `in_data`?"));
}

#[test]
fn type_mismatch_and_unconnected_inputs_are_located() {
    let text = "\
operators:
  - id: flag
    type: predicate
    params:
      test: {eq: x}
  - id: fmt
    type: format
  - id: src
    type: source
    params: {value: x}
connections:
  - from: src.out_data
    to: flag.in_data
  - from: flag.out_data
    to: fmt.in_main
";
    let ps = problems(text);
    let kinds: Vec<_> = ps.iter().map(|p| (p.kind, p.line)).collect();
    assert_eq!(
        kinds,
        [
            (CmProblemKind::Net(ProblemKind::UnconnectedInput), 6),
            (CmProblemKind::Net(ProblemKind::TypeMismatch), 14),
        ],
        "{ps:#?}"
    );
    assert!(ps[1].message.contains("DataBool") && ps[1].message.contains("DataString"));
}

#[test]
fn structural_ports_are_inferred_across_the_file() {
    let ok = "operators:\n  - {id: s, type: source, params: {value: x}}\n  - {id: f, type: fork}\n  - {id: fmt, type: format}\n  - {id: out, type: sink}\nconnections:\n  - {from: s.out_data, to: f.in_data}\n  - {from: f.out_a, to: fmt.in_main}\n  - {from: f.out_b, to: fmt.in_meta}\n  - {from: fmt.out_data, to: out.in_data}\n";
    Net::from_cm(ok).unwrap();
    let bad = ok.replace(
        "{id: s, type: source, params: {value: x}}",
        "{id: s, type: const, params: {value: x}}",
    );
    let ps = problems(&bad);
    let found: Vec<(CmProblemKind, usize, &str)> = ps
        .iter()
        .map(|p| (p.kind, p.line, p.message.as_str()))
        .collect();
    // Both of the fork's outputs, each at its connection, naming the connection that fixed the
    // fork's type.
    assert_eq!(
        found,
        [
            (
                CmProblemKind::Net(ProblemKind::TypeMismatch),
                8,
                "type mismatch: `f.out_a` gives DataJSON, but `fmt.in_main` expects DataString (the type was fixed by `s.out_data -> f.in_data`)"
            ),
            (
                CmProblemKind::Net(ProblemKind::TypeMismatch),
                9,
                "type mismatch: `f.out_b` gives DataJSON, but `fmt.in_meta` expects DataString (the type was fixed by `s.out_data -> f.in_data`)"
            ),
        ],
        "{ps:#?}"
    );
}

#[test]
fn unknown_and_misplaced_keys_are_errors_not_ignored() {
    let ps = problems("cameleon: 1\nnme: x\noperators: []\nconnection: []\n");
    assert_eq!(ps.len(), 2, "{ps:#?}");
    assert_eq!((ps[0].line, ps[0].column), (2, 1));
    assert_eq!(ps[0].hint.as_deref(), Some("did you mean `name`?"));
    assert_eq!(ps[1].hint.as_deref(), Some("did you mean `connections`?"));
    let ps = problems(
        "operators:\n  - id: a\n    type: sink\n    params: {}\n    extra: 1\n    more: 2\n",
    );
    let schema: Vec<(usize, usize, &str)> = ps
        .iter()
        .filter(|p| p.kind == CmProblemKind::Schema)
        .map(|p| (p.line, p.column, p.message.as_str()))
        .collect();
    assert_eq!(
        schema,
        [
            (5, 5, "unknown key `extra` in an operator"),
            (6, 5, "unknown key `more` in an operator")
        ],
        "{ps:#?}"
    );
    let ps = problems("config:\n  mode: paralel\noperators: []\n");
    assert_eq!(ps[0].line, 2);
    assert_eq!(ps[0].hint.as_deref(), Some("did you mean `parallel`?"));
}

#[test]
fn wrong_types_and_missing_keys_are_reported_per_item() {
    let ps = problems(
        "operators:\n  - id: a\n    type: sink\n    x: left\n    y: 3\n  - type: sink\nconnections:\n  - from: a.out\n",
    );
    let lines: Vec<usize> = ps.iter().map(|p| p.line).collect();
    assert_eq!(lines, [4, 6, 8], "{ps:#?}");
    assert!(ps[0].message.contains("expected f64"), "{}", ps[0].message);
    assert_eq!(ps[1].message, "missing key `id`");
    assert_eq!(ps[2].message, "missing key `to`");
}

#[test]
fn a_position_needs_both_coordinates() {
    let ps = problems(
        "operators:\n  - id: s\n    type: source\n    x: 3\n    params: {value: v}\n  - {id: o, type: sink}\nconnections:\n  - {from: s.out_data, to: o.in_data}\n",
    );
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].line, 4);
    assert!(ps[0].message.contains("has `x` but no `y`"));
}

#[test]
fn newer_format_versions_are_refused() {
    let ps = problems("cameleon: 2\noperators: []\n");
    assert_eq!(ps[0].kind, CmProblemKind::Version);
    assert_eq!((ps[0].line, ps[0].column), (1, 11));
}

#[test]
fn params_errors_point_at_the_param() {
    let text = "operators:\n  - id: c\n    type: chunker\n    params:\n      size: 10\n      overlap: many\n";
    let ps = problems(text);
    assert_eq!(ps[0].kind, CmProblemKind::Param);
    assert_eq!(ps[0].line, 6);
    assert!(
        ps[0].message.starts_with("`c` (chunker): "),
        "{}",
        ps[0].message
    );
    // A missing required param points at the operator.
    let ps = problems(
        "operators:\n  - id: s\n    type: source\n  - {id: o, type: sink}\nconnections:\n  - {from: s.out_data, to: o.in_data}\n",
    );
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!(ps[0].line, 3);
    assert!(ps[0].message.contains("missing param `value`"));
}

#[test]
fn a_bad_test_param_says_which_part_of_the_test_is_wrong() {
    let ps = problems(
        "operators:\n  - id: p\n    type: predicate\n    params:\n      test: {all: [{gt: 0}, {lte: 3}]}\n",
    );
    let p = ps
        .iter()
        .find(|p| p.kind == CmProblemKind::Param)
        .unwrap_or_else(|| panic!("{ps:#?}"));
    assert_eq!(
        (p.line, p.snippet.as_str()),
        (5, "      test: {all: [{gt: 0}, {lte: 3}]}")
    );
    assert_eq!(
        p.message,
        r#"`p` (predicate): param `test` expects test, got `{"all":[{"gt":0},{"lte":3}]}`"#
    );
    let hint = p.hint.as_deref().unwrap_or_default();
    assert!(
        hint.starts_with("in `all` (item 2): unknown test `lte`")
            && hint.contains("did you mean `lt`?"),
        "{hint}"
    );
}

#[test]
fn a_custom_catalogue_resolves_the_types() {
    let empty = crate::catalogue::Catalogue::new();
    let e = Net::from_cm_in("operators:\n  - {id: o, type: sink}\n", &empty).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.kind, CmProblemKind::UnknownType);
    assert_eq!((p.line, p.column), (2, 19), "at `sink`");
    assert_eq!(p.message, "unknown operator type `sink`");
    let hint = p.hint.as_deref().unwrap_or_default();
    assert!(
        hint.starts_with("`cameleon catalogue` lists the operator types of this build")
            && hint.contains("a satellite may host it: with `--nats URL`"),
        "{hint}"
    );
}

#[test]
fn syntax_errors_are_located() {
    // A key indented one space too far.
    let ps = problems("operators:\n  - id: a\n   type: [b\n");
    assert_eq!(ps.len(), 1, "{ps:#?}");
    assert_eq!(ps[0].kind, CmProblemKind::Syntax);
    assert_eq!((ps[0].line, ps[0].column), (3, 4), "{ps:#?}");
    assert_eq!(ps[0].snippet, "   type: [b");
    assert!(
        ps[0].message.contains("block collection"),
        "{}",
        ps[0].message
    );
    let ps = problems("a: 1\na: 2\n");
    assert_eq!(ps[0].kind, CmProblemKind::Syntax);
    assert_eq!((ps[0].line, ps[0].column), (2, 1));
    assert_eq!(ps[0].message, "duplicate mapping key: a");
    for (text, holds) in [
        ("", "nothing (null)"),
        ("[1, 2]", "a list"),
        ("just text", "a string"),
        ("~", "nothing (null)"),
    ] {
        let ps = problems(text);
        assert_eq!(ps.len(), 1, "{text:?}: {ps:#?}");
        assert_eq!(ps[0].kind, CmProblemKind::Schema, "{text:?}: {ps:#?}");
        assert_eq!((ps[0].line, ps[0].column), (1, 1), "{text:?}");
        assert_eq!(
            ps[0].message,
            format!(
                "a .cm file is a mapping with `operators:` and `connections:`, but this file holds {holds}"
            ),
            "{text:?}"
        );
    }
}

#[test]
fn errors_render_with_the_file_name_and_snippet() {
    let e = Loader::new()
        .file_name("demo.cm")
        .load_str("operators:\n  - id: s\n    type: sourc\n")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "demo.cm:3:11: unknown operator type `sourc` (hint: did you mean `source`?)"
    );
    // As a miette diagnostic (the command line draws it): one related diagnostic per problem,
    // with its code, hint and a label on the text at fault in the named source.
    use miette::Diagnostic;
    let problem = e.related().unwrap().next().unwrap();
    assert_eq!(problem.code().unwrap().to_string(), "cm::unknown_type");
    assert_eq!(
        problem.help().unwrap().to_string(),
        "did you mean `source`?"
    );
    let label = problem.labels().unwrap().next().unwrap();
    assert_eq!(label.label(), Some("unknown operator type"));
    let span = e
        .source_code()
        .unwrap()
        .read_span(label.inner(), 0, 0)
        .unwrap();
    assert_eq!(std::str::from_utf8(span.data()).unwrap(), "sourc");
    assert_eq!(span.name(), Some("demo.cm"));
    assert_eq!((span.line() + 1, span.column() + 1), (3, 11));
}

#[test]
fn an_unknown_key_is_reported_alone_and_the_declaration_still_counts() {
    // The connection has a stray key: it is reported, but the connection still exists, so
    // neither "source feeds nothing" nor "input not connected" follows from it.
    let text = "name: x\noperators:\n  - {id: a, type: source, params: {value: hi}}\n  \
                - {id: b, type: sink, colour: red}\nconnections:\n  \
                - {from: a.out_data, to: b.in_data, via: x}\n";
    let e = Net::from_cm(text).expect_err("stray keys are errors");
    let messages: Vec<&str> = e.problems().iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "unknown key `colour` in an operator",
            "unknown key `via` in a connection"
        ],
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile input

/// Refused with the expected kind of problem, saying so, at the given line. How fast is
/// measured by the `cm` benchmark, not asserted here (timed tests flake on a loaded machine).
fn assert_refused_fast(text: &str, kind: CmProblemKind, line: usize, says: &str) {
    let e = Net::from_cm(text).expect_err("should be refused");
    let p = &e.problems()[0];
    assert_eq!((p.kind, p.line), (kind, line), "{e}");
    assert!(p.message.contains(says), "{}", p.message);
}

#[test]
fn alias_expansion_bombs_are_refused_fast() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("operators: []\n");
    // The first alias whose expansion passes the limit.
    assert_refused_fast(
        &text,
        CmProblemKind::Limit,
        5,
        "the file looks like an alias-expansion bomb",
    );
}

#[test]
fn deep_nesting_is_refused_fast() {
    let deep = format!(
        "operators: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_refused_fast(
        &deep,
        CmProblemKind::Limit,
        1,
        "values nest more than 32 levels deep",
    );
    let mut block = String::from("operators:\n");
    for i in 0..200 {
        block.push_str(&" ".repeat(2 * i + 2));
        block.push_str("- \n");
    }
    // The 33rd level is on line 33.
    assert_refused_fast(
        &block,
        CmProblemKind::Limit,
        33,
        "values nest more than 32 levels deep",
    );
}

#[test]
fn huge_files_are_refused_before_parsing() {
    let huge = format!(
        "name: \"{}\"\noperators: []\n",
        "x".repeat(limits::MAX_FILE_BYTES)
    );
    assert_refused_fast(
        &huge,
        CmProblemKind::Limit,
        1,
        &format!(
            "; .cm files are limited to {} bytes",
            limits::MAX_FILE_BYTES
        ),
    );
}

#[test]
fn problems_on_very_long_lines_have_cropped_snippets() {
    // miette cannot draw a label past column 65 535: the snippet is cropped around the problem,
    // and the diagnostic leaves the source out (the command line draws a cropped window).
    let text = format!(
        "x: [{}]\noperators: []\n",
        vec!["1"; limits::MAX_NODES + 10].join(",")
    );
    let e = Net::from_cm(&text).unwrap_err();
    assert!(e.problems()[0].snippet.chars().count() < 200);
    assert!(e.problems()[0].snippet.contains("…1,1,1"));
    assert!(miette::Diagnostic::source_code(&e).is_none());
    assert!(e.to_string().contains("50000"), "{e}");
}

#[test]
fn many_values_are_refused() {
    let mut text = String::from("operators: []\nname: x\nconfig: {}\n");
    text.insert_str(
        0,
        &format!("x: [{}]\n", vec!["1"; limits::MAX_NODES + 10].join(",")),
    );
    assert_refused_fast(
        &text,
        CmProblemKind::Limit,
        1,
        "the file expands to more than 50000 YAML values",
    );
}

#[test]
fn file_reading_operators_are_confined_to_the_file_folder() {
    let dir = std::env::temp_dir().join(format!("cameleon-cm-confine-{}", std::process::id()));
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(dir.join("secret.txt"), "secret").unwrap();
    std::fs::write(inner.join("ok.txt"), "ok").unwrap();
    let cm = |path: &str| {
        format!(
            "operators:\n  - {{id: f, type: text_file, params: {{path: {path:?}}}}}\n  - {{id: o, type: sink}}\nconnections:\n  - {{from: f.out_data, to: o.in_data}}\n"
        )
    };
    std::fs::write(inner.join("inside.cm"), cm("ok.txt")).unwrap();
    std::fs::write(inner.join("outside.cm"), cm("../secret.txt")).unwrap();

    let run = |net: Net| {
        let mut cvm = crate::Cvm::new(net);
        let end = cvm.run().unwrap();
        let got: Vec<_> = cvm.received("o").iter().map(|v| v.to_json()).collect();
        (end, got)
    };
    let (end, got) = run(Net::from_cm_file(inner.join("inside.cm")).unwrap());
    assert_eq!((end, got), (crate::EndState::Completed, vec![json!("ok")]));
    let (end, got) = run(Net::from_cm_file(inner.join("outside.cm")).unwrap());
    assert!(
        matches!(&end, crate::EndState::Error { error, .. } if error.contains("leaves")),
        "{end:?}"
    );
    assert!(got.is_empty());
    let allowed = Loader::new()
        .allow_outside(true)
        .load_file(inner.join("outside.cm"))
        .unwrap();
    let (end, got) = run(allowed);
    assert_eq!(
        (end, got),
        (crate::EndState::Completed, vec![json!("secret")])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary YAML-ish text never panics the loader.
    #[test]
    fn loading_arbitrary_yamlish_text_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("operators:\n".to_owned()),
                Just("connections:\n".to_owned()),
                Just("  - id: a\n".to_owned()),
                Just("    type: source\n".to_owned()),
                Just("    params: {value: x}\n".to_owned()),
                Just("  - from: a.out_data\n    to: b.in_data\n".to_owned()),
                Just("&x ".to_owned()),
                Just("*x".to_owned()),
                Just("<<: *x\n".to_owned()),
                Just("[{".to_owned()),
                Just("}]".to_owned()),
                Just("\t".to_owned()),
                Just("---\n".to_owned()),
                Just("!!binary aGk=\n".to_owned()),
                Just("x: .nan\n".to_owned()),
                "[ -~]{0,12}",
                "\\PC{0,6}",
            ],
            0..24,
        )
    ) {
        let text: String = parts.concat();
        if let Err(e) = Net::from_cm(&text) {
            // Every error reports, with its snippets (the graphical rendering is the command
            // line's, tested there).
            prop_assert!(!e.problems().is_empty());
            let mut out = String::new();
            prop_assert!(miette::NarratableReportHandler::new().render_report(&mut out, &e).is_ok());
            prop_assert!(out.contains(&e.problems()[0].message));
        }
        let _ = Loader::new().parse_str(&text);
    }

    /// Any string survives a write and a read, whatever it holds.
    #[test]
    fn any_string_param_round_trips(s in "\\PC*|[ -~\\n\\t\"'\\\\:#{}]*", label in "\\PC{1,10}") {
        let mut b = Net::builder(s.clone());
        b.add("src", Source::new(s.clone())).label(label);
        b.add("out", Sink::new());
        b.connect("src.out_data", "out.in_data");
        let net = b.build().unwrap();
        let text = net.to_cm();
        let back = Net::from_cm(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &net);
        prop_assert_eq!(back.to_cm(), text);
    }

    /// Any JSON value survives a write and a read as a `const` value.
    #[test]
    fn any_json_param_round_trips(v in json_value()) {
        let mut b = Net::builder("j");
        b.add("c", Const::new(v));
        b.add("out", Sink::new());
        b.connect("c.out_data", "out.in_data");
        let net = b.build().unwrap();
        let text = net.to_cm();
        let back = Net::from_cm(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &net);
        prop_assert_eq!(back.to_cm(), text);
    }

    /// Positions and guard tests survive a write and a read.
    #[test]
    fn positions_and_tests_round_trip(x in -1e7f64..1e7, y in -1e7f64..1e7, whole in any::<bool>(), n in -1000i64..1000) {
        let (x, y) = if whole { (x.trunc(), y.trunc()) } else { (x, y) };
        let mut b = Net::builder("p");
        b.add("c", Const::new(json!(n))).at(x, y);
        b.add("g", Guard::<crate::types::Any>::new(Test::parse(&json!({"all": [{"gt": n}, {"not": {"eq": "x"}}]})).unwrap()));
        b.add("a", Sink::new());
        b.add("z", Sink::new());
        b.connect("c.out_data", "g.in_data").connect("g.out_continue", "a.in_data").connect("g.out_exit", "z.in_data");
        let net = b.build().unwrap();
        let text = net.to_cm();
        let back = Net::from_cm(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&back, &net);
        prop_assert_eq!(back.to_cm(), text);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        (-1e300f64..1e300).prop_map(serde_json::Value::from),
        "\\PC{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
            proptest::collection::vec(("\\PC{0,6}", inner), 0..5)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------------------------------------
// `tools:` and `placement:`

const WITH_TOOLS: &str = "\
cameleon: 1
name: tools
tools:
  allow: [calc, json_query]
  approve: [write_file]
operators:
  - id: args
    type: const
    params:
      value: {expr: 1 + 2}
  - id: sum
    type: tool
    params:
      name: calc
    placement: remote
  - id: out
    type: sink
connections:
  - from: args.out_data
    to: sum.in_args
  - from: sum.out_result
    to: out.in_data
";

#[test]
fn tools_and_placement_round_trip_byte_for_byte() {
    let net = Net::from_cm(WITH_TOOLS).unwrap();
    let policy = net.tool_policy().unwrap();
    assert_eq!(policy.allow, ["calc", "json_query"]);
    assert_eq!(policy.approve, ["write_file"]);
    assert_eq!(net.operators()[1].placement, crate::net::Placement::Remote);
    assert_eq!(net.operators()[0].placement, crate::net::Placement::Local);
    assert_eq!(net.to_cm(), WITH_TOOLS);
    assert_eq!(Net::from_cm(&net.to_cm()).unwrap(), net);
}

#[test]
fn an_empty_tools_key_is_a_policy_allowing_nothing_and_stays_one() {
    let text = WITH_TOOLS.replace(
        "tools:\n  allow: [calc, json_query]\n  approve: [write_file]\n",
        "tools: {}\n",
    );
    let net = Net::from_cm(&text).unwrap();
    assert_eq!(net.tool_policy(), Some(&crate::net::ToolPolicy::default()));
    assert!(net.to_cm().contains("tools:\n  allow: []\n"));
    let none = Net::from_cm(&text.replace("tools: {}\n", "")).unwrap();
    assert_eq!(none.tool_policy(), None);
    assert!(!none.to_cm().contains("tools:"));
}

#[test]
fn an_unknown_tool_is_located_with_a_did_you_mean() {
    let text = WITH_TOOLS
        .replace("allow: [calc, json_query]", "allow: [calc, json_qery]")
        .replace("name: calc", "name: cal");
    let e = Net::from_cm(&text).unwrap_err();
    let found: Vec<(CmProblemKind, usize, usize, Option<&str>)> = e
        .problems()
        .iter()
        .map(|p| (p.kind, p.line, p.column, p.hint.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (
                CmProblemKind::UnknownTool,
                4,
                17,
                Some("did you mean `json_query`?")
            ),
            (
                CmProblemKind::UnknownTool,
                14,
                13,
                Some("did you mean `calc`?")
            ),
        ]
    );
    assert!(
        e.problems()[0]
            .message
            .contains("unknown tool `json_qery` in `tools: allow:`")
    );
}

#[test]
fn a_tool_listed_twice_and_a_bad_placement_are_problems() {
    let text = WITH_TOOLS
        .replace("approve: [write_file]", "approve: [calc]")
        .replace("placement: remote", "placement: orbit");
    let e = Net::from_cm(&text).unwrap_err();
    assert_eq!(e.problems().len(), 2, "{e}");
    assert!(e.problems()[0].message.contains("listed twice"));
    assert_eq!(e.problems()[1].line, 15);
    assert!(
        e.problems()[1].hint.as_deref().unwrap().contains("`local`"),
        "{e}"
    );
}

#[test]
fn the_schema_knows_tools_and_placement() {
    let s = schema::schema();
    assert!(s["properties"]["tools"].is_object());
    let op = &s["$defs"]["CmOperator"]["properties"]["placement"];
    assert!(op.to_string().contains("Placement"), "{op}");
    assert_eq!(s["$defs"]["Placement"]["enum"], json!(["local", "remote"]));
}
