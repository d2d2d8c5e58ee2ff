//! [`Runtime`]: the current generation, the sources it is built from, and reloading.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::config::{ENV_VAR, Trust, config_file_names, load_config_file};
use super::{CapabilitiesBuilder, CapabilityNames, Generation, RunCapabilities};
use crate::cm::CmError;
use crate::engine::{Cvm, CvmBuilder};
use crate::net::Net;

/// Why a generation could not be built. The current generation stays in force.
#[derive(Debug, thiserror::Error)]
pub enum CapabilitiesError {
    /// A capabilities file is invalid: every problem, located (file, line, column, hint).
    #[error("{0}")]
    File(CmError),
    /// A net a capabilities file offers as a tool is not offered: why (`check --verify` does
    /// not hold for it, with the property and its witness; the file is not a valid net; …).
    #[error("net-tool `{name}` ({from}) is not offered: {message}")]
    Net {
        /// The tool's name.
        name: String,
        /// Where it was configured.
        from: String,
        /// Why.
        message: String,
    },
    /// A source failed.
    #[error("capability source {source_name}: {message}")]
    Source {
        /// The source, described.
        source_name: String,
        /// What went wrong.
        message: String,
    },
}

/// Where capabilities come from. A source writes its entries into the builder each time a
/// generation is built (at start and at every [`Runtime::reload`]).
pub trait CapabilitySource: Send + Sync + fmt::Debug {
    /// How messages name it (`` `cameleon.yaml` ``, `code`).
    fn describe(&self) -> String;

    /// Adds this source's entries.
    fn apply(&self, builder: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError>;

    /// Adds the names this source defines to `names` without building, starting or contacting
    /// anything (what `cameleon check` resolves a net's names against). Default: the source
    /// cannot tell without running, and `names` is marked [open](CapabilityNames::open) — a
    /// [`CodeSource`]'s closure is never called for a check.
    fn names(&self, names: &mut CapabilityNames) -> Result<(), CapabilitiesError> {
        names.open();
        Ok(())
    }
}

/// A capabilities file (YAML): `chat:`, `embedders:`, `memories:`, each a mapping of names to
/// `{kind: …, …settings}`, and `grants:`.
///
/// A file is **trusted** when it is given ([`new`](Self::new), [`optional`](Self::optional):
/// code, `--capabilities`, `CAMELEON_CAPABILITIES`, the user's config directory); a
/// [`project`](Self::project) file — found beside a `.cm` file — only once the user recorded it
/// with `cameleon trust` ([`trust`](super::trust)). An untrusted file may not send an
/// environment variable or the run's data to a host (a loopback `base_url` without a key is
/// fine), run a program, or grant tools: such a key is a located problem of kind `untrusted`,
/// and nothing is built (docs/security.md).
#[derive(Clone, Debug)]
pub struct ConfigFile {
    path: PathBuf,
    required: bool,
    trust: Trust,
}

impl ConfigFile {
    /// The file at `path`, which must exist; trusted.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ConfigFile {
            path: path.into(),
            required: true,
            trust: Trust::Given,
        }
    }

    /// The file at `path`, if it exists (a missing one adds nothing); trusted.
    pub fn optional(path: impl Into<PathBuf>) -> Self {
        ConfigFile {
            path: path.into(),
            required: false,
            trust: Trust::Given,
        }
    }

    /// A project's file at `path` (a `cameleon.yaml` found beside a `.cm` file), if it exists:
    /// trusted only when the user's trust store holds it with this content.
    pub fn project(path: impl Into<PathBuf>) -> Self {
        ConfigFile {
            path: path.into(),
            required: false,
            trust: Trust::Project,
        }
    }

    /// The user's own capabilities file, `cameleon.yaml` in their config directory
    /// ([`trust::config_dir`](super::trust::config_dir)), if it exists; trusted.
    pub fn user() -> Option<Self> {
        super::trust::config_dir().map(|d| ConfigFile::optional(d.join(super::trust::USER_FILE)))
    }
}

impl CapabilitySource for ConfigFile {
    fn describe(&self) -> String {
        format!("`{}`", self.path.display())
    }

