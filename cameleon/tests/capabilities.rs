//! Capabilities per generation: a run pins its generation and keeps it through a reload; a
//! missing capability is an error that says how to configure it; capabilities files are
//! checked like `.cm` files; the engine's `tracing` spans.

use std::sync::{Arc, Mutex};

use cameleon::capabilities::{
    Build, CodeSource, ConfigFile, KindConfig, KindError, ProviderKind, Runtime, load_config_str,
};
use cameleon::cm::CmProblemKind;
use cameleon::operator::capability::{
    CapFuture, CapabilityError, ChatModel, ChatReply, ChatRequest,
};
use cameleon::ops::{Sink, Source};
use cameleon::prelude::*;

/// A chat model answering `PREFIX: PROMPT`.
#[derive(Debug)]
struct Echo(String);

impl ChatModel for Echo {
    fn kind(&self) -> &str {
        "test_echo"
    }
    fn chat<'a>(&'a self, r: &'a ChatRequest) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        let prompt = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let text = format!("{}: {prompt}", self.0);
        Box::pin(async move {
            Ok(ChatReply {
                text,
                ..ChatReply::default()
            })
        })
    }
}

fn echo_kind(cfg: &KindConfig) -> Result<Arc<dyn ChatModel>, KindError> {
    match cfg.str("prefix") {
        Some(p) => Ok(Arc::new(Echo(p.to_owned()))),
        None => Err(KindError::new("missing `prefix`").with_hint("add `prefix: …`")),
    }
}

cameleon::submit_provider_kind!(ProviderKind {
    kind: "test_echo",
    description: "answers `PREFIX: PROMPT`",
    is_default: false,
    build: Build::Chat(echo_kind),
});

/// Asks chat model `model` about `in_prompt`; emits the answer and the generation it used.
#[operator(id = "test_ask_model", label = "Ask", family = behavioral)]
struct AskModel {
    #[param(default = "default")]
    model: String,
    #[input]
    in_prompt: In<DataString>,
    #[output]
    out_text: Out<DataString>,
}

impl Run for AskModel {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let prompt = cx.get(Self::in_prompt)?.0.clone();
        let caps = cx.capabilities();
        let model = caps.chat(&self.model)?;
        let reply = cameleon::runtime::block_on(model.chat(&ChatRequest::prompt(prompt)))
            .map_err(OpError::from_err)?;
        let text = format!("{} (generation {})", reply.text, caps.generation());
        cx.emit(Self::out_text, DataString(text));
        Ok(())
    }
}

fn ask_net(model: &str) -> Net {
    let mut b = Net::builder("ask");
    b.add("prompt", Source::new("hi"));
    b.add(
        "ask",
        AskModel {
            model: model.into(),
        },
    );
    b.add("out", Sink::new());
    b.connect("prompt.out_data", "ask.in_prompt")
        .connect("ask.out_text", "out.in_data");
    b.build().unwrap()
}

#[test]
fn a_run_keeps_its_generation_through_a_reload_and_the_next_run_sees_the_new_one() {
    let dir = test_support::TempDir::new("caps-reload");
    let file = dir.join("cameleon.yaml");
    std::fs::write(&file, "chat:\n  default: {kind: test_echo, prefix: one}\n").unwrap();
    let rt = Runtime::builder().config_file(&file).build().unwrap();
    assert_eq!(rt.generation(), 1);

    // A run starts on generation 1 and fires its first step…
    let mut first = rt.cvm(ask_net("default"), &dir).build();
    first.step().unwrap();
    // …the configuration changes and is reloaded mid-run…
    std::fs::write(&file, "chat:\n  default: {kind: test_echo, prefix: two}\n").unwrap();
    let g2 = rt.reload().unwrap();
    assert_eq!(g2.number(), 2);
    assert_eq!(rt.generation(), 2);
    // …and the run in flight finishes on generation 1.
    assert_eq!(first.run().unwrap(), EndState::Completed);
    assert_eq!(first.generation(), 1);
    assert_eq!(first.received("out")[0].to_json(), "one: hi (generation 1)");
    // The next run sees generation 2.
    let mut second = rt.cvm(ask_net("default"), &dir).build();
    assert_eq!(second.run().unwrap(), EndState::Completed);
    assert_eq!(
        second.received("out")[0].to_json(),
        "two: hi (generation 2)"
    );
}

