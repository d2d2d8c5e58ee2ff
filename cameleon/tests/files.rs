//! Files beneath a folder: the file tools and the file-reading operators open paths through
//! directory handles, so a symbolic link swapped in while they work never leads out; they read
//! and write regular files only (a FIFO is refused, not waited on); they never write through a
//! file with another hard link; and the reading operators stop at `max_bytes`.

#![cfg(unix)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cameleon::net::ToolPolicy;
use cameleon::operator::capability::{ToolCall, ToolStatus};
use cameleon::ops::{FileAccess, FileLoader, JsonFile, Sink, TextFile};
use cameleon::prelude::*;
use cameleon::tools::{ToolGate, ToolRegistry};
use serde_json::json;
use test_support::TempDir;

const SECRET: &str = "TOP-SECRET-CONTENT";

/// The file tools, `write_file` granted, confined to `base`.
fn gate(base: &Path) -> ToolGate {
    ToolGate::new(
        Arc::clone(ToolRegistry::global()),
        Some(&ToolPolicy::allow(["read_file", "list_dir", "write_file"])),
        base,
    )
    .grants(["write_file"])
}

/// Runs `f` on another thread and waits for it at most a minute: a call that hangs fails the
/// test with `what` instead of hanging it.
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return: it hangs"))
}

fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils: apt-get install -y coreutils)");
    assert!(st.success(), "mkfifo {}", path.display());
}

#[test]
fn a_symbolic_link_swapped_in_while_the_tools_work_never_leads_out() {
    let top = TempDir::new("files-race");
    // A deep path: resolving it by name takes long enough for the link to flip meanwhile (what
    // a check-then-open-by-name implementation loses to).
    let deep: String = (0..40).map(|i| format!("d{i}/")).collect();
    let file = format!("{deep}secret.txt");
    top.write(format!("outside/{file}"), SECRET);
    let base = top.join("base");
    std::fs::create_dir_all(base.join("inside").join(&deep)).unwrap();
    std::fs::write(base.join("inside").join(&file), "harmless").unwrap();
    let via_link = format!("link/{file}");
    // `link` flips between a folder inside and one outside, as fast as it can.
    let link = base.join("link");
    std::os::unix::fs::symlink("inside", &link).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, link, outside) = (stop.clone(), link.clone(), top.join("outside"));
        std::thread::spawn(move || {
            let tmp = link.with_extension("tmp");
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let target: &Path = if flips.is_multiple_of(2) {
                    &outside
                } else {
                    Path::new("inside")
                };
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(target, &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
                flips += 1;
            }
            flips
        })
    };
    let g = gate(&base);
    let mut inside_reads = 0;
    for i in 0..2000 {
        let r = g.call_blocking(ToolCall::new("read_file", json!({"path": via_link})));
        match r.status {
            ToolStatus::Ok => {
                assert_eq!(r.content, json!("harmless"), "read {i} escaped the folder");
                inside_reads += 1;
            }
            _ => {
                let e = r.error.unwrap_or_default();
                assert!(!e.contains(SECRET), "{e}");
            }
        }
        let w = g.call_blocking(ToolCall::new(
            "write_file",
            json!({"path": via_link, "content": "overwritten"}),
        ));
        if w.status == ToolStatus::Ok {
            std::fs::write(base.join("inside").join(&file), "harmless").unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(
        flips > 100,
        "the link flipped {flips} times: the race was run"
    );
    assert!(
        inside_reads > 0,
        "some reads went through the link while it pointed inside"
    );
    assert_eq!(
        std::fs::read_to_string(top.join("outside").join(&file)).unwrap(),
        SECRET,
        "no write went through the link while it pointed outside"
    );
}

#[test]
fn a_fifo_is_refused_at_once_by_the_tools_and_the_readers() {
    let base = TempDir::new("files-fifo");
    mkfifo(&base.join("pipe"));
    let g = gate(base.path());
    let r = within("read_file on a FIFO", move || {
        g.call_blocking(ToolCall::new("read_file", json!({"path": "pipe"})))
    });
    assert_eq!(r.status, ToolStatus::Error);
    assert!(r.error.unwrap().contains("FIFO"));
    let g = gate(base.path());
    let r = within("write_file on a FIFO", move || {
        g.call_blocking(ToolCall::new(
            "write_file",
            json!({"path": "pipe", "content": "x"}),
        ))
    });
    assert_eq!(r.status, ToolStatus::Error);
    assert!(r.error.unwrap().contains("FIFO"));
    let root = base.path().to_path_buf();
    let end = within("text_file on a FIFO", move || {
        let mut op = TextFile::new("pipe");
        op.access = FileAccess {
            root,
            allow_outside: false,
        };
        run_reader(op)
    });
    assert!(
        end.contains("FIFO") && end.contains("only regular files"),
        "{end}"
    );
}

#[test]
fn a_write_through_a_second_hard_link_is_refused() {
    let top = TempDir::new("files-hardlink");
    top.write("outside/target.txt", SECRET);
    let base = top.join("base");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::hard_link(top.join("outside/target.txt"), base.join("linked.txt")).unwrap();
    let r = gate(&base).call_blocking(ToolCall::new(
        "write_file",
        json!({"path": "linked.txt", "content": "pwned"}),
    ));
    assert_eq!(r.status, ToolStatus::Error, "{r:?}");
    assert!(r.error.unwrap().contains("2 hard links"));
    assert_eq!(
        std::fs::read_to_string(top.join("outside/target.txt")).unwrap(),
        SECRET
    );
    // A file of its own is replaced as before.
    top.write("base/own.txt", "old");
    let r = gate(&base).call_blocking(ToolCall::new(
        "write_file",
        json!({"path": "own.txt", "content": "new"}),
    ));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(base.join("own.txt")).unwrap(),
        "new"
    );
}

