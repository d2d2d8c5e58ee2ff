use serde_json::json;

use super::*;
use crate::Net;

#[test]
fn replace_is_literal_by_default_and_uses_groups_as_a_regex() {
    assert_eq!(Replace::new("-", " ").apply("a-b-c").unwrap(), "a b c");
    assert_eq!(
        Replace::new(".", "!").apply("a.b").unwrap(),
        "a!b",
        "literal `.`"
    );
    let mut first = Replace::new("a", "o");
    first.all = false;
    assert_eq!(first.apply("banana").unwrap(), "bonana");
    let re = Replace::new(r"(\d+) (?P<what>apples)", "${what}: $1").regex();
    assert_eq!(
        re.apply("3 apples, 4 apples").unwrap(),
        "apples: 3, apples: 4"
    );
    assert_eq!(Replace::new("x", "y").apply("none").unwrap(), "none");
}

#[test]
fn case_converts_every_script_and_title_cases_words() {
    assert_eq!(Case::new("upper").apply("straße").unwrap(), "STRASSE");
    assert_eq!(Case::new("lower").apply("ÉTÉ").unwrap(), "été");
    assert_eq!(
        Case::new("title")
            .apply("the QUICK fox's den, 2nd-hand")
            .unwrap(),
        "The Quick Fox's Den, 2nd-Hand"
    );
    let e = Case::new("titel").apply("").unwrap_err();
    assert_eq!(e.param.as_deref(), Some("to"));
    assert_eq!(e.hint.as_deref(), Some("did you mean `title`?"));
}

#[test]
fn trim_takes_white_space_or_the_given_characters_from_the_chosen_ends() {
    assert_eq!(Trim::new().apply(" \t hi \n").unwrap(), "hi");
    let t = Trim {
        chars: Some("*-".into()),
        side: "end".into(),
    };
    assert_eq!(t.apply("-a-**").unwrap(), "-a");
    let t = Trim {
        chars: None,
        side: "start".into(),
    };
    assert_eq!(t.apply("  a  ").unwrap(), "a  ");
}

#[test]
fn truncate_counts_characters_and_keeps_the_ellipsis_within_max() {
    let t = Truncate::new(8).ellipsis("…");
    assert_eq!(t.apply("chameleons"), "chamele…");
    assert_eq!(t.apply("chamele…").chars().count(), 8);
    assert_eq!(
        t.apply("caméléon"),
        "caméléon",
        "8 characters, 10 bytes: unchanged"
    );
    assert_eq!(
        Truncate::new(3).apply("éèêë"),
        "éèê",
        "cut on characters, not bytes"
    );
    assert!(Truncate::new(3).ellipsis("...").validate().is_err());
    assert!(Truncate::new(0).validate().is_err());
}

#[test]
fn split_and_join_are_each_others_reverse() {
    let s = SplitText::new(",");
    assert_eq!(s.apply("a,b,,c").unwrap(), ["a", "b", "", "c"]);
    let mut r = SplitText::new(r"[,;]\s*");
    r.regex = true;
    assert_eq!(r.apply("a, b;c").unwrap(), ["a", "b", "c"]);
    let mut tidy = SplitText::new(",");
    tidy.trim = true;
    tidy.skip_empty = true;
    assert_eq!(tidy.apply(" a , ,b ").unwrap(), ["a", "b"]);
    assert_eq!(SplitText::new(",").apply("").unwrap(), [""]);
    let j = JoinText::new(",");
    let pieces = json!(s.apply("a,b,,c").unwrap());
    assert_eq!(j.apply(&pieces).unwrap(), "a,b,,c");
    assert_eq!(
        JoinText::new(", ")
            .apply(&json!(["a", 2, true, null, {"k": 1}]))
            .unwrap(),
        "a, 2, true, , {\"k\":1}"
    );
    let e = JoinText::new(",").apply(&json!({"a": 1})).unwrap_err();
    assert!(e.to_string().contains("received an object"), "{e}");
}

