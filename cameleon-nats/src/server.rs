//! [`NatsServer`]: a `nats-server` process on a free loopback port, for tests and benchmarks.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `nats-server` (Debian package `nats-server`) listening on 127.0.0.1 on a free port,
/// stopped when dropped. For tests and benchmarks; production uses its own NATS deployment.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    port: u16,
    bin: PathBuf,
    args: Vec<String>,
}

/// The message when the server binary is missing.
const MISSING: &str = "nats-server is not installed (needed to test satellites): install it: apt-get install -y nats-server";

impl NatsServer {
    /// Starts one, and waits until it accepts connections. `Err`: the binary is missing (the
    /// message says how to install it) or the server did not start.
    pub fn start() -> Result<NatsServer, String> {
        Self::start_with(&[])
    }

    /// Starts one with extra `nats-server` arguments (`["--auth", "TOKEN"]` to require a
    /// token).
    pub fn start_with(args: &[&str]) -> Result<NatsServer, String> {
        let bin = find().ok_or_else(|| MISSING.to_owned())?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("cannot find a free port: {e}"))?
            .port();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let child = spawn(&bin, port, &args)?;
        let mut s = NatsServer {
            child,
            port,
            bin,
            args,
        };
        s.wait_ready()?;
        Ok(s)
    }

    /// Its URL, `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Its process id (benchmarks read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server (kills it) and starts a new one on the same port: every client is
    /// disconnected, then may reconnect.
    pub fn restart(&mut self) -> Result<(), String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.bin, self.port, &self.args)?;
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        // Bounded: 500 tries of 10 ms.
        for _ in 0..500 {
            if TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("nats-server exited at start ({status})"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(format!(
            "nats-server did not listen on 127.0.0.1:{} in 5 s",
            self.port
        ))
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(bin: &PathBuf, port: u16, args: &[String]) -> Result<Child, String> {
    Command::new(bin)
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}; {MISSING}", bin.display()))
}

/// `nats-server` on the `PATH`, or where Debian installs it.
fn find() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("nats-server"))
            .find(|f| f.is_file())
    });
    on_path.or_else(|| {
        ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .iter()
            .map(PathBuf::from)
            .find(|f| f.is_file())
    })
}
