//! The workflow-pattern examples (`examples/wcp/`, docs/patterns.md) in the library: each runs
//! to COMPLETED in both modes, and the sequential run is a path of the verifier's abstraction
//! that ends in the same marking — the engine and the verifier agree on every new operator.

use std::path::{Path, PathBuf};

use cameleon::cm::Loader;
use cameleon::prelude::*;
use cameleon::verify::{TraceEnd, follow};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wcp");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cm"))
        .collect();
    v.sort();
    v
}

fn load(p: &Path) -> Net {
    Loader::new()
        .load_file(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_pattern_example_completes_in_both_modes() {
    let all = examples();
    assert!(all.len() >= 36, "{} examples", all.len());
    for p in &all {
        for mode in [Mode::Sequential, Mode::Parallel] {
            let mut cvm = Cvm::builder(load(p)).mode(mode).build();
            let end = cvm.run().unwrap();
            assert_eq!(end, EndState::Completed, "{} ({mode}): {end}", p.display());
        }
    }
}

#[test]
fn every_sequential_run_is_a_path_of_the_verifiers_abstraction() {
    for p in examples() {
        let net = load(&p);
        let mut cvm = Cvm::new(load(&p));
        assert_eq!(cvm.run().unwrap(), EndState::Completed, "{}", p.display());
        let fired: Vec<String> = cvm
            .history()
            .entries()
            .iter()
            .map(|e| net.op(e.firings[0].op).name.clone())
            .collect();
        let trace = follow(&net, &fired)
            .unwrap_or_else(|e| panic!("{}: the run is not a path: {e}", p.display()));
        assert_eq!(trace.end, TraceEnd::Completed, "{}", p.display());
        let engine: Vec<ConnState> = (0..net.connections().len())
            .map(|c| cvm.conn(cameleon::connection::ConnId(c as u32)).state)
            .collect();
        let abstraction: Vec<ConnState> = trace.marking.iter().map(|(_, s)| *s).collect();
        assert_eq!(
            engine,
            abstraction,
            "{}: final markings differ",
            p.display()
        );
    }
}
