//! The `cameleon` command line: `run`, `check`, `fmt`, `catalogue`, `tools`, `call`, `export`,
//! `serve`, `satellite`, `satellites`, `schema`, `resume`, `runs`, `history`
//! (docs/cli.md has each command in detail).
//!
//! Everything terminal-facing lives in this crate — argument parsing, progress bars, diagnostics
//! drawn with their source snippets, Ctrl-C — so the `cameleon` library stays free of it. The
//! binary (`src/main.rs`) only calls [`main`]; everything is here, driven by [`run_cli`] with any
//! argument list and output streams, so tests call it like the shell does.
//!
//! ## The command line with your own operators
//!
//! The catalogue a `.cm` file names its operator types from is filled at link time: every
//! `#[operator]` linked into the program is in it. A crate that declares its own operators gets
//! the whole command line with them by making this its `main`:
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! // … `#[operator]` declarations in this crate, or `use my_ops as _;` for a crate of them …
//!
//! fn main() -> ExitCode {
//!     cameleon_cli::main()
//! }
//! ```
//!
//! `cargo run -- run pipeline.cm` then runs a `.cm` file that uses them; `cargo run -- catalogue`
//! lists them beside the standard operators. The repository's `examples/custom_cli` is such a
//! crate.
//!
//! ## Exit codes
//!
//! | command | exit code |
//! |---|---|
//! | `run FILE.cm [--mode sequential\|parallel] [--max-steps N] [--trace PATH\|-] [--json] [--answer OP=VALUE]… [--answers FILE.json]` | 0 COMPLETED, 2 invalid net or file, 3 DEADLOCK, 4 LOOP_LIMIT, STEP_LIMIT or BUDGET, 5 ERROR, 6 WAITING, 130 CANCELLED (Ctrl-C) |
//! | `run FILE.cm --journal DB\|nats://HOST:PORT [--durability sync\|batch\|exit\|strict]` | as `run`; 2 also when `DB` is not a journal, or the server cannot be used |
//! | `resume DB [RUN_ID] [--json] [--trace PATH\|-] [--answer OP=VALUE]… [--base DIR] [--allow-outside] [--grant TOOL]…` | as `run`; 2 nothing to resume, an unknown id, a damaged or foreign file, a recorded folder outside the journal's without `--base`, a run another process holds (its lock, or on a `nats://` journal its lease) |
//! | `runs DB [--json]`, `history DB RUN_ID [--json]` | 0, 2 not a journal or an unknown id |
//! | `runs DB --delete RUN_ID [--force] [--json]` | 0 deleted, 2 unknown id, a run another process holds, a RUNNING run without `--force` (docs/journal.md "Retention") |
//! | `run FILE.cm --reuse DB[:RUN_ID]\|nats://HOST:PORT[:RUN_ID]` | as `run`; 2 also when `DB` is not a journal, the run id is unknown, or the server cannot be used |
//! | `diff DB\|nats://HOST:PORT RUN_A RUN_B [--json]` | 0 the same firings, 1 different, 2 invalid |
//! | `test FILE.cm --against DB\|nats://HOST:PORT RUN_ID [--json]` | 0 every sink as recorded, 1 different (or a call with no recorded answer), 2 invalid |
//! | `run FILE.cm --follow WITNESS [--json]` | 0 replayed, 2 not replayable, 3 it ends in DEADLOCK |
//! | `check FILE.cm [--capabilities FILE] [--verify [--max-states N]] [--json]` | 0 valid (and every property holds; warnings alone keep 0), 2 invalid (a capability name that is not defined included), 3 a property fails, 4 the state budget ran out first |
//! | `fmt FILE.cm [--check]` (`-`: stdin to stdout) | 0, 1 if `--check` finds a difference, 2 invalid |
//! | `catalogue [--json\|--markdown]` | 0 |
//! | `tools [--json]` | 0 |
//! | `call TOOL 'ARGS' [--json] [--base DIR]` | 0 the result is `ok`, 2 the arguments are not JSON, 5 any other status |
//! | `export FILE.cm --dot\|--mermaid\|--svg\|--pnml` | 0, 2 invalid |
//! | `serve FILE.cm [--port P] [--token T \| --no-token] [--bind ADDR] [--public-host NAME]… [--nats URL] [--journal DB\|nats://HOST:PORT]` | 0 when interrupted, 2 invalid arguments or the port is taken |
//! | `satellite --nats URL (--ops TYPES \| --all-ops) [--tools NAMES] [--base DIR] [--name NAME] [--concurrency N] [--heartbeat-ms MS] [--max-call-ms MS] [--max-request-bytes N] [--drain-ms MS]` | 0 stopped (SIGTERM, Ctrl-C), 2 invalid arguments or nothing to host, 5 NATS unreachable |
//! | `satellites --nats URL [--json]` | 0, 2 invalid arguments, 5 NATS unreachable |
//! | `schema` | 0 |
//! | `trust FILE` | 0 trusted, 2 not a valid capabilities file or no config directory |
//! | `mcp [--nets DIR] [--port P [--bind ADDR] [--token T \| --no-token]] [--capabilities FILE] [--grant TOOL]…` | 0 on a clean end (standard input closed; Ctrl-C or SIGTERM with `--port`), 2 invalid arguments or capabilities, or the port is taken |
#![deny(missing_docs)]

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cameleon::cm::{CmError, Loader};
use cameleon::net::Net;

