//! The arguments of each command (clap), and how they map to the library's options.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use cameleon::net::Mode;

use crate::satellite::NatsArgs;

/// Execution mode on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One operator per step, the first enabled in declaration order.
    Sequential,
    /// Every enabled operator per step (maximal step).
    Parallel,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Sequential => Mode::Sequential,
            ModeArg::Parallel => Mode::Parallel,
        }
    }
}

/// When a journaled run's steps reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum DurabilityArg {
    /// Each step is committed before the next one starts.
    #[default]
    Sync,
    /// Steps are committed together, at most every --batch-ms milliseconds.
    Batch,
    /// Steps are committed when the run ends.
    Exit,
    /// As sync, and each commit is synced to the disk (an fsync per step): survives a power loss.
    Strict,
}

/// `cameleon run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The .cm file.
    pub file: PathBuf,
    /// Execution mode (default: the file's `config.mode`, else sequential).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Stop in STEP_LIMIT before the first step past N.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// How many times one operator may fire before the run stops in LOOP_LIMIT (default: the
    /// file's `config.max_loop_iterations`, else 10000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_loop_iterations: Option<u32>,
    /// Stop in BUDGET before a model request once the run has used N tokens (prompt and
    /// completion, inner runs included); replaces the file's `config: budget: tokens`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget: Option<u64>,
    /// Stop in BUDGET before a model request once the run has spent USD dollars at the models'
    /// `price_usd`; replaces the file's `config: budget: cost_usd`.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub budget_usd: Option<f64>,
    /// Write one JSON line per firing, then the end state, to PATH (`-`: stdout; the summary
    /// then goes to stderr).
    #[arg(long, value_name = "PATH|-")]
    pub trace: Option<String>,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print the operators' output as it is written (a model's answer streaming in) on
    /// stderr, each line prefixed by `[instance]`; stdout stays the result.
    #[arg(long)]
    pub stream: bool,
    /// Let file-reading operators read outside the .cm file's folder.
    #[arg(long)]
    pub allow_outside: bool,
    /// The capabilities file (chat models, embedders, memories, grants), trusted. Default:
    /// `cameleon.yaml` in your config directory, the file named by `CAMELEON_CAPABILITIES`,
    /// then `cameleon.yaml` beside the .cm file (trusted once `cameleon trust` recorded it;
    /// later files' entries override), each if present.
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Grant TOOL (repeatable): under the net's `tools: allow:` it runs unasked, whatever its
    /// effects (a .cm file alone lets only `none` and `read` tools run unasked).
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
    /// Answer the question of `ask` operator OP with VALUE (repeatable; an `ask` that asks
    /// several times takes its answers in order). A `DataBool` takes yes/no, a `DataJSON` JSON.
    #[arg(long, value_name = "OP=VALUE")]
    pub answer: Vec<String>,
    /// Answers from a JSON file: `{"OP": VALUE, …}`, each value in its JSON form.
    #[arg(long, value_name = "FILE.json")]
    pub answers: Option<PathBuf>,
    /// Instead of running, replay a witness of `check --verify` (labels separated by commas or
    /// spaces, or its JSON array) in the verifier's abstraction, showing the connection states
    /// along it. No operator runs.
    #[arg(long, value_name = "WITNESS", conflicts_with_all = ["mode", "max_steps", "trace", "journal"])]
    pub follow: Option<String>,
    /// Journal the run into DB (a SQLite file, created if missing), or on the NATS JetStream
    /// server at `nats://HOST:PORT` (with --nats-creds, --nats-token, --subject-prefix;
    /// docs/journal.md "Stores"): a crashed or interrupted run then goes on with `cameleon
    /// resume DB`. The first line on stderr is `run <ID>`.
    #[arg(long, value_name = "DB|URL")]
    pub journal: Option<PathBuf>,
    /// With a `nats://` journal: the time to live of the run's lease (a process that dies
    /// without releasing it holds the run this long).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub lease_ms: u64,
    /// Before calling a behavioral operator, look for a recorded firing with the same key
    /// (operator type, params, state, inputs, model) in the journal DB (or in its run RUN_ID
    /// only) and apply it instead of calling the operator (docs/semantics.md §5.9): a re-run
    /// after a change pays only for the firings the change reaches. DB may be
    /// `nats://HOST:PORT` (a journal on NATS JetStream, with --nats-creds, --nats-token,
    /// --subject-prefix): its runs' records are read into memory at start.
    #[arg(long, value_name = "DB[:RUN_ID]")]
    pub reuse: Option<String>,
    /// With --journal: when steps reach the disk.
    #[arg(long, value_enum, default_value_t = DurabilityArg::Sync, requires = "journal")]
    pub durability: DurabilityArg,
    /// With --durability batch: the longest a step waits before it is committed.
    #[arg(long, value_name = "MS", default_value_t = cameleon::journal::Durability::DEFAULT_BATCH_MS, requires = "journal")]
    pub batch_ms: u64,
    /// NATS: with --nats URL, `placement: remote` instances fire on satellites (docs/wire.md).
    #[command(flatten)]
    pub nats: NatsArgs,
}

