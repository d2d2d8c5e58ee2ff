//! What a firing on a satellite sees: the satellite's capability generation, and a tool gate
//! that lets through only the tools the satellite hosts — the request's `tools` policy can
//! narrow that list, never widen it.

use std::fmt;
use std::sync::Arc;

use cameleon::OpError;
use cameleon::capabilities::RunCapabilities;
use cameleon::operator::capability::{
    CapFuture, Capabilities, ChatModel, Embedder, Memory, Telemetry, ToolAccess, ToolCall,
    ToolManifest, ToolResult,
};

/// A run's capabilities on a satellite, its tools cut down to the hosted ones.
pub(super) struct SatelliteCaps {
    inner: Arc<RunCapabilities>,
    tools: HostedTools,
}

impl SatelliteCaps {
    /// `inner` (whose gate applies the request's policy), limited to `hosted` tools of
    /// satellite `satellite`.
    pub(super) fn new(
        inner: Arc<RunCapabilities>,
        satellite: &str,
        hosted: &[String],
        approve: &[String],
    ) -> Self {
        SatelliteCaps {
            tools: HostedTools {
                inner: Arc::clone(&inner),
                satellite: satellite.to_owned(),
                hosted: hosted.to_vec(),
                approve: approve.to_vec(),
            },
            inner,
        }
    }
}

impl fmt::Debug for SatelliteCaps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SatelliteCaps")
            .field("inner", &self.inner)
            .field("hosted", &self.tools.hosted)
            .finish()
    }
}

impl Capabilities for SatelliteCaps {
    fn generation(&self) -> u64 {
        self.inner.generation()
    }

    fn chat(&self, name: &str) -> Result<Arc<dyn ChatModel>, OpError> {
        self.inner.chat(name)
    }

    fn embedder(&self, name: &str) -> Result<Arc<dyn Embedder>, OpError> {
        self.inner.embedder(name)
    }

    fn memory(&self, name: &str) -> Result<Arc<dyn Memory>, OpError> {
        self.inner.memory(name)
    }

    fn tools(&self) -> &dyn ToolAccess {
        &self.tools
    }

    fn observer(&self) -> &dyn Telemetry {
        self.inner.observer()
    }
}

/// The gate of a firing on a satellite: a tool the satellite does not host is `denied`, saying
/// so; a hosted one goes through the run's policy (sent with the request) as usual.
struct HostedTools {
    inner: Arc<RunCapabilities>,
    satellite: String,
    hosted: Vec<String>,
    /// Those run only with an approval obtained at the run.
    approve: Vec<String>,
}

impl fmt::Debug for HostedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.hosted).finish()
    }
}

impl HostedTools {
    fn hosts(&self, name: &str) -> bool {
        self.hosted.iter().any(|t| t == name)
    }

    /// A refusal, when the satellite will not run this call: a tool it does not host, or one it
    /// runs only with an approval the call lacks.
    fn refuse(&self, call: &ToolCall) -> Option<ToolResult> {
        if !self.hosts(&call.tool) {
            return Some(self.not_hosted(&call.tool));
        }
        if call.approved_by.is_none() && self.approve.contains(&call.tool) {
            return Some(needs_approval(&self.satellite, &call.tool));
        }
        None
    }

    fn not_hosted(&self, name: &str) -> ToolResult {
        let mut r = ToolResult::denied(
            name,
            format!(
                "tool `{name}` is denied: satellite `{}` does not host it (it hosts {}); a satellite runs only the tools it was started with (`--tools`)",
                self.satellite,
                if self.hosted.is_empty() {
                    "no tool".to_owned()
                } else {
                    self.hosted.join(", ")
                }
            ),
        );
        r.meta.origin = format!("satellite:{}", self.satellite);
        r
    }
}

impl ToolAccess for HostedTools {
    // Any tool of the program has a manifest here, so a firing that names one the satellite
    // does not host gets a handle whose calls are denied saying why.
    fn manifest(&self, name: &str) -> Option<ToolManifest> {
        self.inner.gate().manifest(name)
    }

    fn names(&self) -> Vec<String> {
        self.hosted.clone()
    }

    fn call<'a>(&'a self, call: ToolCall) -> CapFuture<'a, ToolResult> {
        if let Some(r) = self.refuse(&call) {
            return Box::pin(async move { r });
        }
        Box::pin(self.inner.gate().call(call))
    }

    fn call_blocking(&self, call: ToolCall) -> ToolResult {
        if let Some(r) = self.refuse(&call) {
            return r;
        }
        self.inner.gate().call_blocking(call)
    }
}

/// The refusal of a tool a satellite runs only with an approval obtained at the run.
pub(super) fn needs_approval(satellite: &str, tool: &str) -> ToolResult {
    let mut r = ToolResult::denied(
        tool,
        format!(
            "tool `{tool}` is denied: satellite `{satellite}` runs it only with a person's approval obtained by the run (it was started with `--approve {tool}`); list it under the net's `tools: approve:`"
        ),
    );
    r.meta.origin = format!("satellite:{satellite}");
    r
}