mod answers;
mod args;
mod bus;
mod catalogue;
mod check;
mod ctrl_c;
mod export;
mod fmt;
mod journal;
mod live;
mod migrate;

mod mcp;
mod net_tools;
pub mod render;
mod report;
mod reuse;
mod run;
mod satellite;
mod serve;
mod telemetry;
mod tools;
mod trust;

pub use args::{
    CallArgs, CatalogueArgs, CheckArgs, DiffArgs, DurabilityArg, ExportArgs, FmtArgs, HistoryArgs,
    MigrateArgs, ModeArg, ReduceArg, ResumeArgs, RunArgs, RunsArgs, TestArgs, ToolsArgs,
};
pub use catalogue::catalogue_text;
pub use mcp::McpArgs;
pub use report::{RunReport, trace_jsonl};
pub use satellite::{NatsArgs, SatelliteArgs, SatellitesArgs};
pub use serve::ServeArgs;
pub use tools::tools_text;
pub use trust::TrustArgs;

/// Exit codes of every command (docs/cli.md).
pub mod exit {
    /// Success: the run COMPLETED, the file is valid, every property holds.
    pub const OK: i32 = 0;
    /// `fmt --check` found a file that is not in canonical form.
    pub const DIFFERS: i32 = 1;
    /// The file cannot be read, is not a valid `.cm` file, or the net is invalid; also a
    /// command-line usage error.
    pub const INVALID: i32 = 2;
    /// The run ended in DEADLOCK; `check --verify`: a property fails.
    pub const DEADLOCK: i32 = 3;
    /// The run stopped in LOOP_LIMIT, STEP_LIMIT or BUDGET.
    pub const LIMIT: i32 = 4;
    /// An operator failed (ERROR).
    pub const ERROR: i32 = 5;
    /// The run stopped in WAITING: an `ask` waits for an answer (docs/semantics.md §6.1).
    pub const WAITING: i32 = 6;
    /// The run was interrupted (Ctrl-C) and ended in CANCELLED; 128 + SIGINT, as shells do.
    pub const CANCELLED: i32 = 130;
}

const EXAMPLES: &str = "\
Examples:
  cameleon run examples/digest.cm              run a pipeline, print what each sink received
  cameleon check examples/digest.cm --json     validate, as JSON
  cameleon fmt examples/digest.cm --check      is the file in canonical form?
  cameleon catalogue --markdown                every operator type, for people and LLMs
  cameleon tools --json                        every tool, with its argument schema
  cameleon call calc '{\"expr\": \"2 ^ 10\"}'       one tool call through the gate
  cameleon export examples/digest.cm --svg > digest.svg
  cameleon serve examples/fork_join.cm         watch it run, step it, answer its questions";

