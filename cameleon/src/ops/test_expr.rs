//! Tests on token values, written in `.cm` params (`guard.continue_if`, `predicate.test`).
//!
//! A test is evaluated on the JSON value of a token (a `DataString` compares as a string):
//! `{lt: 10}`, `{le: 10}`, `{gt: 0}`, `{ge: 0}`, `{eq: "stop"}`, `{ne: 3}`, `{contains: "x"}`,
//! `{not: {…}}`, `{all: […]}`, `{any: […]}`. No arbitrary code.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value as Json;

use crate::catalogue::{ParamType, list_param, option_param};

/// A parsed test.
#[derive(Clone, Debug, PartialEq)]
pub enum Test {
    /// Strictly less than.
    Lt(Json),
    /// Less than or equal.
    Le(Json),
    /// Strictly greater than.
    Gt(Json),
    /// Greater than or equal.
    Ge(Json),
    /// Equal (numbers compare by value: `1 == 1.0`).
    Eq(Json),
    /// Not equal.
    Ne(Json),
    /// A string contains a substring, an array an element, an object a key.
    Contains(Json),
    /// Negation.
    Not(Box<Test>),
    /// Every test holds (true when empty).
    All(Vec<Test>),
    /// Some test holds (false when empty).
    Any(Vec<Test>),
}

/// The operators a test may use, for error messages and the catalogue.
pub const TEST_KEYS: &[&str] = &[
    "lt", "le", "gt", "ge", "eq", "ne", "contains", "not", "all", "any",
];

impl Test {
    /// Parses a test from its JSON form.
    pub fn parse(v: &Json) -> Result<Test, String> {
        let Json::Object(map) = v else {
            return Err(format!(
                "a test is a one-key map such as `{{lt: 10}}`, not `{v}`"
            ));
        };
        let mut it = map.iter();
        let (Some((k, arg)), None) = (it.next(), it.next()) else {
            return Err(format!(
                "a test is a map with exactly one key (one of {}); combine several with `all` or `any`",
                TEST_KEYS.join(", ")
            ));
        };
        // A problem inside a combinator says where: `in `all` (item 2): …`.
        let list = |arg: &Json| -> Result<Vec<Test>, String> {
            match arg {
                Json::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        Test::parse(t).map_err(|e| format!("in `{k}` (item {}): {e}", i + 1))
                    })
                    .collect(),
                other => Err(format!("`{k}` takes a list of tests, not `{other}`")),
            }
        };
        Ok(match k.as_str() {
            "lt" => Test::Lt(arg.clone()),
            "le" => Test::Le(arg.clone()),
            "gt" => Test::Gt(arg.clone()),
            "ge" => Test::Ge(arg.clone()),
            "eq" => Test::Eq(arg.clone()),
            "ne" => Test::Ne(arg.clone()),
            "contains" => Test::Contains(arg.clone()),
            "not" => Test::Not(Box::new(
                Test::parse(arg).map_err(|e| format!("in `not`: {e}"))?,
            )),
            "all" => Test::All(list(arg)?),
            "any" => Test::Any(list(arg)?),
            other => {
                let hint = crate::util::did_you_mean(other, TEST_KEYS.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown test `{other}` (expected one of {}){hint}",
                    TEST_KEYS.join(", ")
                ));
            }
        })
    }

    /// The test's JSON form (what `.cm` writes back).
    pub fn to_json(&self) -> Json {
        let (k, v) = match self {
            Test::Lt(v) => ("lt", v.clone()),
            Test::Le(v) => ("le", v.clone()),
            Test::Gt(v) => ("gt", v.clone()),
            Test::Ge(v) => ("ge", v.clone()),
            Test::Eq(v) => ("eq", v.clone()),
            Test::Ne(v) => ("ne", v.clone()),
            Test::Contains(v) => ("contains", v.clone()),
            Test::Not(t) => ("not", t.to_json()),
            Test::All(ts) => ("all", Json::Array(ts.iter().map(Test::to_json).collect())),
            Test::Any(ts) => ("any", Json::Array(ts.iter().map(Test::to_json).collect())),
        };
        let mut m = serde_json::Map::new();
        m.insert(k.to_owned(), v);
        Json::Object(m)
    }

    /// Evaluates the test on `v`. Ordering a value against one of another kind (a string
    /// against a number) is an error, not `false`.
    pub fn eval(&self, v: &Json) -> Result<bool, String> {
        Ok(match self {
            Test::Lt(b) => order(v, b, "lt")? == Ordering::Less,
            Test::Le(b) => order(v, b, "le")? != Ordering::Greater,
            Test::Gt(b) => order(v, b, "gt")? == Ordering::Greater,
            Test::Ge(b) => order(v, b, "ge")? != Ordering::Less,
            Test::Eq(b) => json_eq(v, b),
            Test::Ne(b) => !json_eq(v, b),
            Test::Contains(b) => match (v, b) {
                (Json::String(s), Json::String(sub)) => s.contains(sub.as_str()),
                (Json::Array(items), x) => items.iter().any(|i| json_eq(i, x)),
                (Json::Object(m), Json::String(key)) => m.contains_key(key),
                _ => {
                    return Err(format!(
                        "`contains` needs a string, a list or a map, not `{v}` (against `{b}`)"
                    ));
                }
            },
            Test::Not(t) => !t.eval(v)?,
            Test::All(ts) => {
                for t in ts {
                    if !t.eval(v)? {
                        return Ok(false);
                    }
                }
                true
            }
            Test::Any(ts) => {
                for t in ts {
                    if t.eval(v)? {
                        return Ok(true);
                    }
                }
                false
            }
        })
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

fn order(a: &Json, b: &Json, op: &str) -> Result<Ordering, String> {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return Ok(x.cmp(&y));
            }
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x.partial_cmp(&y)
                .ok_or_else(|| format!("cannot order `{a}` and `{b}`"))
        }
        (Json::String(x), Json::String(y)) => Ok(x.cmp(y)),
        _ => Err(format!(
            "`{op}` compares numbers with numbers or strings with strings, not `{a}` with `{b}`"
        )),
    }
}