#[test]
fn regex_extract_gives_named_groups_first_or_all() {
    let x =
        RegexExtract::new(r"Order (?P<id>\d+): (?P<qty>\d+) (?P<item>\w+)(?: for (?P<who>\w+))?");
    assert_eq!(
        x.apply("Order 42: 3 apples for Alice").unwrap(),
        json!({"id": "42", "qty": "3", "item": "apples", "who": "Alice"})
    );
    assert_eq!(
        x.apply("Order 7: 1 pear").unwrap()["who"],
        json!(null),
        "a group that took no part"
    );
    assert_eq!(x.apply("nothing").unwrap(), json!(null));
    let all = x.clone().all();
    assert_eq!(all.apply("nothing").unwrap(), json!([]));
    assert_eq!(
        all.apply("Order 1: 2 figs; Order 3: 4 nuts").unwrap(),
        json!([
            {"id": "1", "qty": "2", "item": "figs", "who": null},
            {"id": "3", "qty": "4", "item": "nuts", "who": null}
        ])
    );
    assert_eq!(
        RegexExtract::new(r"\d+").apply("ab 12 cd").unwrap(),
        json!("12"),
        "no named group: the match"
    );
}

#[test]
fn patterns_are_limited_in_length_and_compiled_size() {
    let long = "a".repeat(MAX_PATTERN_CHARS + 1);
    let e = compile_pattern("find", &long).unwrap_err();
    assert!(e.message.contains("more than the 1000 allowed"), "{e}");
    // Small to write, huge once compiled: refused by the size limit, quickly.
    let e = compile_pattern("find", r"\w{1000}\w{1000}\w{1000}").unwrap_err();
    assert!(
        e.message.contains("compiles to more than 1048576 bytes"),
        "{e}"
    );
    let e = compile_pattern("find", "(abc").unwrap_err();
    assert_eq!(
        e.message,
        "`(abc` is not a valid regular expression: unclosed group"
    );
    assert!(e.hint.unwrap().contains("no look-around"));
    assert!(compile_pattern("find", r"(?P<n>\d+)").is_ok());
}

/// A one-operator net around `op` (with `params`), loaded from `.cm` text.
fn load(op: &str, params: &str) -> Result<Net, crate::cm::CmError> {
    let src = if op == "join_text" {
        "{id: src, type: const, params: {value: [a]}}"
    } else {
        "{id: src, type: source, params: {value: x}}"
    };
    Net::from_cm(&format!(
        "operators:\n  - {src}\n  - id: t\n    type: {op}\n    params: {params}\n  - {{id: out, type: sink}}\nconnections:\n  - {{from: src.out_data, to: t.in_data}}\n  - {{from: t.out_data, to: out.in_data}}\n"
    ))
}

#[test]
fn a_bad_param_is_a_problem_of_the_file_at_its_line() {
    for (op, params, param, says) in [
        (
            "replace",
            "{find: \"(a\", regex: true}",
            "find",
            "not a valid regular expression",
        ),
        ("replace", "{find: \"\"}", "find", "`find` is empty"),
        (
            "split_text",
            "{separator: \"x*\", regex: true}",
            "separator",
            "matches an empty text",
        ),
        (
            "regex_extract",
            "{pattern: \"[z-a]\"}",
            "pattern",
            "not a valid regular expression",
        ),
        ("case", "{to: camel}", "to", "unknown case `camel`"),
        ("trim", "{side: middle}", "side", "unknown side `middle`"),
        (
            "truncate",
            "{max: 2, ellipsis: \"...\"}",
            "ellipsis",
            "as long as `max`",
        ),
    ] {
        let e = load(op, params).unwrap_err();
        let p = &e.problems()[0];
        assert_eq!(p.line, 5, "{op}: {e}");
        assert!(
            e.source_text()[p.offset..].starts_with(param),
            "{op}: located at `{param}`: {e}"
        );
        assert!(p.message.contains(says), "{op}: {e}");
    }
    for (op, params) in [
        ("replace", "{find: a, with: b}"),
        ("split_text", "{separator: \",\"}"),
        ("join_text", "{separator: \", \"}"),
        ("regex_extract", "{pattern: \"(?P<x>.)\"}"),
        ("case", "{to: title}"),
        ("trim", "{}"),
        ("truncate", "{max: 3}"),
    ] {
        load(op, params).unwrap_or_else(|e| panic!("{op}: {e}"));
    }
}
