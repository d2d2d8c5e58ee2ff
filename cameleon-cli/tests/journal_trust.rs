//! A journal grants nothing by itself: `resume` takes its folder from the user (`--base`, or
//! the folder the journal recorded when it lies inside the journal file's own folder) and never
//! `--allow-outside` from the file; one process at a time goes on with a run, and a lock that a
//! dead holder left blocks no one.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use test_support::{Bin, Signal, TempDir, code, example, s, stderr, stdout, wait_until};

const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));

/// A run of `ask.cm` (in `project`) journaled into `db`, stopped WAITING: unfinished. Its id.
fn waiting_run(project: &Path, db: &Path) -> String {
    std::fs::copy(example("ask.cm"), project.join("ask.cm")).unwrap();
    let o = CAMELEON.run(&[
        "run",
        &s(&project.join("ask.cm")),
        "--journal",
        &s(db),
        "--json",
    ]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["run_id"].as_str().unwrap().to_owned()
}

#[test]
fn resume_takes_its_folder_from_the_user_not_from_the_journal() {
    let top = TempDir::new("resume-folder");
    let project = top.join("project");
    let elsewhere = top.join("elsewhere");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // A journal kept in the project: its recorded folder is inside the journal's, so it is used.
    let db = project.join("runs.db");
    let id = waiting_run(&project, &db);
    let o = CAMELEON.run(&["resume", &s(&db), &id]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    // A journal elsewhere naming the project folder: refused, naming the folder and `--base`.
    let db = elsewhere.join("runs.db");
    let id = waiting_run(&project, &db);
    let o = CAMELEON.run(&["resume", &s(&db), &id]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    let folder = project.canonicalize().unwrap();
    assert!(
        err.contains(&format!("--base {}", folder.display())),
        "{err}"
    );
    assert!(
        err.contains("does not choose where a run may read"),
        "{err}"
    );
    // The user names the folder: it goes on.
    let o = CAMELEON.run(&["resume", &s(&db), &id, "--base", &s(&project)]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn resume_never_takes_allow_outside_from_the_journal() {
    let top = TempDir::new("resume-outside");
    // A sub-net outside the project folder: the net loads only with --allow-outside.
    top.write(
        "shared/inner.cm",
        "name: inner\noperators:\n  - {id: x, type: input, params: {name: x}}\n  - {id: y, type: output, params: {name: y}}\nconnections:\n  - {from: x.out_data, to: y.in_data}\n",
    );
    let project = top.join("project");
    let cm = top.write(
        "project/outer.cm",
        "cameleon: 1\nname: outer\noperators:\n  - {id: who, type: ask, params: {prompt: who?}}\n  - {id: sub, type: subnet, params: {net: ../shared/inner.cm}}\n  - {id: out, type: sink}\nconnections:\n  - {from: who.out_data, to: sub.in_x}\n  - {from: sub.out_y, to: out.in_data}\n",
    );
    let db = project.join("runs.db");
    let o = CAMELEON.run(&["run", &s(&cm), "--journal", &s(&db), "--json"]);
    assert_eq!(code(&o), 2, "outside without the flag: {}", stderr(&o));
    let o = CAMELEON.run(&[
        "run",
        &s(&cm),
        "--journal",
        &s(&db),
        "--allow-outside",
        "--json",
    ]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    let id = serde_json::from_str::<Value>(&stdout(&o)).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The journal says the run was allowed outside; resume does not take its word for it.
    let o = CAMELEON.run(&["resume", &s(&db), &id, "--answer", "who=Ada"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("was started with --allow-outside"), "{err}");
    assert!(err.contains("leaves the pipeline's"), "{err}");
    // Given again, it goes on.
    let o = CAMELEON.run(&[
        "resume",
        &s(&db),
        &id,
        "--answer",
        "who=Ada",
        "--allow-outside",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sinks"]["out"], serde_json::json!(["Ada"]), "{v}");
}

#[test]
fn a_second_resume_of_a_held_run_exits_2_naming_the_holder_and_a_dead_holder_blocks_no_one() {
    let dir = TempDir::new("resume-lock");
    let db = dir.join("runs.db");
    let id = waiting_run(dir.path(), &db);
    // This process holds the run.
    let journal = cameleon::journal::Journal::open(&db).unwrap();
    let lock = journal.lock(&id).unwrap();
    let o = CAMELEON.run(&["resume", &s(&db), &id]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "is being resumed by process {}",
            std::process::id()
        )),
        "{err}"
    );
    assert!(err.contains("one process at a time"), "{err}");
    // Without an id, the run `resume` would pick is the held one: the same answer.
    assert_eq!(code(&CAMELEON.run(&["resume", &s(&db)])), 2);
    drop(lock);
    assert_eq!(code(&CAMELEON.run(&["resume", &s(&db), &id])), 6);

    // A holder killed with SIGKILL leaves its lock file behind, and no lock on it.
    let lock_file = format!("{}-lock-{id}", s(&db));
    // The shell takes the lock on its descriptor 9 (util-linux's `flock`), says so in a file
    // of its own, then becomes `sleep`, which keeps the lock: the process killed below is the
    // one holding it. (Nothing else touches the lock file meanwhile.)
    let held = dir.join("held");
    let mut holder = test_support::Cmd::new("sh")
        .args([
            "-c",
            &format!(
                "exec 9>>'{lock_file}' && flock 9 && echo held > '{}' && exec sleep 600",
                s(&held)
            ),
        ])
        .spawn();
    wait_until("flock holds the lock file", Duration::from_secs(60), || {
        held.exists()
    });
    let o = CAMELEON.run(&["resume", &s(&db), &id]);
    assert_eq!(code(&o), 2, "held by the shell: {}", stderr(&o));
    holder.signal(Signal::Kill);
    holder.wait(Duration::from_secs(60));
    assert!(
        Path::new(&lock_file).exists(),
        "the dead holder's file is left"
    );
    let o = CAMELEON.run(&["resume", &s(&db), &id]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    assert!(
        !Path::new(&lock_file).exists(),
        "removed by the next holder"
    );
}

#[cfg(unix)]
#[test]
fn a_journal_is_created_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("journal-mode");
    let db = dir.join("runs.db");
    let _ = waiting_run(dir.path(), &db);
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    // Its WAL files, while a connection holds them open.
    let journal = cameleon::journal::Journal::open(&db).unwrap();
    let _ = journal.runs().unwrap();
    for suffix in ["-wal", "-shm"] {
        let side = format!("{}{suffix}", s(&db));
        if let Ok(m) = std::fs::metadata(&side) {
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{side}");
        }
    }
}

#[test]
fn grants_are_the_users_on_resume_too() {
    let dir = TempDir::new("resume-grant");
    let cm = dir.write(
        "writer.cm",
        "cameleon: 1\nname: writer\ntools:\n  allow: [write_file]\noperators:\n  - {id: args, type: const, params: {value: {path: note.txt, content: hi}}}\n  - {id: write, type: tool, params: {name: write_file}}\n  - {id: done, type: sink}\nconnections:\n  - {from: args.out_data, to: write.in_args}\n  - {from: write.out_result, to: done.in_data}\n",
    );
    let db = dir.join("runs.db");
    // Ungranted: the run waits for a person, and the journal keeps it unfinished.
    let o = CAMELEON.run(&["run", &s(&cm), "--journal", &s(&db), "--json"]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    // Resumed without a grant it still waits (a journal never grants).
    let o = CAMELEON.run(&["resume", &s(&db)]);
    assert_eq!(code(&o), 6, "{}{}", stdout(&o), stderr(&o));
    assert!(!dir.join("note.txt").exists());
    // The user's grant on resume lets it run.
    let o = CAMELEON.run(&["resume", &s(&db), "--grant", "write_file"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.join("note.txt")).unwrap(), "hi");
}