/// Typed, reversible, verifiable pipelines: run, check, format and draw `.cm` files.
#[derive(Debug, Parser)]
#[command(name = "cameleon", version, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Log the engine's spans (one per run, step and firing: run id, step, operator, type,
    /// duration, attempts, capability generation) and tool events to stderr. FILTER is a
    /// `tracing` filter (default `info`; e.g. `cameleon=debug`).
    #[arg(long, global = true, value_name = "FILTER", num_args = 0..=1, default_missing_value = "info")]
    pub log: Option<String>,
    /// Export the spans (run, step, firing; `chat` and `execute_tool` with OpenTelemetry's
    /// GenAI attributes) to an OpenTelemetry collector over OTLP HTTP/protobuf. ENDPOINT is
    /// its base URL (`http://127.0.0.1:4318`; `/v1/traces` is added) or the full traces URL.
    /// Default: the environment variable OTEL_EXPORTER_OTLP_ENDPOINT, if set.
    #[arg(long, global = true, value_name = "ENDPOINT")]
    pub otlp: Option<String>,
    /// With --otlp: send header NAME with the value of environment variable VAR (an API key
    /// the collector wants). Repeatable.
    #[arg(long, global = true, value_name = "NAME=VAR")]
    pub otlp_header: Vec<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a net to a terminal state; print the end state, the step count and what each sink
    /// received.
    #[command(after_help = "\
Exit codes: 0 COMPLETED, 2 invalid net or file, 3 DEADLOCK, 4 LOOP_LIMIT, STEP_LIMIT or BUDGET, 5 ERROR,
6 WAITING (an `ask` waits for an answer: give it with --answer, --answers, or at the prompt
when standard input is a terminal).

Examples:
  cameleon run examples/digest.cm
  cameleon run examples/counter.cm --max-steps 100 --json
  cameleon run examples/digest.cm --trace trace.jsonl
  cameleon run examples/digest.cm --trace - | jq -c .op
  cameleon run examples/counter.cm --journal runs.db     durable: `cameleon resume runs.db` after a crash
  cameleon run examples/ask.cm --answer reviewer=Ada --answer approve=yes
  cameleon run pipeline.cm --nats nats://127.0.0.1:4222   `placement: remote` instances on satellites
  cameleon run examples/wcp/bad/xor-split-and-join.cm --follow src,split,test,choose:out_true,a")]
    // Not `Run`: rustc would then print the operator trait `cameleon::Run` with its full path
    // in users' compile errors (two public items named `Run`).
    #[command(name = "run")]
    RunNet(RunArgs),
    /// Validate a net: every problem, with its line, column and a hint.
    #[command(after_help = "\
Besides the net, check resolves the chat models, embedders, memories and tools its operators
name against the capabilities `run` would use (--capabilities FILE, else your config
directory's cameleon.yaml, CAMELEON_CAPABILITIES, cameleon.yaml beside the file, and the
built-in defaults), reading names only: nothing a capabilities file configures is started or
contacted. A name that is not defined is an error, and so is an entry of an untrusted project
file that only a trusted one may hold (`cameleon trust`); a `tool` or `agent` whose tools the
net's `tools:` key does not allow is a warning, and so is a `write`/`external` tool under
`allow:` that you have not granted (`run --grant TOOL`).

Exit codes: 0 valid (with --verify: every property holds; warnings alone keep 0), 2 invalid (an
undefined capability name included), 3 a verified property fails, 4 the state budget
(--max-states) ran out before a verdict.

Examples:
  cameleon check examples/digest.cm
  cameleon check examples/digest.cm --json
  cameleon check examples/agent.cm --capabilities my-models.yaml
  cameleon check examples/wcp/bad/xor-split-and-join.cm --verify
  cameleon check examples/wcp/wcp21-structured-loop.cm --verify --json
  cameleon check examples/wcp/wcp03-synchronization.cm --verify --reduce none")]
    Check(CheckArgs),
    /// Rewrite a .cm file in canonical form (in place; `-` reads stdin and writes stdout).
    #[command(after_help = "\
