// Asserts: internal state of serde types (a derived struct, a map, a generic field) gets a JSON
// form — one array element per field — and reads back from it, so a journaled run can record
// it and a resumed run restore it.
use std::collections::BTreeMap;

use cameleon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub seen: u32,
    pub last: Option<String>,
}

/// Counts what it passes on.
#[operator(id = "tallied", family = structural)]
pub struct Tallied<T: PortType = Any> {
    tally: Tally,
    by_text: BTreeMap<String, u32>,
    marker: Vec<std::marker::PhantomData<T>>,
    #[input]
    in_data: In<T>,
    #[output]
    out_data: Out<T>,
}

impl<T: PortType> Run for Tallied<T> {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        self.tally.seen += 1;
        cx.forward(Self::in_data, Self::out_data)
    }
}

fn main() {
    let mut t: Tallied = Tallied {
        tally: Tally { seen: 2, last: Some("x".into()) },
        by_text: BTreeMap::from([("a".to_owned(), 1)]),
        marker: Vec::new(),
        __cameleon_ports: std::marker::PhantomData,
    };
    let saved = t.save_state().expect("stateful");
    let json = saved.to_json().expect("a serde form");
    assert_eq!(json, serde_json::json!([{"seen": 2, "last": "x"}, {"a": 1}, []]));
    let back = saved.from_json_like(json).expect("reads back");
    t.tally = Tally::default();
    t.by_text.clear();
    t.restore_state(&back);
    assert_eq!(t.tally, Tally { seen: 2, last: Some("x".into()) });
    assert_eq!(t.by_text.get("a"), Some(&1));
    assert!(saved.from_json_like(serde_json::json!([1])).is_err());
}
