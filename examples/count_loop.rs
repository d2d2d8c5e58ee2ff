//! A loop built with `pipeline!`: a counter goes round a merge → counter → guard loop until the
//! guard's test fails, then leaves through the guard's exit. The merge is the loop entry: it
//! fires on its first input while the loop-back input is still empty.
//!
//! The example also writes the net as a `.cm` file, to share it or to run it with the CLI
//! (`cameleon run count_loop.cm`); give another path as the argument.
//!
//! ```text
//! cargo run --example count_loop [-- PATH.cm]
//! ```

use cameleon::ops::{Const, Counter, Guard, Merge, Sink, Test};
use cameleon::prelude::*;
use serde_json::json;

/// The pipeline.
pub fn net() -> Net {
    pipeline! {
        name = "count-loop";
        max_loop_iterations = 100;
        let zero = Const::new(json!(0)) @ (40, 100);
        #[label = "Loop entry"]
        let entry = Merge::default() @ (200, 100);
        let inc = Counter::new() @ (360, 100);
        let check = Guard::new(Test::Lt(json!(5))) @ (520, 100);
        let done = Sink::new() @ (680, 100);
        zero.out_data -> entry.in_a;
        entry.out_data -> inc.in_data;
        inc.out_data -> check.in_data;
        check.out_continue -> entry.in_b;        // back to the loop entry
        check.out_exit -> done.in_data;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let net = net();
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "count_loop.cm".into());
    let text = net.to_cm();
    std::fs::write(&path, &text).map_err(|e| format!("cannot write `{path}`: {e}"))?;
    println!("wrote {path}:\n{text}");

    let mut cvm = Cvm::new(net);
    loop {
        match cvm.step()? {
            Step::Fired { ops, step, .. } => {
                let id = ops[0];
                println!("step {step}: {}", cvm.net().op(id).name);
            }
            Step::Ended(end) => {
                println!("end state: {end:?}");
                break;
            }
        }
    }
    println!("done received: {}", cvm.received("done")[0].to_json());
    Ok(())
}