The canonical form has the keys in the documented order, operators and connections in
declaration order, `type:` always written, default params left out. The comment block at the
top of the file is kept; other comments are not.

Exit codes: 0 done (or already canonical), 1 `--check` found a difference, 2 invalid.

Examples:
  cameleon fmt examples/digest.cm
  cameleon fmt examples/digest.cm --check
  cameleon fmt examples/digest.cm -         print the canonical form, leave the file alone
  cat net.cm | cameleon fmt -")]
    Fmt(FmtArgs),
    /// List every registered operator type: ports, types, policy, params, docs.
    #[command(after_help = "\
Examples:
  cameleon catalogue
  cameleon catalogue --json > catalogue.json
  cameleon catalogue --markdown > CATALOGUE.md")]
    Catalogue(CatalogueArgs),
    /// List every tool linked into the program: name, description, argument and result
    /// schemas (what an LLM needs to call one from a `tool` operator).
    #[command(after_help = "\
With a capabilities file that lists MCP servers under `mcp:`, their tools are listed too, as
`SERVER.TOOL` (each server is started to list them).

Examples:
  cameleon tools
  cameleon tools --json > tools.json
  cameleon tools --capabilities mcp.yaml")]
    Tools(ToolsArgs),
    /// Call one tool through the tool gate and print its result (`{status, content, error,
    /// meta}` with --json). The named tool is allowed for this call; file tools stay confined
    /// to the base folder.
    #[command(after_help = "\
Exit codes: 0 the result is `ok`, 2 the arguments are not JSON, 5 any other status (error,
denied, timeout).

Examples:
  cameleon call calc '{\"expr\": \"2 ^ 10\"}'
  cameleon call read_file '{\"path\": \"data/article.txt\"}' --base examples
  cameleon call json_query '{\"value\": {\"a\": [1, 2]}, \"path\": \"/a/1\"}' --json
  cameleon call everything.echo '{\"message\": \"hi\"}' --capabilities mcp.yaml")]
    Call(CallArgs),
    /// Draw a net as Graphviz DOT, Mermaid or SVG, or write its PNML place/transition net.
    #[command(after_help = "\
Examples:
  cameleon export examples/digest.cm --dot | dot -Tpng > digest.png
  cameleon export examples/digest.cm --mermaid
  cameleon export examples/digest.cm --svg > digest.svg
  cameleon export examples/wcp/wcp04-exclusive-choice.cm --pnml > choice.pnml")]
    Export(ExportArgs),
    /// Continue a journaled run after a crash or an interruption (or show how a finished one
    /// ended), firing nothing that was already committed.
    #[command(after_help = "\
Without RUN_ID, the most recently started run that has not finished (RUNNING, WAITING or
CANCELLED). Its trace holds every firing from step 1, restored ones included: the same bytes as
an uninterrupted run. A firing that was in flight at the crash runs again (its idempotency key
is the same). A finished run prints its end and exits with its code.

Exit codes: as `run`; 2 nothing to resume, an unknown run id, a damaged or foreign file, a net
whose operator types this program lacks.

Examples:
  cameleon resume runs.db
  cameleon resume runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11 --json
  cameleon resume runs.db --trace trace.jsonl")]
    Resume(ResumeArgs),
    /// List the runs of a journal, newest first.
    #[command(after_help = "\
STATUS is RUNNING (unfinished, crashed included), WAITING, or the run's end state.

Examples:
  cameleon runs runs.db
  cameleon runs runs.db --json")]
    Runs(RunsArgs),
    /// Show a journaled run's history tree: every step, on which branch.
    #[command(after_help = "\