/// `cameleon resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The journal file, or `nats://HOST:PORT` for a journal on NATS JetStream.
    pub db: PathBuf,
    /// With a `nats://` journal: the time to live of the run's lease, for a new lease bucket.
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub lease_ms: u64,
    /// The run (default: the most recently started unfinished one).
    pub run_id: Option<String>,
    /// The run's token budget, in total (what it spent before counts): a run stopped in BUDGET
    /// goes on under it; replaces the file's `config: budget: tokens`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub budget: Option<u64>,
    /// The run's cost budget in US dollars, in total, as --budget; replaces the file's
    /// `config: budget: cost_usd`.
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub budget_usd: Option<f64>,
    /// Print the result as one JSON object (with `run_id`).
    #[arg(long)]
    pub json: bool,
    /// Write one JSON line per firing from step 1, then the end state, to PATH (`-`: stdout;
    /// the summary then goes to stderr).
    #[arg(long, value_name = "PATH|-")]
    pub trace: Option<String>,
    /// The capabilities file (models, embedders, memories, grants) the run goes on with,
    /// trusted; default: as `run` (the project's `cameleon.yaml` is the base folder's).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Grant TOOL for the rest of the run (repeatable), as `run --grant`: grants are not
    /// taken from the journal.
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
    /// The folder the run goes on in: its file readers, sub-nets and file tools are confined
    /// to it. Default: the folder the journal recorded, when it lies inside the journal file's
    /// folder (else resume refuses, naming it: a journal does not choose where a run reads).
    #[arg(long, value_name = "DIR")]
    pub base: Option<PathBuf>,
    /// Let file-reading operators read outside that folder, as `run --allow-outside` (never
    /// taken from the journal: give it again).
    #[arg(long)]
    pub allow_outside: bool,
    /// Answer the question of `ask` operator OP with VALUE, for a run that waits (repeatable).
    #[arg(long, value_name = "OP=VALUE")]
    pub answer: Vec<String>,
    /// Answers from a JSON file: `{"OP": VALUE, …}`, each value in its JSON form.
    #[arg(long, value_name = "FILE.json")]
    pub answers: Option<PathBuf>,
    /// NATS: with --nats URL, `placement: remote` instances fire on satellites (docs/wire.md).
    #[command(flatten)]
    pub nats: NatsArgs,
}

/// `cameleon runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// The journal file, or `nats://HOST:PORT` for a journal on NATS JetStream.
    pub db: PathBuf,
    /// NATS: how to reach a `nats://` journal (--nats-creds, --nats-token, --subject-prefix).
    #[command(flatten)]
    pub nats: NatsArgs,
    /// As JSON: `[{"id","name","status","steps","started"}]`; with --delete, `{"deleted":ID}`.
    #[arg(long)]
    pub json: bool,
    /// Delete run RUN_ID's records instead of listing (docs/journal.md "Retention"); a run
    /// another process goes on with is refused, and so is a RUNNING one without --force.
    #[arg(long, value_name = "RUN_ID")]
    pub delete: Option<String>,
    /// With --delete: delete a RUNNING run too (on a nats:// journal, even one whose lease
    /// another process holds: that process's run then stops).
    #[arg(long, requires = "delete")]
    pub force: bool,
}

