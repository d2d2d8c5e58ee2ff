//! The helpers the workspace's test suites share, so each exists once:
//!
//! - [`Bin`], [`Cmd`], [`Proc`]: run a program with a timeout, or start a long-lived child
//!   killed on drop, signal it from Rust, wait for what it prints ([`process`]);
//! - [`Serve`]: `cameleon serve` on a free port, its printed address and token, HTTP requests
//!   and the event stream ([`serve`]);
//! - [`Rng`]: a seeded random generator ([`rng`]);
//! - [`TempDir`]: a temporary folder removed on drop, kept when the test fails ([`temp`]);
//! - [`wait_until`], [`wait_for`]: waits that fail instead of hanging ([`wait`]);
//! - [`secrets`]: the forms a leaked secret could take, and the check that none appears;
//! - [`openai`]: a small OpenAI-compatible server on 127.0.0.1, scripted by the test;
//! - [`mcp`]: the MCP tests' reference server and Python SDK, and the process table;
//! - [`nats`]: NATS credentials (operator, account, users with permissions) the test makes.
//!
//! No wait here measures anything: every timeout only turns a hang into a failure.

pub mod mcp;
pub mod nats;
pub mod openai;
pub mod process;
pub mod rng;
pub mod secrets;
pub mod serve;
pub mod temp;
pub mod wait;

pub use process::{Bin, Cmd, Proc, RUN_TIMEOUT, Signal, WAIT_TIMEOUT, code, json, stderr, stdout};
pub use rng::Rng;
pub use serve::{Events, Serve};
pub use temp::TempDir;
pub use wait::{wait_for, wait_until};

use std::path::{Path, PathBuf};

/// The workspace's root folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support is a folder of the workspace")
        .to_path_buf()
}

/// `examples/NAME` of the workspace, as a string (for command lines).
pub fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

/// A path as a string (for command lines).
pub fn s(p: &Path) -> String {
    p.display().to_string()
}