Examples:
  cameleon history runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11
  cameleon history runs.db 01936f0e-3c1a-7c52-9d0b-5f2e8a6b4c11 --json")]
    History(HistoryArgs),
    /// Compare two runs of a journal: the first firing where they part (operator, inputs and
    /// outputs side by side, where the values differ), and counts of equal, changed, new and
    /// removed firings.
    #[command(after_help = reuse::DIFF_HELP)]
    Diff(DiffArgs),
    /// Re-run a net against a recorded run, every model, embedder and tool call answered from
    /// the record (none is made), and compare every sink with it: a golden test.
    #[command(after_help = reuse::TEST_HELP)]
    Test(TestArgs),
    /// Move a journaled run onto a changed net, once the verifier proves the move safe.
    #[command(after_help = migrate::HELP)]
    Migrate(MigrateArgs),
    /// Serve a local web page to watch, step and answer a net, see its results, and edit its .cm text.
    #[command(after_help = "\
The page has three views: Visual (the net fitted to the window, coloured by data type,
connection states live; click a connection or an operator to inspect its value, or a model
firing's prompt, answer and tokens), Code (the .cm text, problems shown at their lines as you
type; Save writes the canonical form to FILE) and Split. An Outputs panel shows every sink's
values as they arrive. Controls: Step, Back, Run, Pause, Reset, Refire; a timeline of the history
with its branches.

It listens on 127.0.0.1 and prints the page's address with a token made at start
(http://127.0.0.1:7878/?token=…): open it, and the page trades the token for a cookie. Scripts
send `Authorization: Bearer T`. Requests for another host name (DNS rebinding) or from another
site's page are refused. --bind beyond loopback requires --token; --no-token is for loopback
only. JSON API: GET /api/state, POST /api/step|back|run|reset, POST /api/provide/OP with
{\"value\": …}, GET /api/events (server-sent events), GET /api/outputs, GET /api/inspect;
docs/cli.md has the rest, docs/security.md who can reach it.

Examples:
  cameleon serve examples/fork_join.cm
  cameleon serve examples/ask.cm --port 8080
  cameleon serve examples/digest.cm --bind 0.0.0.0 --token s3cret --public-host box.lan")]
    Serve(ServeArgs),
    /// Serve this program's operator types and tools to runs elsewhere, over NATS.
    #[command(after_help = "\
Hosts only what it is told: the operator types of --ops (or every one with --all-ops) and the
tools of --tools, linked into this program (a crate with its own operators gets them by calling
`cameleon_cli::main()`). File tools and file-reading operators need --base DIR, the folder they
are confined to. Its hosting list is its policy: a run's `tools:` policy can narrow it, never
widen it. At --concurrency calls it answers `busy` at once (the run sends the call again); a
call past --max-call-ms is abandoned and answered `timeout`. Runs with `--nats URL` fire their
`placement: remote` instances here; calls spread over the satellites of a prefix. It heartbeats
every --heartbeat-ms; SIGTERM or Ctrl-C stops it after the calls it runs are answered (at most
--drain-ms). Who may call it is NATS's own authorization: docs/wire.md gives a server
configuration. The wire format is in docs/wire.md.

Exit codes: 0 stopped, 2 invalid arguments (nothing to host — the message lists what could be —,
a type or tool this program lacks, a file reader without --base, a name that is not a subject
token), 5 NATS unreachable.

Examples:
  cameleon satellite --nats nats://127.0.0.1:4222 --name gpu-1 --ops llm,embed --concurrency 8
  cameleon satellite --nats nats://127.0.0.1:4222 --ops text_file --tools read_file --base /srv/docs
  cameleon satellite --nats tls://nats.example.com:4222 --nats-creds me.creds --all-ops --subject-prefix acme")]
    Satellite(SatelliteArgs),
    /// List the live satellites of a NATS server: name, operator types, tools, last seen.
    #[command(after_help = "\
Exit codes: 0, 2 invalid arguments, 5 NATS unreachable.

Examples:
  cameleon satellites --nats nats://127.0.0.1:4222
  cameleon satellites --nats nats://127.0.0.1:4222 --json")]
    Satellites(SatellitesArgs),
    /// Print the JSON Schema of the .cm format.
    #[command(after_help = "\
Examples:
  cameleon schema > cm.schema.json")]
    Schema,
    /// Trust a project's capabilities file: record its SHA-256 in your config directory, so
    /// its entries may send environment variables and the run's data to the hosts they name,
    /// and grant tools (a changed file must be trusted again).
    #[command(after_help = "\
A `cameleon.yaml` found beside a .cm file is not trusted: it may configure offline models and
loopback endpoints without a key, and nothing else. `--capabilities FILE`, the file named by
CAMELEON_CAPABILITIES and `cameleon.yaml` in your config directory ($XDG_CONFIG_HOME/cameleon,
else ~/.config/cameleon) are trusted as given. Read the file before trusting it.

Exit codes: 0 trusted, 2 not a valid capabilities file (nothing recorded), no config directory.

Examples:
  cameleon trust examples/cameleon.yaml")]
    Trust(TrustArgs),
    /// Serve the nets of a folder to MCP clients (Model Context Protocol): each `.cm` file
    /// with an `input`/`output` boundary whose `check --verify` holds is a tool (arguments:
    /// its inputs; result: its outputs), plus `check` and `catalogue`.
    #[command(after_help = "\
Over standard input and output by default (what an MCP client that starts `cameleon mcp` as a
program uses); with --port, streamable HTTP at http://127.0.0.1:P/mcp, each request with
`Authorization: Bearer T` (the token printed at start, or --token T). A net that ends waiting
for a person's answer returns a tool error naming the question. Nets that are not offered are
listed on stderr with why.

Exit codes: 0 on a clean end (the client closed standard input; Ctrl-C or SIGTERM with --port),
2 invalid arguments, an invalid capabilities file, or the port is taken.

Examples:
  cameleon mcp --nets examples/mcp
  cameleon mcp --nets examples/mcp --port 8931")]
    Mcp(McpArgs),
}

/// Where a command reads and writes, and what the terminal can do.
pub struct Io<'a> {
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
    /// Standard input (for `fmt -`).
    pub stdin: &'a mut dyn Read,
    /// Colour diagnostics.
    pub color: bool,
    /// Show a progress bar on stderr during long runs.
    pub progress: bool,
    /// Standard input is a terminal: `run` may ask an `ask`'s question there.
    pub prompt: bool,
    /// Cancelled when the user interrupts (Ctrl-C): `run` then stops after the current step
    /// and ends in CANCELLED. `None`: not interruptible.
    pub interrupt: Option<cameleon::CancelToken>,
}

