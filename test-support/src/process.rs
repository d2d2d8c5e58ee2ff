//! Running programs from tests, never for ever: [`Cmd::run`] waits for a program with a timeout
//! (past it the program is killed and the test fails, with what it printed so far), and
//! [`Cmd::spawn`] starts a long-lived child, a [`Proc`], killed when dropped.
//!
//! Standard output and error are read as they come, by a thread each, so a test can wait for a
//! line ([`Proc::wait_stdout`]) while the program goes on, and a full pipe never blocks it.
//! Signals are sent from Rust ([`Proc::signal`]): no `kill` program is needed.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long [`Cmd::run`] waits for a program unless told otherwise ([`Cmd::timeout`]). Nothing
/// is timed: it only turns a hang into a failure.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// How long [`Proc`]'s waits wait unless told otherwise.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A program of the workspace, by the path cargo gives integration tests:
/// `const CAMELEON: Bin = Bin::new(env!("CARGO_BIN_EXE_cameleon"));`.
#[derive(Clone, Copy, Debug)]
pub struct Bin {
    path: &'static str,
}

impl Bin {
    /// The program at `path`.
    pub const fn new(path: &'static str) -> Bin {
        Bin { path }
    }

    /// Its path.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// A command running it (no arguments yet).
    pub fn cmd(&self) -> Cmd {
        Cmd::new(self.path)
    }

    /// Runs it with `args` (standard input empty) and waits at most [`RUN_TIMEOUT`].
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).run()
    }
}

/// A program to run: [`std::process::Command`] with a timeout. Standard input is empty unless
/// [`stdin`](Cmd::stdin) gives bytes; `CAMELEON_CAPABILITIES` is removed from the environment
/// and `XDG_CONFIG_HOME` points at a folder that does not exist (a test sets them when it means
/// to: [`config_dir`](Cmd::config_dir)), so the user's own settings and trusted files never
/// change a test.
#[derive(Debug)]
pub struct Cmd {
    inner: Command,
    label: String,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

impl Cmd {
    /// Runs `program`.
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        let program = program.as_ref();
        let mut inner = Command::new(program);
        inner.env_remove("CAMELEON_CAPABILITIES");
        inner.env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join(format!("cameleon-test-no-config-{}", std::process::id())),
        );
        let label = Path::new(program)
            .file_name()
            .unwrap_or(program)
            .to_string_lossy()
            .into_owned();
        Cmd {
            inner,
            label,
            stdin: None,
            timeout: RUN_TIMEOUT,
        }
    }

    /// One more argument.
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Cmd {
        self.label.push(' ');
        self.label.push_str(&a.as_ref().to_string_lossy());
        self.inner.arg(a);
        self
    }

    /// More arguments.
    pub fn args<I, S>(mut self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Cmd {
        self.inner.env(k, v);
        self
    }

    /// Uses `dir` as the user's config directory's parent (`XDG_CONFIG_HOME`): Caméléon's
    /// config directory is then `dir/cameleon` (its `cameleon.yaml`, its trusted files).
    pub fn config_dir(self, dir: impl AsRef<Path>) -> Cmd {
        self.env("XDG_CONFIG_HOME", dir.as_ref())
    }

    /// Removes an environment variable.
    pub fn env_remove(mut self, k: impl AsRef<OsStr>) -> Cmd {
        self.inner.env_remove(k);
        self
    }

    /// The working folder.
    pub fn current_dir(mut self, d: impl AsRef<Path>) -> Cmd {
        self.inner.current_dir(d);
        self
    }

    /// What the program reads on standard input (then end of file).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Cmd {
        self.stdin = Some(bytes.into());
        self
    }

    /// How long [`run`](Cmd::run) waits (default [`RUN_TIMEOUT`]).
    pub fn timeout(mut self, t: Duration) -> Cmd {
        self.timeout = t;
        self
    }

    /// Runs the program to its end and returns what it printed. Past the timeout the program is
    /// killed and the test fails with what it printed so far.
    pub fn run(self) -> Output {
        let timeout = self.timeout;
        self.spawn().wait_output(timeout)
    }

    /// Starts the program; it is killed when the [`Proc`] is dropped.
    pub fn spawn(mut self) -> Proc {
        self.inner
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self
            .inner
            .spawn()
            .unwrap_or_else(|e| panic!("`{}` does not start: {e}", self.label));
        if let (Some(bytes), Some(mut pipe)) = (self.stdin, child.stdin.take()) {
            // A thread of its own: the program may print before it has read everything.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let stdout = Captured::default();
        let stderr = Captured::default();
        if let Some(p) = child.stdout.take() {
            stdout.fill(p);
        }
        if let Some(p) = child.stderr.take() {
            stderr.fill(p);
        }
        Proc {
            child,
            label: self.label,
            stdout,
            stderr,
            status: None,
        }
    }
}

