//! The built-in provider kinds (the `models` module's providers): chat `extractive` and
//! `openai`, embedders `hash` and `openai`, memory `flat`. The offline ones are the defaults:
//! with nothing configured, `default` chat is `extractive`, `default` embedder is `hash` and
//! `default` memory is `flat`. Without the `openai` feature the `openai` kinds are still known,
//! and refused with a message naming the feature.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::kinds::{Build, KindConfig, KindError, ProviderKind};
use crate::models::{Extractive, ExtractiveConfig, FlatMemory, HashConfig, HashEmbedder};
#[cfg(feature = "openai")]
use crate::models::{OpenAiChat, OpenAiConfig, OpenAiEmbedder, StructuredOutput};
use crate::operator::capability::{ChatModel, Embedder, Memory};

/// The settings of an `openai` embedder.
#[cfg(feature = "openai")]
const OPENAI_KEYS: &[&str] = &[
    "base_url",
    "model",
    "api_key_env",
    "timeout_ms",
    "connect_timeout_ms",
    "max_retries",
    "backoff_ms",
    "max_backoff_ms",
    "batch_size",
    "dim",
];

/// Refuses a `structured_output` that names no form, at its value.
#[cfg(feature = "openai")]
fn check_structured_output(cfg: &KindConfig) -> Result<(), KindError> {
    let Some(v) = cfg.settings.get("structured_output") else {
        return Ok(());
    };
    let forms = StructuredOutput::ALL.map(StructuredOutput::as_str);
    if v.as_str().and_then(StructuredOutput::parse).is_some() {
        return Ok(());
    }
    let hint = match v.as_str().and_then(|s| crate::util::did_you_mean(s, forms)) {
        Some(s) => format!("did you mean `{s}`?"),
        None => {
            "leave it out to try json_schema, then json_object, then the schema in the prompt, \
                 keeping the first form the server takes"
                .to_owned()
        }
    };
    Err(KindError::at(
        "structured_output",
        format!(
            "`structured_output` is one of {}, not {v}",
            forms.join(", ")
        ),
    )
    .with_hint(hint))
}

/// `cfg`'s settings read as a `T`, after checking that each is one of `known` (an unknown one
/// is refused at its key, with a suggestion).
fn settings<T: DeserializeOwned>(cfg: &KindConfig, known: &[&str]) -> Result<T, KindError> {
    for key in cfg.settings.keys() {
        if !known.contains(&key.as_str()) {
            let hint = match crate::util::did_you_mean(key, known.iter().copied()) {
                Some(s) => format!("did you mean `{s}`?"),
                None if known.is_empty() => format!("kind `{}` has no settings", cfg.kind),
                None => format!(
                    "the settings of kind `{}` are: {}",
                    cfg.kind,
                    known.join(", ")
                ),
            };
            return Err(
                KindError::at(key.clone(), format!("unknown setting `{key}`")).with_hint(hint),
            );
        }
    }
    serde_json::from_value(serde_json::Value::Object(cfg.settings.clone())).map_err(|e| {
        KindError::new(format!("invalid settings: {e}")).with_hint(format!(
            "the settings of kind `{}` are: {}",
            cfg.kind,
            known.join(", ")
        ))
    })
}

#[cfg(feature = "openai")]
fn openai_config(cfg: &KindConfig, keys: &[&str]) -> Result<OpenAiConfig, KindError> {
    if !cfg.settings.contains_key("model") {
        return Err(
            KindError::new("an `openai` entry needs a `model`".to_owned()).with_hint(
                "name the endpoint's model, like `model: llama3.2` (Ollama) or `model: gpt-4o-mini`",
            ),
        );
    }
    let c: OpenAiConfig = settings(cfg, keys)?;
    c.check()
        .map_err(|(key, what, hint)| KindError::at(key, what).with_hint(hint))?;
    Ok(c)
}

#[cfg(feature = "openai")]
fn label(cfg: &KindConfig, what: &str) -> String {
    format!("{what} `{}`", cfg.name)
}

#[cfg(feature = "openai")]
fn openai_chat(cfg: &KindConfig) -> Result<Arc<dyn ChatModel>, KindError> {
    check_structured_output(cfg)?;
    // An embedder's settings, and `structured_output`.
    let keys: Vec<&str> = OPENAI_KEYS
        .iter()
        .copied()
        .chain(["structured_output"])
        .collect();
    let c = openai_config(cfg, &keys)?;
    let m =
        OpenAiChat::new(&c, &label(cfg, "chat model")).map_err(|e| KindError::new(e.message))?;
    Ok(Arc::new(m))
}