impl std::fmt::Debug for Io<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("color", &self.color)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

/// Runs the binary: parses the process arguments, uses the real standard streams.
pub fn main() -> ExitCode {
    let (mut stdout, mut stderr, mut stdin) = (
        std::io::stdout().lock(),
        std::io::stderr(),
        std::io::stdin(),
    );
    let terminal = std::io::stderr().is_terminal();
    let mut io = Io {
        stdout: &mut stdout,
        stderr: &mut stderr,
        stdin: &mut stdin,
        color: terminal && std::env::var_os("NO_COLOR").is_none(),
        progress: terminal,
        prompt: std::io::stdin().is_terminal(),
        interrupt: Some(ctrl_c::cancel_on_ctrl_c()),
    };
    let code = run_cli(std::env::args_os(), &mut io);
    let _ = io.stdout.flush();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Runs the command line `args` (the first is the program name) against `io`; returns the
/// exit code.
pub fn run_cli<I, T>(args: I, io: &mut Io<'_>) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = if io.color {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let to_stdout = !e.use_stderr();
            let w: &mut dyn Write = if to_stdout { io.stdout } else { io.stderr };
            let _ = write!(w, "{text}");
            return if to_stdout { exit::OK } else { exit::INVALID };
        }
    };
    let endpoint = cli.otlp.clone().or_else(|| {
        std::env::var(telemetry::ENDPOINT_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    let otlp = match endpoint
        .map(|e| {
            Ok::<_, String>((
                telemetry::traces_url(&e)?,
                telemetry::headers(&cli.otlp_header)?,
            ))
        })
        .transpose()
    {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return exit::INVALID;
        }
    };
    // Held to the end of the command: dropping it sends the spans still queued.
    let _exporter = match telemetry::start(
        cli.log.as_deref(),
        otlp.as_ref().map(|(url, h)| (url.as_str(), h.clone())),
    ) {
        Ok(e) => e,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return exit::INVALID;
        }
    };
    let r = match cli.command {
        Command::RunNet(a) => run::run(&a, io),
        Command::Check(a) => check::check(&a, io),
        Command::Fmt(a) => fmt::fmt(&a, io),
        Command::Catalogue(a) => catalogue::catalogue(&a, io),
        Command::Tools(a) => tools::tools(&a, io),
        Command::Call(a) => tools::call(&a, io),
        Command::Export(a) => export::export(&a, io),
        Command::Resume(a) => journal::resume(&a, io),
        Command::Runs(a) => journal::runs(&a, io),
        Command::History(a) => journal::history(&a, io),
        Command::Diff(a) => reuse::diff(&a, io),
        Command::Test(a) => reuse::test(&a, io),
        Command::Migrate(a) => match bus::refuse(Some(&a.db), "`migrate`", io) {
            Ok(Some(code)) => return code,
            _ => migrate::migrate(&a, io),
        },
        Command::Serve(a) => serve::serve(&a, io),
        Command::Satellite(a) => satellite::satellite(&a, io),
        Command::Satellites(a) => satellite::satellites(&a, io),
        Command::Trust(a) => trust::trust(&a, io),
        Command::Mcp(a) => mcp::mcp(&a, io),
        Command::Schema => {
            write!(io.stdout, "{}", cameleon::cm::schema::schema_json()).map(|()| exit::OK)
        }
    };
    r.unwrap_or_else(|e| {
        // Writing to a closed pipe (`| head`) is not an error worth a message.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(io.stderr, "error: {e}");
        }
        exit::ERROR
    })
}

