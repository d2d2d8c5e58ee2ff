//! The MCP tests' servers and clients, installed by `scripts/packages` into `target/`: the
//! reference server `@modelcontextprotocol/server-everything` (npm) and the official Python SDK
//! (`mcp`, PyPI); and a look at the process table, to tell whether a server's processes are
//! gone.

use std::path::PathBuf;

/// `node`, which the reference server needs (a test fails, naming the install command, when
/// it is missing).
pub fn node() -> PathBuf {
    let ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the MCP tests need Node.js: `apt-get install -y nodejs npm` (scripts/test installs them)"
    );
    PathBuf::from("node")
}

/// The reference server's program (`dist/index.js`; its first argument is the transport:
/// `stdio` or `streamableHttp`).
pub fn everything() -> PathBuf {
    node();
    let dir = std::env::var_os("CAMELEON_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target/node"));
    let js = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        js.is_file(),
        "the MCP tests need the reference server @modelcontextprotocol/server-everything: run scripts/packages (it installs it from the npm registry into {})",
        dir.display()
    );
    js
}

/// The Python of the tests' environment, with the MCP SDK (`scripts/packages` makes it).
pub fn python() -> PathBuf {
    let venv = std::env::var_os("CAMELEON_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target/venv"));
    let py = venv.join("bin/python");
    let ok = py.is_file()
        && std::process::Command::new(&py)
            .args(["-c", "import mcp"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the MCP tests need Python with the MCP SDK: run scripts/packages (it makes {} with `mcp` from PyPI)",
        venv.display()
    );
    py
}

/// The processes whose command line holds `marker` (a unique argument a test gives a server),
/// by pid. A zombie has no command line, so it is not listed: see [`alive`].
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
        {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// What the process table says of `pid`: `None` when it is gone (reaped), else its state
/// letter (`Z`: a zombie — dead, not reaped yet).
pub fn state(pid: u32) -> Option<char> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))
        .and_then(|s| s.trim().chars().next())
}

/// Whether `pid` still runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    state(pid).is_some_and(|s| s != 'Z')
}
