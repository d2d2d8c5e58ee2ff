// Asserts: a loop through a merge compiles and runs (the merge's loop-back input is connected
// after its first use), a guard leaves the loop, and an operator with an optional input that
// is left unconnected (`accumulator.in_done`) is accepted.
#![deny(warnings)]

use cameleon::ops::{Accumulator, Const, Counter, Guard, Merge, Sink, Test};
use cameleon::prelude::*;
use serde_json::json;

fn main() {
    let net = pipeline! {
        name = "count-to-3";
        let zero = Const::new(json!(0)) @ (0, 0);
        let entry = Merge::default() @ (150, 0);
        let inc = Counter::new() @ (300, 0);
        let check = Guard::new(Test::parse(&json!({"lt": 3})).unwrap()) @ (450, 0);
        let seen = Accumulator::new(3);
        let out = Sink::new();
        let all = Sink::new();
        zero.out_data -> entry.in_a;
        entry.out_data -> inc.in_data;
        inc.out_data -> check.in_data;
        check.out_continue -> entry.in_b;
        check.out_exit -> out.in_data;
        inc.out_data -> seen.in_data;
        seen.out_data -> all.in_data;
    };
    let mut cvm = Cvm::new(net);
    assert_eq!(cvm.run().unwrap(), EndState::Completed);
    assert_eq!(cvm.received("out")[0].to_json(), json!(3));
    assert_eq!(cvm.received("all")[0].to_json(), json!([1, 2, 3]));
}