/// Loads `path` for a command; on failure prints the problems (rendered, or as JSON) and
/// returns the exit code to use.
fn load(
    path: &Path,
    allow_outside: bool,
    json: bool,
    io: &mut Io<'_>,
) -> std::io::Result<Result<Net, i32>> {
    let known = net_tools::net_tool_names(path, None);
    load_with(path, allow_outside, json, None, None, &known, io)
}

/// [`load`], the file's tool names resolved against `tools` and its operator types against
/// `catalogue` (this program's and the satellites', with `--nats`) when given, and `known`
/// accepted as tool names (the nets the capabilities files offer as tools).
fn load_with(
    path: &Path,
    allow_outside: bool,
    json: bool,
    tools: Option<std::sync::Arc<cameleon::tools::ToolRegistry>>,
    catalogue: Option<&cameleon::catalogue::Catalogue>,
    known: &[String],
    io: &mut Io<'_>,
) -> std::io::Result<Result<Net, i32>> {
    let mut loader = Loader::new()
        .allow_outside(allow_outside)
        .known_tools(known.iter().cloned());
    if let Some(c) = catalogue {
        loader = loader.catalogue(c);
    }
    if let Some(t) = tools {
        loader = loader.tools(t);
    }
    match loader.load_file(path) {
        Ok(net) => Ok(Ok(net)),
        Err(e) => {
            report_invalid(&e, json, io)?;
            Ok(Err(exit::INVALID))
        }
    }
}

/// Prints a [`CmError`]: as `{"valid":false,"problems":[…]}` on stdout with `json`, else
/// rendered with snippets on stderr.
fn report_invalid(e: &CmError, json: bool, io: &mut Io<'_>) -> std::io::Result<()> {
    if json {
        let v = serde_json::json!({
            "valid": false,
            "file": e.file_name(),
            "problems": e.problems(),
        });
        writeln!(io.stdout, "{v}")
    } else {
        write!(io.stderr, "{}", render::cm_error(e, io.color))
    }
}

/// The name to show for a net: its `name:`, else the file's stem.
fn display_name(net: &Net, path: &Path) -> String {
    if net.name().is_empty() {
        path.file_stem()
            .map_or_else(|| "net".to_owned(), |s| s.to_string_lossy().into_owned())
    } else {
        net.name().to_owned()
    }
}