#[test]
fn a_failed_reload_keeps_the_current_generation() {
    let dir = test_support::TempDir::new("caps-bad-reload");
    let file = dir.join("cameleon.yaml");
    std::fs::write(&file, "chat:\n  default: {kind: test_echo, prefix: one}\n").unwrap();
    let rt = Runtime::builder().config_file(&file).build().unwrap();
    std::fs::write(&file, "chat:\n  default: {kind: test_ecco}\n").unwrap();
    assert!(rt.reload().is_err());
    assert_eq!(rt.generation(), 1);
    let mut cvm = rt.cvm(ask_net("default"), &dir).build();
    cvm.run().unwrap();
    assert_eq!(cvm.received("out")[0].to_json(), "one: hi (generation 1)");
}

#[test]
fn code_sources_contribute_and_are_asked_again_at_each_reload() {
    let prefix = Arc::new(Mutex::new("first".to_owned()));
    let p = Arc::clone(&prefix);
    let rt = Runtime::builder()
        .source(CodeSource::new("code", move |b| {
            b.chat("default", Arc::new(Echo(p.lock().unwrap().clone())));
            Ok(())
        }))
        .build()
        .unwrap();
    *prefix.lock().unwrap() = "second".into();
    let mut before = rt.cvm(ask_net("default"), ".").build();
    rt.reload().unwrap();
    let mut after = rt.cvm(ask_net("default"), ".").build();
    before.run().unwrap();
    after.run().unwrap();
    assert_eq!(
        before.received("out")[0].to_json(),
        "first: hi (generation 1)"
    );
    assert_eq!(
        after.received("out")[0].to_json(),
        "second: hi (generation 2)"
    );
}