    fn apply(&self, b: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError> {
        if !self.required && !self.path.exists() {
            return Ok(());
        }
        b.sources.push(self.describe());
        load_config_file(&self.path, self.trust, b).map_err(CapabilitiesError::File)
    }

    fn names(&self, names: &mut CapabilityNames) -> Result<(), CapabilitiesError> {
        if !self.required && !self.path.exists() {
            return Ok(());
        }
        names.source(self.describe());
        config_file_names(&self.path, self.trust, names).map_err(CapabilitiesError::File)
    }
}

/// The environment: the capabilities file named by `CAMELEON_CAPABILITIES`, if set.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvSource;

impl CapabilitySource for EnvSource {
    fn describe(&self) -> String {
        format!("the file named by `{ENV_VAR}`")
    }

    fn apply(&self, b: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError> {
        match std::env::var_os(ENV_VAR) {
            Some(path) if !path.is_empty() => ConfigFile::new(PathBuf::from(path)).apply(b),
            _ => Ok(()),
        }
    }

    fn names(&self, names: &mut CapabilityNames) -> Result<(), CapabilitiesError> {
        match std::env::var_os(ENV_VAR) {
            Some(path) if !path.is_empty() => ConfigFile::new(PathBuf::from(path)).names(names),
            _ => Ok(()),
        }
    }
}

/// Tools the user grants on the command line (`run --grant TOOL`): under a net's `allow:` they
/// run unasked whatever their effects (docs/tools.md#effects-and-grants). Only a program
/// acting for the user adds this source.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    tools: Vec<String>,
    from: String,
}

impl Grants {
    /// Grants `tools`, described as `from` in messages (`--grant`).
    pub fn new<I, S>(tools: I, from: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Grants {
            tools: tools.into_iter().map(Into::into).collect(),
            from: from.into(),
        }
    }
}

impl CapabilitySource for Grants {
    fn describe(&self) -> String {
        self.from.clone()
    }

    fn apply(&self, b: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError> {
        for t in &self.tools {
            b.grant(t.clone(), self.from.clone());
        }
        Ok(())
    }

    fn names(&self, names: &mut CapabilityNames) -> Result<(), CapabilitiesError> {
        for t in &self.tools {
            names.grant(t);
        }
        Ok(())
    }
}

type Contribute = dyn Fn(&mut CapabilitiesBuilder) -> Result<(), String> + Send + Sync;

/// Capabilities given in code: a closure called at each build.
pub struct CodeSource {
    name: String,
    f: Box<Contribute>,
}

impl fmt::Debug for CodeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeSource")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl CodeSource {
    /// A source named `name` (for messages) calling `f`.
    pub fn new(
        name: impl Into<String>,
        f: impl Fn(&mut CapabilitiesBuilder) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        CodeSource {
            name: name.into(),
            f: Box::new(f),
        }
    }
}

impl CapabilitySource for CodeSource {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn apply(&self, b: &mut CapabilitiesBuilder) -> Result<(), CapabilitiesError> {
        (self.f)(b).map_err(|message| CapabilitiesError::Source {
            source_name: self.name.clone(),
            message,
        })
    }
}

/// Builds a [`Runtime`] from its sources.
#[derive(Debug, Default)]
pub struct RuntimeBuilder {
    sources: Vec<Arc<dyn CapabilitySource>>,
}

impl RuntimeBuilder {
    /// Adds a source; later sources override earlier ones, entry by entry.
    pub fn source(mut self, s: impl CapabilitySource + 'static) -> Self {
        self.sources.push(Arc::new(s));
        self
    }

    /// Adds a capabilities file that must exist.
    pub fn config_file(self, path: impl Into<PathBuf>) -> Self {
        self.source(ConfigFile::new(path))
    }

    /// The sources `cameleon run FILE.cm` uses: `capabilities` if given; else the user's own
    /// file ([`ConfigFile::user`]), then the file named by `CAMELEON_CAPABILITIES`, then
    /// `cameleon.yaml` beside the `.cm` file ([`ConfigFile::project`]: trusted only once the
    /// user recorded it with `cameleon trust`), each if present.
    pub fn for_cm_file(self, cm: &Path, capabilities: Option<&Path>) -> Self {
        self.for_dir(&crate::cm::folder_of(cm), capabilities)
    }