/// The bytes read so far, and whether the pipe has closed.
type Filled = Mutex<(Vec<u8>, bool)>;

/// Bytes a reader thread collects from a pipe, and whether the pipe has closed.
#[derive(Clone, Debug, Default)]
struct Captured(Arc<(Filled, Condvar)>);

impl Captured {
    fn fill(&self, mut pipe: impl Read + Send + 'static) {
        let me = self.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = pipe.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*me.0;
                let mut g = lock.lock().unwrap_or_else(PoisonError::into_inner);
                if n == 0 {
                    g.1 = true;
                    cv.notify_all();
                    return;
                }
                g.0.extend_from_slice(&buf[..n]);
                cv.notify_all();
            }
        });
    }

    fn bytes(&self) -> Vec<u8> {
        self.0
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// Waits until `ready(bytes, closed)` or `deadline`; the bytes, and whether `ready` said so.
    fn wait(&self, deadline: Instant, ready: impl Fn(&[u8], bool) -> bool) -> (Vec<u8>, bool) {
        let (lock, cv) = &*self.0;
        let mut g = lock.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if ready(&g.0, g.1) {
                return (g.0.clone(), true);
            }
            let now = Instant::now();
            if now >= deadline {
                return (g.0.clone(), false);
            }
            g = cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A signal [`Proc::signal`] sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT, what Ctrl-C sends.
    Int,
    /// SIGTERM.
    Term,
    /// SIGKILL: the process dies at once, without running anything of its own.
    Kill,
}

/// A running child process: killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct Proc {
    child: Child,
    label: String,
    stdout: Captured,
    stderr: Captured,
    status: Option<ExitStatus>,
}

impl Proc {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The command line, for messages.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Sends `sig`. Fails the test if the process cannot be signalled (it was reaped).
    pub fn signal(&mut self, sig: Signal) {
        let s = match sig {
            Signal::Int => rustix::process::Signal::INT,
            Signal::Term => rustix::process::Signal::TERM,
            Signal::Kill => rustix::process::Signal::KILL,
        };
        rustix::process::kill_process(rustix::process::Pid::from_child(&self.child), s)
            .unwrap_or_else(|e| panic!("cannot send {sig:?} to `{}`: {e}", self.label));
    }

    /// Kills it with SIGKILL (if it still runs) and waits for it; its exit status.
    pub fn kill(&mut self) -> ExitStatus {
        if let Some(s) = self.status {
            return s;
        }
        let _ = self.child.kill();
        self.wait(WAIT_TIMEOUT)
    }

