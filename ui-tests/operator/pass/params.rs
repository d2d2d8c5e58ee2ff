// Asserts: params of every readable type, with and without defaults (literals, negative
// numbers, lists, `None`), renamed with `name = "…"` (for a keyword), with their docs, reach the
// catalogue with their types and defaults, and the factory reads them.
use cameleon::catalogue::{BuildContext, Catalogue};
use cameleon::ops::Test;
use cameleon::prelude::*;
use cameleon::Params;

/// Every kind of param.
#[operator(id = "all_params")]
#[derive(Debug)]
pub struct AllParams {
    /// a count
    #[param(default = 3)]
    pub count: u8,
    /// an offset
    #[param(default = -2)]
    pub offset: i64,
    /// a ratio
    #[param(default = 0.5)]
    pub ratio: f64,
    /// a flag
    #[param(default = true)]
    pub flag: bool,
    /// a word
    #[param(default = "hi")]
    pub word: String,
    /// some words
    #[param(default = ["a", "b"])]
    pub words: Vec<String>,
    /// maybe a limit
    #[param(default = None)]
    pub limit: Option<u32>,
    /// anything
    #[param]
    pub any: serde_json::Value,
    /// a test
    #[param]
    pub test: Test,
    /// the kind (a keyword in Rust)
    #[param(name = "type", default = "plain")]
    pub kind: String,
    #[input]
    in_data: In<DataJSON>,
}

impl Run for AllParams {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        Ok(())
    }
}

fn main() {
    let e = Catalogue::global().get("all_params").unwrap();
    let shown: Vec<_> = e.params.iter().map(|p| (p.name, p.ty, p.default)).collect();
    assert_eq!(
        shown,
        [
            ("count", "u8", Some("3")),
            ("offset", "i64", Some("-2")),
            ("ratio", "f64", Some("0.5")),
            ("flag", "bool", Some("true")),
            ("word", "string", Some("\"hi\"")),
            ("words", "list of string", Some("[\"a\",\"b\"]")),
            ("limit", "u32 or null", Some("null")),
            ("any", "json", None),
            ("test", "test", None),
            ("type", "string", Some("\"plain\"")),
        ]
    );
    assert_eq!(e.params[0].doc, "a count");
    let mut p = Params::new();
    p.insert("any".into(), serde_json::json!({"k": 1}));
    p.insert("test".into(), serde_json::json!({"lt": 3}));
    p.insert("type".into(), serde_json::json!("fancy"));
    let op = Catalogue::global()
        .build("all_params", &p, &BuildContext::default())
        .unwrap();
    assert_eq!(op.params()["type"], "fancy");
    assert_eq!(op.params()["words"], serde_json::json!(["a", "b"]));
}