/// `cameleon history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The journal file, or `nats://HOST:PORT` for a journal on NATS JetStream.
    pub db: PathBuf,
    /// NATS: how to reach a `nats://` journal (--nats-creds, --nats-token, --subject-prefix).
    #[command(flatten)]
    pub nats: NatsArgs,
    /// The run.
    pub run_id: String,
    /// As JSON: `{"entries":[{"step","ops","branch"}…],"branches":[…]}`.
    #[arg(long)]
    pub json: bool,
}

/// `cameleon diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The journal file, or `nats://HOST:PORT` for a journal on NATS JetStream.
    pub db: String,
    /// The first run (A).
    pub run_a: String,
    /// The second run (B).
    pub run_b: String,
    /// As JSON: `{"same","equal","changed","new","removed","first":{"op","a","b","difference"}}`.
    #[arg(long)]
    pub json: bool,
    /// NATS: how to reach a `nats://` journal (--nats-creds, --nats-token, --subject-prefix).
    #[command(flatten)]
    pub nats: NatsArgs,
}

/// `cameleon test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The .cm file.
    pub file: PathBuf,
    /// The journal holding the recorded run: a file, or `nats://HOST:PORT` for a journal on
    /// NATS JetStream.
    #[arg(long, value_name = "DB")]
    pub against: String,
    /// The recorded run.
    pub run_id: String,
    /// As JSON: `{"equal","end","error","reused","sinks":[…],"diff":{…}}`.
    #[arg(long)]
    pub json: bool,
    /// Let file-reading operators read outside the .cm file's folder.
    #[arg(long)]
    pub allow_outside: bool,
    /// The capabilities file, as `run` (the models must be those of the recorded run: a
    /// model's identity is part of a firing's key).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// Grant TOOL (repeatable), as `run --grant`.
    #[arg(long, value_name = "TOOL")]
    pub grant: Vec<String>,
    /// NATS: how to reach a `nats://` journal (--nats-creds, --nats-token, --subject-prefix).
    #[command(flatten)]
    pub nats: NatsArgs,
}

/// `cameleon migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The journal file.
    pub db: PathBuf,
    /// The run.
    pub run_id: String,
    /// The new net: the run moves onto it if the verifier proves the move safe.
    #[arg(long, value_name = "NEW.cm", required_unless_present_any = ["back", "replay"])]
    pub to: Option<PathBuf>,
    /// An operator renamed in the new net (repeatable): its tokens' connections and its state
    /// follow it.
    #[arg(long, value_name = "OLD_ID=NEW_ID", requires = "to")]
    pub rename: Vec<String>,
    /// Move the run even though the new net could not reach its mapped marking itself (work
    /// skipped or done twice); deadlock-freedom and the option to complete are still required.
    #[arg(long, requires = "to")]
    pub allow_unreachable: bool,
    /// Decide and report; record nothing.
    #[arg(long, requires = "to")]
    pub dry_run: bool,
    /// Go back over the run's last migration: the run is on the net it left, at the marking it
    /// left (its steps on the new net become its recorded future).
    #[arg(long, conflicts_with_all = ["to", "replay"])]
    pub back: bool,
    /// Re-apply the migration `--back` went back over.
    #[arg(long, conflicts_with_all = ["to", "back"])]
    pub replay: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `cameleon check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The .cm file.
    pub file: PathBuf,
    /// Also explore the state space and report the properties of docs/semantics.md §8 with witnesses.
    #[arg(long)]
    pub verify: bool,
    /// With `--verify`: store at most N states; past it the exploration stops and says what it
    /// covered (exit 4 unless a property already failed).
    #[arg(long, value_name = "N", default_value_t = cameleon::verify::DEFAULT_MAX_STATES, requires = "verify")]
    pub max_states: u64,
    /// With `--verify`: the state space explored. `stubborn` (the default) reduces it with
    /// stubborn sets — the same verdicts, far fewer states when operators run in parallel,
    /// witnesses real but not always the shortest; `none` explores every interleaving
    /// (docs/semantics.md §8.6).
    #[arg(long, value_enum, value_name = "REDUCTION", default_value_t = ReduceArg::Stubborn, requires = "verify")]
    pub reduce: ReduceArg,
    /// With `--verify`: threads of the full exploration (`--reduce none`, and the one a
    /// reduced exploration's lasso needs), 1 to 1024; default: one per core. The report is the
    /// same for every count (docs/semantics.md §8.8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024), requires = "verify")]
    pub threads: Option<u16>,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Instead of checking the file alone: for every reachable control state of OLD.cm, would a
    /// run there migrate safely onto this file's net (`cameleon migrate`'s two questions)?
    /// Prints the safe change region as a sentence, then the states. Exit 0 always safe, 3 not.
    #[arg(long, value_name = "OLD.cm", conflicts_with = "verify")]
    pub against: Option<PathBuf>,
    /// With --against: an operator of OLD.cm renamed in this file (repeatable).
    #[arg(long, value_name = "OLD_ID=NEW_ID", requires = "against")]
    pub rename: Vec<String>,
    /// The capabilities file whose chat models, embedders and memories the net's names must
    /// resolve to, as `run` would use it. Default: the file named by `CAMELEON_CAPABILITIES`,
    /// then `cameleon.yaml` beside the .cm file, each if present. Only names are read: nothing
    /// it configures is started or contacted.
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
    /// NATS: with --nats URL, the tools the satellites host count as tools of this program
    /// (docs/wire.md).
    #[command(flatten)]
    pub nats: NatsArgs,
}

/// `check --verify --reduce`: which state space is explored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReduceArg {
    /// Every reachable state.
    None,
    /// Partial-order reduction with stubborn sets and the cycle proviso.
    Stubborn,
}

impl From<ReduceArg> for cameleon::verify::Reduction {
    fn from(r: ReduceArg) -> Self {
        match r {
            ReduceArg::None => cameleon::verify::Reduction::None,
            ReduceArg::Stubborn => cameleon::verify::Reduction::Stubborn,
        }
    }
}

/// `cameleon fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// The .cm file, or `-` to read stdin and write stdout.
    pub file: PathBuf,
    /// `-`: write the canonical form to stdout instead of rewriting FILE.
    #[arg(value_name = "-", value_parser = clap::builder::PossibleValuesParser::new(["-"]))]
    pub output: Option<String>,
    /// Do not write: exit 1 if the file is not in canonical form.
    #[arg(long)]
    pub check: bool,
    /// The capabilities file whose nets offered as tools (`nets:`) the file may name, as `run`
    /// would use it. Default: the file named by `CAMELEON_CAPABILITIES`, then `cameleon.yaml`
    /// beside the .cm file, each if present. Only the names are read.
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
}