/// Runs a net of one reader into a sink; the error of its end (or `COMPLETED`).
fn run_reader<O: Operator + 'static>(op: O) -> String {
    let mut b = Net::builder("reader");
    b.add("read", op);
    b.add("out", Sink::new());
    b.connect("read.out_data", "out.in_data");
    let mut cvm = Cvm::new(b.build().unwrap());
    match cvm.run().unwrap() {
        EndState::Completed => "COMPLETED".to_owned(),
        EndState::Error { error, .. } => error,
        other => format!("{other:?}"),
    }
}

fn access(root: &Path, allow_outside: bool) -> FileAccess {
    FileAccess {
        root: root.to_path_buf(),
        allow_outside,
    }
}

#[test]
fn the_readers_stop_at_max_bytes_with_a_default_of_64_mib() {
    let base = TempDir::new("files-max");
    base.write("twenty.txt", "0123456789abcdefghij");
    let mut op = TextFile::new("twenty.txt");
    op.access = access(base.path(), false);
    assert_eq!(op.max_bytes, 64 * 1024 * 1024);
    assert_eq!(
        TextFile::default().max_bytes,
        cameleon::ops::DEFAULT_MAX_BYTES
    );
    assert_eq!(FileLoader::default().max_bytes, 64 * 1024 * 1024);
    assert_eq!(JsonFile::default().max_bytes, 64 * 1024 * 1024);
    op.max_bytes = 10;
    let end = run_reader(op);
    assert!(
        end.contains("larger than 10 bytes") && end.contains("max_bytes"),
        "{end}"
    );
    // A sparse file past the default: refused before a byte is read.
    let big = std::fs::File::create(base.join("big.bin")).unwrap();
    big.set_len(64 * 1024 * 1024 + 1).unwrap();
    let mut op = FileLoader::new("big.bin");
    op.access = access(base.path(), false);
    let end = run_reader(op);
    assert!(end.contains("larger than 67108864 bytes"), "{end}");
    let mut op = JsonFile::new("twenty.txt");
    op.access = access(base.path(), false);
    op.max_bytes = 20;
    let end = run_reader(op);
    assert!(
        end.contains("not valid JSON"),
        "at the limit it is read: {end}"
    );
    // The param is in the catalogue, with its default.
    let entry = cameleon::catalogue::Catalogue::global()
        .get("text_file")
        .unwrap();
    let p = entry.params.iter().find(|p| p.name == "max_bytes").unwrap();
    assert_eq!(p.default, Some("67108864"));
}

#[test]
fn allow_outside_reads_outside_through_the_same_checks() {
    let top = TempDir::new("files-outside");
    top.write("outside/data.txt", "out there");
    mkfifo(&top.join("outside/pipe"));
    let base = top.join("base");
    std::fs::create_dir_all(&base).unwrap();
    std::os::unix::fs::symlink(top.join("outside/data.txt"), base.join("link.txt")).unwrap();
    // Confined: `..`, an absolute path and a link out are refused.
    for path in [
        "../outside/data.txt".to_owned(),
        top.file("outside/data.txt"),
        "link.txt".to_owned(),
    ] {
        let mut op = TextFile::new(path.clone());
        op.access = access(&base, false);
        let end = run_reader(op);
        assert!(
            end.contains("leaves the pipeline's folder") || end.contains("leads out"),
            "{path}: {end}"
        );
    }
    // Allowed outside: each is read…
    for path in ["../outside/data.txt", "link.txt"] {
        let mut op = TextFile::new(path);
        op.access = access(&base, true);
        assert_eq!(run_reader(op), "COMPLETED", "{path}");
    }
    // …still a regular file only, and still capped.
    let b = base.clone();
    let end = within("text_file outside on a FIFO", move || {
        let mut op = TextFile::new("../outside/pipe");
        op.access = access(&b, true);
        run_reader(op)
    });
    assert!(end.contains("FIFO"), "{end}");
    let mut op = TextFile::new("../outside/data.txt");
    op.access = access(&base, true);
    op.max_bytes = 3;
    assert!(run_reader(op).contains("larger than 3 bytes"));
}
