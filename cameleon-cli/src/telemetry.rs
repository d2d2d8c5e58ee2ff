//! What the process's `tracing` spans go to: `--log` (a fmt printer on stderr) and `--otlp`
//! (an OpenTelemetry exporter, OTLP over HTTP/protobuf, to the collector the user names). The
//! library emits `tracing` spans only (run, step, firing; `chat` and `execute_tool` named after
//! the OpenTelemetry GenAI conventions); this module is the one place that knows OpenTelemetry.
//! docs/cli.md (`--otlp`) and docs/security.md say what leaves the machine.

use std::collections::HashMap;
use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The environment variable naming the collector when `--otlp` is not given (the
/// OpenTelemetry SDKs' own).
pub(crate) const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// What the spans exported over OTLP are filtered to: the engine's, the models' and the
/// tools' (every target of the `cameleon` crates).
const EXPORTED: &str = "cameleon=info";

/// The exporter, while the process runs: dropping it sends what is left and stops it.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // Spans of the run still queued are sent now; a collector that went away only costs
        // its timeout.
        let _ = self.provider.force_flush();
        let _ = self.provider.shutdown();
    }
}

/// The URL spans are POSTed to, from `--otlp URL` or [`ENDPOINT_ENV`]: a base URL (nothing
/// after the host, as the variable holds by the OpenTelemetry convention) gets `/v1/traces`;
/// a URL with a path is used as it is. An error for anything but an http(s) URL.
pub(crate) fn traces_url(endpoint: &str) -> Result<String, String> {
    let e = endpoint.trim();
    let rest = e
        .strip_prefix("http://")
        .or_else(|| e.strip_prefix("https://"))
        .ok_or_else(|| {
            format!(
                "--otlp `{e}` is not an http(s) URL; write the collector's OTLP/HTTP address, \
                 like `http://127.0.0.1:4318`"
            )
        })?;
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("--otlp `{e}` names no host"));
    }
    match rest.find('/') {
        None => Ok(format!("{e}/v1/traces")),
        Some(i) if rest[i..] == *"/" => Ok(format!("{}/v1/traces", e.trim_end_matches('/'))),
        Some(_) => Ok(e.to_owned()),
    }
}

/// `--otlp-header NAME=VAR`: header NAME sent to the collector with the value of environment
/// variable VAR (read now; the value appears in no message). An error names what is wrong.
pub(crate) fn headers(specs: &[String]) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for spec in specs {
        let (name, var) = spec.split_once('=').ok_or_else(|| {
            format!("--otlp-header `{spec}`: write NAME=VAR (the header and the environment variable holding its value)")
        })?;
        let (name, var) = (name.trim(), var.trim());
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "--otlp-header `{spec}`: `{name}` is not a header name"
            ));
        }
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                out.insert(name.to_owned(), v.trim().to_owned());
            }
            _ => {
                return Err(format!(
                    "--otlp-header {name}={var}: the environment variable `{var}` is not set; export it with the header's value"
                ));
            }
        }
    }
    Ok(out)
}

/// Installs the process's subscriber: the fmt printer when `log` (a `tracing` filter) is
/// given, the OTLP exporter when `otlp` (the traces URL) is. Nothing when neither. A second
/// call (a second command in one test process) keeps the first subscriber.
pub(crate) fn start(
    log: Option<&str>,
    otlp: Option<(&str, HashMap<String, String>)>,
) -> Result<Option<Exporter>, String> {
    let fmt = log.map(|filter| {
        let filter = tracing_subscriber::EnvFilter::try_new(filter)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_filter(filter)
    });
    let (otel, exporter) = match otlp {
        Some((url, headers)) => {
            // reqwest needs a TLS provider installed before it builds a client (an https
            // collector); another thread installing one first is fine.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            let spans = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(url)
                .with_headers(headers)
                .build()
                .map_err(|e| format!("--otlp `{url}`: cannot set up the exporter: {e}"))?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(spans)
                .with_resource(
                    Resource::builder()
                        .with_service_name("cameleon")
                        .with_attribute(opentelemetry::KeyValue::new(
                            "service.version",
                            env!("CARGO_PKG_VERSION"),
                        ))
                        .build(),
                )
                .build();
            let layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("cameleon"))
                .with_filter(tracing_subscriber::EnvFilter::new(EXPORTED));
            (Some(layer), Some(Exporter { provider }))
        }
        None => (None, None),
    };
    if fmt.is_some() || otel.is_some() {
        let _ = tracing_subscriber::registry()
            .with(fmt)
            .with(otel)
            .try_init();
    }
    Ok(exporter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_traces_path_and_a_full_one_is_kept() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otel.example/").unwrap(),
            "https://otel.example/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/custom/traces").unwrap(),
            "http://c:4318/custom/traces"
        );
        assert!(traces_url("grpc://c:4317").unwrap_err().contains("http(s)"));
        assert!(traces_url("http://").is_err());
    }

    #[test]
    fn a_header_takes_its_value_from_the_variable_it_names() {
        assert!(headers(&["x-key".into()]).unwrap_err().contains("NAME=VAR"));
        let e = headers(&["x-key=CAMELEON_TEST_SURELY_UNSET_VAR".into()]).unwrap_err();
        assert!(
            e.contains("CAMELEON_TEST_SURELY_UNSET_VAR") && e.contains("not set"),
            "{e}"
        );
        assert!(headers(&["bad name=PATH".into()]).is_err());
        let h = headers(&["x-path=PATH".into()]).unwrap();
        assert_eq!(h.len(), 1);
    }
}