/// `cameleon catalogue`.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct CatalogueArgs {
    /// As JSON (for programs and LLMs).
    #[arg(long)]
    pub json: bool,
    /// As Markdown.
    #[arg(long)]
    pub markdown: bool,
}

/// `cameleon tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// As a JSON array of `{"name","description","effects","input_schema","output_schema"}`.
    #[arg(long)]
    pub json: bool,
    /// A capabilities file whose MCP servers' tools (`SERVER.TOOL`) are listed too (default:
    /// your config directory's `cameleon.yaml`, then the file `CAMELEON_CAPABILITIES` names).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
}

/// `cameleon call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's name (`cameleon tools` lists them).
    pub tool: String,
    /// Its arguments, one JSON object.
    #[arg(value_name = "ARGS")]
    pub args: String,
    /// Print the whole result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The folder file tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub base: Option<PathBuf>,
    /// A capabilities file, for the tools of its MCP servers (`SERVER.TOOL`) (default: your
    /// config directory's `cameleon.yaml`, then the file `CAMELEON_CAPABILITIES` names).
    #[arg(long, value_name = "FILE")]
    pub capabilities: Option<PathBuf>,
}

/// `cameleon export`.
#[derive(Debug, Args)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("format").required(true).multiple(false)))]
pub struct ExportArgs {
    /// The .cm file.
    pub file: PathBuf,
    /// Graphviz DOT.
    #[arg(long, group = "format")]
    pub dot: bool,
    /// Mermaid flowchart.
    #[arg(long, group = "format")]
    pub mermaid: bool,
    /// SVG drawing (uses the operators' `x`/`y` when every operator has one).
    #[arg(long, group = "format")]
    pub svg: bool,
    /// The PNML place/transition net of docs/semantics.md §8.
    #[arg(long, group = "format")]
    pub pnml: bool,
}

/// A `--budget-usd` amount: a finite number of US dollars above 0.
fn parse_usd(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "`{s}` is not an amount of US dollars above 0 (e.g. 0.50)"
        )),
    }
}
