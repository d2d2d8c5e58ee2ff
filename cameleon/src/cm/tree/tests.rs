//! Unit tests of the located tree and its `Deserializer`.

use serde::Deserialize;

use super::{Kind, from_node, parse};

#[test]
fn nodes_carry_line_column_and_byte_span() {
    let src = "name: \"é\"\nops:\n  - id: a\n";
    let t = parse(src).unwrap();
    let Some(Kind::Seq(ops)) = t.get("ops").map(|n| &n.kind) else {
        panic!("ops is a list")
    };
    let (k, v) = ops[0].entry("id").unwrap();
    assert_eq!((k.span.line, k.span.column), (3, 5));
    assert_eq!(&src[v.span.offset..v.span.offset + v.span.len], "a");
}

#[test]
fn yaml_1_1_booleans_are_plain_strings() {
    let t = parse("y: 1\nn: yes\n").unwrap();
    let m = t.as_map().unwrap();
    assert_eq!(m[0].0.as_str(), Some("y"));
    assert_eq!(m[1].1.as_str(), Some("yes"));
}

#[test]
fn unknown_keys_are_all_reported_with_their_location() {
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // only deserialized, to see the errors
    struct CmConnection {
        from: String,
        to: String,
    }
    let src = "from: a.b\ntoo: c.d\nfrmo: x\n";
    let t = parse(src).unwrap();
    let e = from_node::<CmConnection>(&t, src).unwrap_err();
    assert_eq!(e.0.len(), 2);
    assert_eq!(e.0[0].span.map(|s| s.line), Some(2));
    assert_eq!(e.0[0].hint.as_deref(), Some("did you mean `to`?"));
    assert_eq!(e.0[1].span.map(|s| s.line), Some(3));
}

#[test]
fn type_errors_point_at_the_value() {
    let src = "a:\n  - 1\n  - [x]\n";
    let t = parse(src).unwrap();
    let e = from_node::<std::collections::BTreeMap<String, Vec<u32>>>(&t, src).unwrap_err();
    assert_eq!(e.0[0].span.map(|s| (s.line, s.column)), Some((3, 5)));
    assert!(
        e.0[0].message.contains("found a list"),
        "{}",
        e.0[0].message
    );
}

#[test]
fn non_finite_numbers_are_refused() {
    for text in ["x: .nan\n", "x: -.inf\n"] {
        let e = parse(text).expect_err("not a finite number");
        assert_eq!(
            e.message, "`.nan` and `.inf` are not allowed in .cm files: numbers must be finite",
            "{text:?}"
        );
        assert!(!e.is_limit);
        assert!(
            e.hint
                .as_deref()
                .is_some_and(|h| h.contains("finite number")),
            "{:?}",
            e.hint
        );
        assert_eq!(e.span.line, 1, "{text:?}");
    }
}