    /// Its exit status if it has ended.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self
                .child
                .try_wait()
                .unwrap_or_else(|e| panic!("cannot wait for `{}`: {e}", self.label));
        }
        self.status
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        self.try_wait().is_none()
    }

    /// Waits at most `timeout` for it to end; past it, kills it and fails the test.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return s;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "`{}` did not end within {} s (killed)\nstdout so far:\n{}\nstderr so far:\n{}",
                    self.label,
                    timeout.as_secs_f32(),
                    self.stdout_text(),
                    self.stderr_text()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits at most `timeout` for it to end, and for its output; what it printed.
    pub fn wait_output(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let status = self.wait(timeout);
        // The pipes close with the process (unless it left a child holding them: then what
        // was read by the deadline).
        let closed = |_: &[u8], closed: bool| closed;
        let (stdout, _) = self.stdout.wait(deadline, closed);
        let (stderr, _) = self.stderr.wait(deadline, closed);
        Output {
            status,
            stdout,
            stderr,
        }
    }

    /// What it printed on standard output so far.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout.bytes()).into_owned()
    }

    /// What it printed on standard error so far.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.bytes()).into_owned()
    }

    /// Waits at most `timeout` until its standard output so far satisfies `ready`; that output.
    /// Fails the test (with both streams) when the output closes first or the time is up.
    pub fn wait_stdout(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        self.wait_stream(&self.stdout, "stdout", what, timeout, ready)
    }

    /// [`wait_stdout`](Proc::wait_stdout) for standard error.
    pub fn wait_stderr(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        self.wait_stream(&self.stderr, "stderr", what, timeout, ready)
    }

    /// Waits at most `timeout` for the `n`-th line (1-based, complete) of standard output.
    pub fn stdout_line(&self, n: usize, timeout: Duration) -> String {
        self.line_of(&self.stdout, "stdout", n, timeout)
    }

    /// Waits at most `timeout` for the `n`-th line (1-based, complete) of standard error.
    pub fn stderr_line(&self, n: usize, timeout: Duration) -> String {
        self.line_of(&self.stderr, "stderr", n, timeout)
    }

    fn line_of(&self, stream: &Captured, name: &str, n: usize, timeout: Duration) -> String {
        let what = format!("line {n} of {name}");
        let text = self.wait_stream(stream, name, &what, timeout, |t| {
            t.matches('\n').count() >= n
        });
        text.lines().nth(n - 1).unwrap_or_default().to_owned()
    }

    fn wait_stream(
        &self,
        stream: &Captured,
        name: &str,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let (bytes, ok) = stream.wait(Instant::now() + timeout, |b, closed| {
            closed || ready(&String::from_utf8_lossy(b))
        });
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if ok && ready(&text) {
            return text;
        }
        panic!(
            "`{}`: {what} never came on {name} ({}); stdout:\n{}\nstderr:\n{}",
            self.label,
            if ok { "the stream closed" } else { "timed out" },
            self.stdout_text(),
            self.stderr_text()
        );
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The exit code; fails the test when the process was killed by a signal.
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or_else(|| {
        panic!(
            "the process did not exit normally ({}); stdout:\n{}\nstderr:\n{}",
            o.status,
            stdout(o),
            stderr(o)
        )
    })
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output parsed as JSON; fails the test with both streams when it is not.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Cmd, Signal};

    fn fails(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).expect_err("the test fails");
        e.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_program_past_its_timeout_is_killed_and_fails_the_test_with_what_it_printed() {
        let msg = fails(|| {
            Cmd::new("sh")
                .args(["-c", "echo started; sleep 30"])
                .timeout(Duration::from_millis(300))
                .run();
        });
        assert!(msg.contains("did not end within 0.3 s (killed)"), "{msg}");
        assert!(msg.contains("started"), "{msg}");
    }

    #[test]
    fn a_wait_for_output_that_never_comes_fails_the_test() {
        let p = Cmd::new("sleep").arg("30").spawn();
        let msg = fails(std::panic::AssertUnwindSafe(|| {
            p.wait_stdout("a line", Duration::from_millis(200), |t| !t.is_empty());
        }));
        assert!(
            msg.contains("a line never came on stdout (timed out)"),
            "{msg}"
        );
    }

    #[test]
    fn a_dropped_child_is_killed_and_signals_are_sent_from_rust() {
        let p = Cmd::new("sleep").arg("30").spawn();
        let pid = rustix::process::Pid::from_raw(p.pid() as i32).expect("a pid");
        drop(p);
        assert!(
            rustix::process::test_kill_process(pid).is_err(),
            "the child is gone"
        );
        let mut p = Cmd::new("sleep").arg("30").spawn();
        p.signal(Signal::Term);
        let status = p.wait(Duration::from_secs(30));
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15)
        );
        let o = Cmd::new("cat").stdin("piped in").run();
        assert_eq!(super::stdout(&o), "piped in");
    }
}