#[test]
fn a_missing_model_is_an_error_naming_it_the_generation_and_where_to_configure_it() {
    let dir = test_support::TempDir::new("caps-missing");
    let file = dir.join("cameleon.yaml");
    std::fs::write(&file, "chat:\n  default: {kind: test_echo, prefix: x}\n").unwrap();
    let rt = Runtime::builder().config_file(&file).build().unwrap();
    let mut cvm = rt.cvm(ask_net("fast"), &dir).build();
    match cvm.run().unwrap() {
        EndState::Error { op, error } => {
            assert_eq!(op, "ask");
            assert!(
                error.contains("no chat model `fast` in capability generation 1"),
                "{error}"
            );
            assert!(error.contains("it has `default`"), "{error}");
            assert!(error.contains("under `chat:`"), "{error}");
            assert!(error.contains("cameleon.yaml"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    // Without any capabilities at all (generation 0), only the offline `default`s exist, and
    // the error says how to give more.
    let mut bare = Cvm::new(ask_net("default"));
    assert_eq!(bare.run().unwrap(), EndState::Completed);
    let mut bare = Cvm::new(ask_net("fast"));
    match bare.run().unwrap() {
        EndState::Error { error, .. } => {
            assert!(
                error.contains("generation 0") && error.contains("--capabilities"),
                "{error}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_optional_file_that_is_absent_adds_nothing() {
    let rt = Runtime::builder()
        .source(ConfigFile::optional("/nonexistent/cameleon.yaml"))
        .build()
        .unwrap();
    // Only the built-in default (`extractive`), also under its kind's name.
    assert_eq!(
        rt.current().chat_names().collect::<Vec<_>>(),
        ["default", "extractive"]
    );
}

// ---------------------------------------------------------------------------------------------
// Capabilities files: every problem located, like a `.cm` file's

#[test]
fn an_unknown_kind_is_located_with_a_did_you_mean() {
    let e = load_config_str(
        "caps.yaml",
        "chat:\n  default: {kind: test_ecco, prefix: a}\n",
    )
    .unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.kind, CmProblemKind::UnknownKind);
    assert_eq!((p.line, p.column), (2, 19));
    assert_eq!(p.hint.as_deref(), Some("did you mean `test_echo`?"));
    assert_eq!(e.document(), "capabilities file");
    assert!(
        e.to_string()
            .starts_with("caps.yaml:2:19: unknown chat model kind `test_ecco`")
    );
}

#[test]
fn a_missing_key_variable_is_located_and_never_shows_a_value() {
    let text = "chat:\n  default:\n    kind: test_echo\n    prefix: a\n    api_key_env: CAMELEON_TEST_SURELY_UNSET_VAR\n";
    let e = load_config_str("caps.yaml", text).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.kind, CmProblemKind::Env);
    assert_eq!((p.line, p.column), (5, 18));
    assert!(
        p.message.contains("`CAMELEON_TEST_SURELY_UNSET_VAR`"),
        "{}",
        p.message
    );
    assert!(
        p.hint
            .as_deref()
            .unwrap()
            .contains("export CAMELEON_TEST_SURELY_UNSET_VAR")
    );
}

#[test]
fn secrets_written_in_the_file_are_refused() {
    let e = load_config_str(
        "caps.yaml",
        "chat:\n  default: {kind: test_echo, prefix: a, api_key: sk-123}\n",
    )
    .unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.line, 2);
    assert!(p.message.contains("would write a secret"), "{}", p.message);
    assert!(p.hint.as_deref().unwrap().contains("api_key_env"));
}

#[test]
fn every_problem_of_a_file_is_reported_at_once() {
    let text = "chats:\n  default: {kind: x}\nembedders:\n  default: {dim: 3}\nmemories:\n  m: {kind: nope}\n";
    let e = load_config_str("caps.yaml", text).unwrap_err();
    let lines: Vec<usize> = e.problems().iter().map(|p| p.line).collect();
    assert_eq!(lines, [1, 4, 6], "{e}");
    assert_eq!(
        e.problems()[0].hint.as_deref(),
        Some("did you mean `chat`?")
    );
    assert!(e.problems()[1].message.contains("has no `kind`"));
    assert!(
        e.problems()[2]
            .hint
            .as_deref()
            .unwrap()
            .contains("the memory kinds of this build are: flat")
    );
}

#[test]
fn a_kind_refusing_its_settings_is_located_at_the_entry() {
    let e = load_config_str("caps.yaml", "chat:\n  default: {kind: test_echo}\n").unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(p.line, 2);
    assert!(
        p.message
            .contains("chat model `default` (test_echo): missing `prefix`")
    );
}

// ---------------------------------------------------------------------------------------------
// Spans

/// A writer into a shared buffer, for a fmt subscriber.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn runs_steps_and_firings_are_tracing_spans_with_their_facts() {
    let rt = Runtime::builder()
        .source(CodeSource::new("code", |b| {
            b.chat("default", Arc::new(Echo("e".into())));
            Ok(())
        }))
        .build()
        .unwrap();
    // The other tests of this binary run engines on other threads meanwhile, with no
    // subscriber: one of them may register the engine's callsites while this subscriber is
    // being registered and cache "never" for them. `rebuild_interest_cache` below recomputes
    // every callsite's interest, but a registration already under way on another thread can
    // still store its "never" after it (`tracing`'s interest cache is global). That race shows
    // as no span at all, not even the run's: only then is the run tried again (at most 3
    // times); a missing span of one kind, or none on every try, still fails below.
    let mut text = String::new();
    for _ in 0..3 {
        let buf = Buffer::default();
        let w = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || w.clone())
            .with_ansi(false)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::callsite::rebuild_interest_cache();
            let mut cvm = rt.cvm(ask_net("default"), ".").run_id("run-42").build();
            assert_eq!(cvm.run().unwrap(), EndState::Completed);
        });
        text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        if !text.is_empty() {
            break;
        }
    }
    let firing = text
        .lines()
        .find(|l| l.contains("op=ask"))
        .unwrap_or_else(|| panic!("no span of the firing of `ask`:\n{text}"));
    for fact in [
        "run{run=run-42 net=ask mode=sequential generation=1}",
        "step{step=2 ops=ask}",
        "firing{run=run-42 step=2 op=ask type=test_ask_model generation=1 attempts=1 duration_ms=",
    ] {
        assert!(firing.contains(fact), "missing `{fact}` in {firing}");
    }
    assert!(text.contains("end=\"COMPLETED\""), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(":firing{")).count(),
        3,
        "{text}"
    );
}
