//! Parallel mode: a source fans out to 8 delays of 200 ms, joined again. In parallel mode the 8
//! delays are one maximal step and wait together (≈ 0.2 s); in sequential mode they wait one
//! after the other (≈ 1.6 s). Same result, same trace shape, one history entry per step.
//!
//! `cargo run --example parallel_fan_out`
//!
//! The same net as a `.cm` file is `examples/fan_out_delays.cm`.

use std::time::Instant;

use cameleon::Event;
use cameleon::ops::{Delay, Fork, Join, Sink, Source};
use cameleon::prelude::*;

fn net() -> Result<Net, cameleon::NetError> {
    let mut b = Net::builder("fan-out");
    b.add("src", Source::new("hello"));
    b.add("fork", Fork::<Any>::new(8).expect("2..=26 outputs"));
    for i in 0..8 {
        b.add(format!("wait_{i}"), Delay::new(200));
    }
    b.add("join", Join::<Any>::new(8).expect("2..=26 inputs"));
    b.add("out", Sink::new());
    b.connect("src.out_data", "fork.in_data");
    for i in 0..8 {
        let port = (b'a' + i as u8) as char;
        b.connect(format!("fork.out_{port}"), format!("wait_{i}.in_data"));
        b.connect(format!("wait_{i}.out_data"), format!("join.in_{port}"));
    }
    b.connect("join.out_data", "out.in_data");
    b.build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for mode in [Mode::Parallel, Mode::Sequential] {
        let mut cvm = Cvm::builder(net()?)
            .mode(mode)
            .on_event(|e| {
                if let Event::StepCommitted { step, ops, .. } = e {
                    println!("  step {step}: {}", ops.join(", "));
                }
            })
            .build();
        println!("{mode} mode:");
        let t = Instant::now();
        let end = cvm.run()?;
        println!(
            "  {end} in {:.2} s, {} steps; `out` received {}",
            t.elapsed().as_secs_f64(),
            cvm.depth(),
            cvm.received("out")[0].to_json()
        );
    }
    Ok(())
}