    /// As [`for_cm_file`](Self::for_cm_file), for a `.cm` file in folder `dir` (a resumed run
    /// knows its net's folder, not its file).
    pub fn for_dir(self, dir: &Path, capabilities: Option<&Path>) -> Self {
        match capabilities {
            Some(file) => self.config_file(file),
            None => {
                let b = match ConfigFile::user() {
                    Some(user) => self.source(user),
                    None => self,
                };
                b.source(EnvSource)
                    .source(ConfigFile::project(dir.join("cameleon.yaml")))
            }
        }
    }

    /// The names the sources define, read without building, starting or contacting anything:
    /// each capabilities file's entries (its syntax, keys, kinds and secrets checked, every
    /// problem located; the variables its `_env` keys name need not be set), then the built-in
    /// defaults and the program's tools. What `cameleon check` resolves a net's names against.
    ///
    /// ```
    /// use cameleon::capabilities::Runtime;
    /// use cameleon::operator::capability::Named;
    ///
    /// let names = Runtime::builder().names()?;
    /// assert!(names.has(Named::Chat, "default") && names.has(Named::Chat, "extractive"));
    /// assert!(!names.has(Named::Chat, "gpt-4o") && names.has(Named::Tool, "calc"));
    /// # Ok::<(), cameleon::capabilities::CapabilitiesError>(())
    /// ```
    pub fn names(&self) -> Result<CapabilityNames, CapabilitiesError> {
        let mut names = CapabilityNames::new();
        for s in &self.sources {
            s.names(&mut names)?;
        }
        names.add_defaults();
        Ok(names)
    }

    /// Builds generation 1.
    pub fn build(self) -> Result<Runtime, CapabilitiesError> {
        let first = assemble(&self.sources, 1)?;
        Ok(Runtime {
            sources: self.sources,
            current: RwLock::new(Arc::new(first)),
            reloading: Mutex::new(()),
        })
    }
}

fn assemble(
    sources: &[Arc<dyn CapabilitySource>],
    number: u64,
) -> Result<Generation, CapabilitiesError> {
    let mut b = CapabilitiesBuilder::new();
    for s in sources {
        s.apply(&mut b)?;
    }
    b.build(number)
}

/// The capability runtime: the sources, and the current generation, which runs pin when they
/// start (docs/capabilities.md).
pub struct Runtime {
    sources: Vec<Arc<dyn CapabilitySource>>,
    current: RwLock<Arc<Generation>>,
    /// Held while a reload builds, so two reloads give two numbers in order.
    reloading: Mutex<()>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("generation", &self.generation())
            .field("sources", &self.sources)
            .finish()
    }
}

impl Default for Runtime {
    /// No source: generation 1 holds the program's tools and the built-in defaults.
    fn default() -> Self {
        Runtime {
            sources: Vec::new(),
            current: RwLock::new(Arc::new(CapabilitiesBuilder::new().build_without_nets(1))),
            reloading: Mutex::new(()),
        }
    }
}

impl Runtime {
    /// A runtime built from sources.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// The current generation.
    pub fn current(&self) -> Arc<Generation> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The current generation's number.
    pub fn generation(&self) -> u64 {
        self.current().number()
    }

    /// Asks the sources again and makes the result the next generation, for runs started from
    /// now on; runs in flight keep theirs. On error the current generation stays.
    pub fn reload(&self) -> Result<Arc<Generation>, CapabilitiesError> {
        let _one_at_a_time = self
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let next = self.current().number() + 1;
        let g = Arc::new(assemble(&self.sources, next)?);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&g);
        Ok(g)
    }

    /// Pins the current generation for a run of `net`: its capabilities, a tool gate with
    /// the net's `tools:` policy, file tools confined to `base_dir` (the `.cm` file's folder),
    /// and a meter with the net's budget (`config: budget:`, docs/semantics.md §4.7).
    pub fn pin(&self, net: &Net, base_dir: impl Into<PathBuf>) -> Arc<RunCapabilities> {
        let caps = self.current().for_run(net.tool_policy(), base_dir);
        caps.run_meter().set_limit(net.config().budget);
        caps
    }

    /// An engine for `net` with the current generation pinned (see [`pin`](Self::pin)).
    pub fn cvm(&self, net: Net, base_dir: impl Into<PathBuf>) -> CvmBuilder {
        let caps = self.pin(&net, base_dir);
        Cvm::builder(net).capabilities(caps)
    }
}
