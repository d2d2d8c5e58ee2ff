//! Sub-net loading is bounded: one net loads at most `MAX_SUBNET_FILES` sub-net files, every
//! level counted, and a `.cm` file's `max_depth` has a ceiling — so a file that fans out level
//! after level, or recurses without end, is refused when it is loaded.

use cameleon::catalogue::MAX_SUBNET_FILES;
use cameleon::cm::Loader;
use test_support::TempDir;

/// Level `k` of a tree of files: `fan` sub-nets of level `k + 1` (the last level: a plain net).
fn tree(dir: &TempDir, levels: usize, fan: usize) -> std::path::PathBuf {
    for k in (0..levels).rev() {
        let mut text = format!(
            "name: level{k}\noperators:\n  - {{id: x, type: input, params: {{name: x}}}}\n  - {{id: y, type: output, params: {{name: y}}}}\n"
        );
        let mut conns = String::from("connections:\n");
        if k + 1 == levels {
            conns.push_str("  - {from: x.out_data, to: y.in_data}\n");
        } else {
            text.push_str("  - {id: f, type: fork, params: {arity: ");
            text.push_str(&format!(
                "{fan}}}}}\n  - {{id: m, type: merge, params: {{arity: {fan}}}}}\n"
            ));
            conns.push_str(
                "  - {from: x.out_data, to: f.in_data}\n  - {from: m.out_data, to: y.in_data}\n",
            );
            for i in 0..fan {
                text.push_str(&format!(
                    "  - {{id: s{i}, type: subnet, params: {{net: level{}.cm}}}}\n",
                    k + 1
                ));
                let port = |p: &str| format!("{p}_{}", (b'a' + i as u8) as char);
                conns.push_str(&format!(
                    "  - {{from: f.{}, to: s{i}.in_x}}\n  - {{from: s{i}.out_y, to: m.{}}}\n",
                    port("out"),
                    port("in")
                ));
            }
        }
        text.push_str(&conns);
        dir.write(format!("level{k}.cm"), text);
    }
    dir.join("level0.cm")
}

#[test]
fn a_net_that_fans_out_level_after_level_is_refused_past_the_budget() {
    assert_eq!(MAX_SUBNET_FILES, 256);
    // 4 + 16 + 64 = 84 files: loads.
    let dir = TempDir::new("subnet-budget-ok");
    let top = tree(&dir, 4, 4);
    Loader::new()
        .load_file(&top)
        .expect("84 sub-net files load");
    // 4 + 16 + 64 + 256 = 340 files: refused, saying why.
    let dir = TempDir::new("subnet-budget-over");
    let top = tree(&dir, 5, 4);
    let e = Loader::new().load_file(&top).unwrap_err().to_string();
    assert!(
        e.contains("loaded 256 sub-net files, the most one net may load"),
        "{e}"
    );
}

#[test]
fn max_depth_has_a_ceiling() {
    let dir = TempDir::new("subnet-depth");
    dir.write(
        "self.cm",
        "name: again\noperators:\n  - {id: x, type: input, params: {name: x}}\n  - {id: y, type: output, params: {name: y}}\nconnections:\n  - {from: x.out_data, to: y.in_data}\n",
    );
    let cm = |d: u64| {
        format!(
            "name: top\noperators:\n  - {{id: one, type: const, params: {{value: 1}}}}\n  - {{id: s, type: subnet, params: {{net: self.cm, max_depth: {d}}}}}\n  - {{id: out, type: sink}}\nconnections:\n  - {{from: one.out_data, to: s.in_x}}\n  - {{from: s.out_y, to: out.in_data}}\n"
        )
    };
    let l = || Loader::new().base_dir(dir.path());
    l().load_str(&cm(32)).expect("32 is the ceiling");
    let e = l().load_str(&cm(33)).unwrap_err().to_string();
    assert!(e.contains("over the ceiling of 32 levels"), "{e}");
    let e = l().load_str(&cm(4_000_000_000)).unwrap_err().to_string();
    assert!(e.contains("max_depth"), "{e}");
}