#[cfg(feature = "openai")]
fn openai_embedder(cfg: &KindConfig) -> Result<Arc<dyn Embedder>, KindError> {
    let c = openai_config(cfg, OPENAI_KEYS)?;
    let e =
        OpenAiEmbedder::new(&c, &label(cfg, "embedder")).map_err(|e| KindError::new(e.message))?;
    Ok(Arc::new(e))
}

/// Why an `openai` entry cannot be built without the `openai` feature.
#[cfg(not(feature = "openai"))]
fn no_openai() -> KindError {
    KindError::new("this build of Caméléon has no OpenAI-compatible providers".to_owned())
        .with_hint("build it with the `openai` feature of the `cameleon` crate (on by default)")
}

#[cfg(not(feature = "openai"))]
fn openai_chat(_: &KindConfig) -> Result<Arc<dyn ChatModel>, KindError> {
    Err(no_openai())
}

#[cfg(not(feature = "openai"))]
fn openai_embedder(_: &KindConfig) -> Result<Arc<dyn Embedder>, KindError> {
    Err(no_openai())
}

fn extractive(cfg: &KindConfig) -> Result<Arc<dyn ChatModel>, KindError> {
    let c: ExtractiveConfig = settings(cfg, &["sentences"])?;
    if c.sentences == 0 {
        return Err(KindError::at("sentences", "`sentences` must be at least 1"));
    }
    Ok(Arc::new(Extractive::from_config(&c)))
}

fn hash(cfg: &KindConfig) -> Result<Arc<dyn Embedder>, KindError> {
    let c: HashConfig = settings(cfg, &["dim"])?;
    if c.dim == 0 {
        return Err(KindError::at("dim", "`dim` must be at least 1")
            .with_hint("384 is the default; more buckets mean fewer collisions"));
    }
    Ok(Arc::new(HashEmbedder::from_config(&c)))
}

fn flat(cfg: &KindConfig) -> Result<Arc<dyn Memory>, KindError> {
    let _: crate::models::FlatConfig = settings(cfg, &[])?;
    Ok(Arc::new(FlatMemory::new()))
}

crate::submit_provider_kind!(ProviderKind {
    kind: "extractive",
    description: "offline, deterministic, not generative: answers with the context sentences most relevant to the prompt (BM25)",
    is_default: true,
    build: Build::Chat(extractive),
});

crate::submit_provider_kind!(ProviderKind {
    kind: "openai",
    description: "any OpenAI-compatible endpoint's /chat/completions (OpenAI, Ollama, vLLM, llama.cpp server)",
    is_default: false,
    build: Build::Chat(openai_chat),
});

crate::submit_provider_kind!(ProviderKind {
    kind: "hash",
    description: "offline, deterministic: signed feature hashing of words and word pairs into `dim` buckets (default 384), L2-normalised",
    is_default: true,
    build: Build::Embedder(hash),
});

crate::submit_provider_kind!(ProviderKind {
    kind: "openai",
    description: "any OpenAI-compatible endpoint's /embeddings",
    is_default: false,
    build: Build::Embedder(openai_embedder),
});

crate::submit_provider_kind!(ProviderKind {
    kind: "flat",
    description: "exact cosine search, in process; what index firings wrote is journaled with them, so a resumed run finds it",
    is_default: true,
    build: Build::Memory(flat),
});

// Generation 0 (an engine built without capabilities, `Cvm::new`) offers the same offline
// defaults, built the way an entry with no settings is.
inventory::submit!(crate::operator::capability::OfflineDefaults {
    chat: || Arc::new(Extractive::from_config(&ExtractiveConfig::default())),
    chat_kind: "extractive",
    embedder: || Arc::new(HashEmbedder::from_config(&HashConfig::default())),
    embedder_kind: "hash",
    memory: || Arc::new(FlatMemory::new()),
});

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(not(feature = "openai"))]
    fn without_the_feature_an_openai_entry_is_refused_naming_it() {
        let e = crate::capabilities::load_config_str(
            "caps.yaml",
            "chat:\n  default: {kind: openai, model: m}\nembedders:\n  default: {kind: openai, model: e}\n",
        )
        .unwrap_err();
        assert_eq!(e.problems().len(), 2, "{e}");
        for p in e.problems() {
            assert!(
                p.message.contains("no OpenAI-compatible providers"),
                "{p:?}"
            );
            assert!(
                p.hint.as_deref().unwrap_or("").contains("`openai` feature"),
                "{p:?}"
            );
        }
    }

    #[test]
    #[cfg(feature = "openai")]
    fn with_the_feature_an_openai_entry_is_read() {
        crate::capabilities::load_config_str(
            "caps.yaml",
            "chat:\n  default: {kind: openai, model: m}\n",
        )
        .unwrap();
    }
}