impl ParamType for Test {
    const NAME: &'static str = "test";
    fn from_param(v: &Json) -> Result<Self, String> {
        Test::parse(v).map_err(|m| {
            format!(
                "{m}; write a test such as `{{lt: 10}}`, `{{eq: \"stop\"}}`, `{{not: {{contains: \"x\"}}}}`"
            )
        })
    }
    fn to_param(&self) -> Json {
        self.to_json()
    }
}

impl ParamType for Vec<Test> {
    const NAME: &'static str = "list of test";
    fn from_param(v: &Json) -> Result<Self, String> {
        list_param(v)
    }
    fn to_param(&self) -> Json {
        Json::Array(self.iter().map(Test::to_json).collect())
    }
}

impl ParamType for Option<Test> {
    const NAME: &'static str = "test or null";
    const IMPLICIT_DEFAULT: Option<&'static str> = Some("null");
    fn from_param(v: &Json) -> Result<Self, String> {
        option_param(v)
    }
    fn to_param(&self) -> Json {
        self.as_ref().map_or(Json::Null, Test::to_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(v: Json) -> Test {
        Test::parse(&v).unwrap()
    }

    #[test]
    fn comparisons_follow_numbers_and_strings() {
        assert!(t(json!({"lt": 10})).eval(&json!(9)).unwrap());
        assert!(!t(json!({"lt": 10})).eval(&json!(10)).unwrap());
        assert!(t(json!({"le": 10})).eval(&json!(10.0)).unwrap());
        assert!(t(json!({"gt": 0})).eval(&json!(0.5)).unwrap());
        assert!(t(json!({"ge": "b"})).eval(&json!("b")).unwrap());
        assert!(t(json!({"eq": 1})).eval(&json!(1.0)).unwrap());
        assert!(t(json!({"eq": "stop"})).eval(&json!("stop")).unwrap());
        assert!(t(json!({"ne": 3})).eval(&json!(4)).unwrap());
    }

    #[test]
    fn contains_and_combinators() {
        assert!(t(json!({"contains": "x"})).eval(&json!("axb")).unwrap());
        assert!(t(json!({"contains": 2})).eval(&json!([1, 2])).unwrap());
        assert!(
            t(json!({"not": {"contains": "x"}}))
                .eval(&json!("ab"))
                .unwrap()
        );
        let between = t(json!({"all": [{"gt": 0}, {"lt": 3}]}));
        assert!(between.eval(&json!(2)).unwrap());
        assert!(!between.eval(&json!(3)).unwrap());
        assert!(
            t(json!({"any": [{"eq": 0}, {"eq": 5}]}))
                .eval(&json!(5))
                .unwrap()
        );
    }

    #[test]
    fn ordering_mixed_kinds_is_an_error() {
        let e = t(json!({"lt": 10})).eval(&json!("abc")).unwrap_err();
        assert_eq!(
            e,
            "`lt` compares numbers with numbers or strings with strings, not `\"abc\"` with `10`"
        );
        let e = t(json!({"contains": "x"})).eval(&json!(3)).unwrap_err();
        assert_eq!(
            e,
            "`contains` needs a string, a list or a map, not `3` (against `\"x\"`)"
        );
        // Inside a combinator, the failing test names itself.
        let e = t(json!({"all": [{"gt": 0}, {"le": "z"}]}))
            .eval(&json!(5))
            .unwrap_err();
        assert!(e.starts_with("`le` compares numbers"), "{e}");
    }

    #[test]
    fn bad_tests_are_rejected_with_what_is_wrong_and_where() {
        let keys = TEST_KEYS.join(", ");
        let e = Test::parse(&json!({"lte": 3})).unwrap_err();
        assert_eq!(
            e,
            format!("unknown test `lte` (expected one of {keys}); did you mean `lt`?")
        );
        let e = Test::parse(&json!({"lt": 1, "gt": 0})).unwrap_err();
        assert_eq!(
            e,
            format!(
                "a test is a map with exactly one key (one of {keys}); combine several with `all` or `any`"
            )
        );
        let e = Test::parse(&json!(3)).unwrap_err();
        assert_eq!(e, "a test is a one-key map such as `{lt: 10}`, not `3`");
        let e = Test::parse(&json!({"all": 3})).unwrap_err();
        assert_eq!(e, "`all` takes a list of tests, not `3`");
        // Nested: the path to the problem.
        let e = Test::parse(&json!({"any": [{"eq": 1}, {"not": {"lte": 3}}]})).unwrap_err();
        assert_eq!(
            e,
            format!(
                "in `any` (item 2): in `not`: unknown test `lte` (expected one of {keys}); did you mean `lt`?"
            )
        );
        // As a param, with the examples to copy.
        let e = <Test as ParamType>::from_param(&json!({"ltt": 3})).unwrap_err();
        assert!(e.starts_with("unknown test `ltt`"), "{e}");
        assert!(
            e.ends_with(
                "write a test such as `{lt: 10}`, `{eq: \"stop\"}`, `{not: {contains: \"x\"}}`"
            ),
            "{e}"
        );
    }

    #[test]
    fn tests_round_trip_to_json() {
        let v = json!({"all": [{"gt": 0}, {"not": {"eq": "x"}}]});
        assert_eq!(t(v.clone()).to_json(), v);
    }
}
