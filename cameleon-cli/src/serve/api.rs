//! The HTTP side of `serve`: the page, the JSON API, the event stream, and the checks every
//! request goes through (token, JSON content type).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use serde_json::{Value as Json, json};
use tokio::sync::broadcast::error::RecvError;
use tower_http::set_header::SetResponseHeaderLayer;

use super::Shared;
use super::session::{Refused, Session};

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// Steps a run does per hold of the engine's lock, between checks of Pause.
const RUN_BATCH: usize = 200;
/// Longest a run holds the engine's lock at once.
const RUN_SLICE: Duration = Duration::from_millis(15);

/// What every handler gets: the shared session and channels.
type App = Arc<Shared>;

/// Every route of the server.
pub(crate) fn router(shared: App) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/page.js", get(script))
        .route("/page.css", get(style))
        .route("/api/state", get(state))
        .route("/api/svg", get(svg))
        .route("/api/history", get(history))
        .route("/api/source", get(source))
        .route("/api/events", get(events))
        .route("/api/step", post(step))
        .route("/api/back", post(back))
        .route("/api/run", post(run))
        .route("/api/pause", post(pause))
        .route("/api/reset", post(reset))
        .route("/api/refire", post(refire))
        .route("/api/goto", post(goto))
        .route("/api/provide/{op}", post(provide))
        .route("/api/check", post(check))
        .route("/api/save", post(save))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            guard,
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
        ))
        .with_state(shared)
}

/// A JSON error: `{"error": message}` with `status`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

fn refused(r: Refused) -> Response {
    error(
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST),
        r.message,
    )
}

/// Equal, in time that depends only on the lengths: the token check must not tell how much of
/// a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token a request carries: `Authorization: Bearer T`, else `?token=T`.
fn token_of(req: &Request) -> Option<String> {
    if let Some(v) = req.headers().get(header::AUTHORIZATION)
        && let Ok(v) = v.to_str()
        && let Some(t) = v.strip_prefix("Bearer ")
    {
        return Some(t.trim().to_owned());
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_owned())
    })
}

/// Checks every request: the token (when the server has one), and that a POST says its body
/// is JSON.
async fn guard(State(s): State<App>, req: Request, next: Next) -> Response {
    if let Some(expected) = &s.token {
        let ok = token_of(&req).is_some_and(|t| same_secret(t.as_bytes(), expected.as_bytes()));
        if !ok {
            return error(
                StatusCode::UNAUTHORIZED,
                "missing or wrong token: send `Authorization: Bearer T`, or open the page with `?token=T`",
            );
        }
    }
    if req.method() == Method::POST {
        let json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "POST requests must send `Content-Type: application/json`",
            );
        }
    }
    next.run(req).await
}

async fn not_found(req: Request) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("no route {} {}", req.method(), req.uri().path()),
    )
}

fn text(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    text("text/html; charset=utf-8", PAGE)
}

async fn script() -> Response {
    text("text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> Response {
    text("text/css; charset=utf-8", STYLE)
}

async fn state(State(s): State<App>) -> Response {
    axum::Json(s.lock().state_json()).into_response()
}

async fn svg(State(s): State<App>) -> Response {
    let session = s.lock();
    match session.cvm.as_ref() {
        Some(cvm) => (
            [(header::CONTENT_TYPE, "image/svg+xml")],
            cameleon::export::svg(cvm.net()),
        )
            .into_response(),
        // Not a valid net yet: what could be read of it, marked as a sketch.
        None => match session.sketch() {
            Some(svg) => (
                [
                    (header::CONTENT_TYPE, "image/svg+xml"),
                    (header::HeaderName::from_static("x-cameleon-sketch"), "1"),
                ],
                svg,
            )
                .into_response(),
            None => error(
                StatusCode::CONFLICT,
                "the served file is not readable as a net: there is nothing to draw yet",
            ),
        },
    }
}

#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<usize>,
}

async fn history(
    State(s): State<App>,
    q: Result<Query<HistoryQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let limit = match q {
        Ok(Query(q)) => q.limit.unwrap_or(500),
        Err(e) => return error(StatusCode::BAD_REQUEST, e.body_text()),
    };
    axum::Json(s.lock().history_json(limit)).into_response()
}

async fn source(State(s): State<App>) -> Response {
    let session = s.lock();
    axum::Json(json!({
        "file": session.path.display().to_string(),
        "text": session.text,
        "problems": session.problems,
    }))
    .into_response()
}

/// The event stream: every message the flusher sends, to every subscriber; a subscriber that
/// falls behind skips to the next state.
async fn events(State(s): State<App>) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let rx = s.tx.subscribe();
    s.dirty.store(true, Ordering::SeqCst); // a new subscriber gets the state at the next flush
    let stream = stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(batch) => {
                    let items: Vec<Result<SseEvent, Infallible>> = batch
                        .iter()
                        .map(|m| {
                            let e = SseEvent::default().data(m.data.clone());
                            Ok(match m.name {
                                Some(n) => e.event(n),
                                None => e,
                            })
                        })
                        .collect();
                    return Some((stream::iter(items), rx));
                }
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    use futures_util::StreamExt as _;
    Sse::new(stream.flatten()).keep_alive(KeepAlive::default())
}

/// Runs `f` on the session in tokio's blocking pool (an operator may take its time), then
/// answers with the new state.
async fn with_session(
    s: App,
    f: impl FnOnce(&mut Session) -> Result<(), Refused> + Send + 'static,
) -> Response {
    let shared = Arc::clone(&s);
    let r = tokio::task::spawn_blocking(move || {
        let mut session = shared.lock();
        let r = f(&mut session);
        shared.dirty.store(true, Ordering::SeqCst);
        r.map(|()| session.state_json())
    })
    .await;
    match r {
        Ok(Ok(state)) => axum::Json(state).into_response(),
        Ok(Err(refusal)) => refused(refusal),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the engine task failed: {e}"),
        ),
    }
}

/// The body of a POST that takes no arguments: empty, or any JSON value (`{}`); anything
/// else is a malformed request.
fn no_body(body: &Bytes) -> Option<Response> {
    if body.iter().all(u8::is_ascii_whitespace) || serde_json::from_slice::<Json>(body).is_ok() {
        return None;
    }
    Some(error(
        StatusCode::BAD_REQUEST,
        "malformed request: the body is not JSON; send no body, or `{}`",
    ))
}

async fn step(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    with_session(s, Session::step).await
}

async fn back(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    with_session(s, Session::back).await
}

async fn refire(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    with_session(s, Session::refire).await
}

async fn reset(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    s.pause.store(true, Ordering::SeqCst);
    // Wait for a run in progress to see the pause.
    for _ in 0..200 {
        if !s.lock().running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    with_session(s, Session::reset).await
}

async fn pause(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    s.pause.store(true, Ordering::SeqCst);
    axum::Json(s.lock().state_json()).into_response()
}

/// Runs to an end state (or until Pause), in slices so the page and other requests get the
/// engine between them; answers with the state where it stopped.
async fn run(State(s): State<App>, body: Bytes) -> Response {
    if let Some(e) = no_body(&body) {
        return e;
    }
    {
        let mut session = s.lock();
        if session.running {
            return error(StatusCode::CONFLICT, "a run is already in progress");
        }
        if session.cvm.is_none() {
            return error(
                StatusCode::CONFLICT,
                "the served file is not a valid net: fix it in the Code view",
            );
        }
        session.running = true;
        session.touch();
    }
    s.pause.store(false, Ordering::SeqCst);
    s.dirty.store(true, Ordering::SeqCst);
    let shared = Arc::clone(&s);
    let r = tokio::task::spawn_blocking(move || {
        let mut flushed = Instant::now();
        let outcome = loop {
            let mut session = shared.lock();
            let started = Instant::now();
            let mut stop = Ok(false);
            while started.elapsed() < RUN_SLICE {
                stop = session.run_some(RUN_BATCH);
                if !matches!(stop, Ok(false)) {
                    break;
                }
            }
            match stop {
                Ok(true) => break Ok(()),
                Err(e) => break Err(e),
                Ok(false) if shared.pause.load(Ordering::SeqCst) => break Ok(()),
                Ok(false) => {}
            }
            if flushed.elapsed() >= Duration::from_millis(super::FLUSH_MS) {
                shared.flush_with(&session);
                flushed = Instant::now();
            }
            drop(session);
            // Let the page's requests and the flusher have the engine between slices (a
            // mutex is not fair: without a pause the run would take it straight back).
            std::thread::sleep(Duration::from_millis(1));
        };
        let mut session = shared.lock();
        session.running = false;
        session.touch();
        shared.dirty.store(true, Ordering::SeqCst);
        outcome.map(|()| session.state_json())
    })
    .await;
    match r {
        Ok(Ok(state)) => axum::Json(state).into_response(),
        Ok(Err(refusal)) => refused(refusal),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the run failed: {e}"),
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Goto {
    branch: Option<usize>,
    step: Option<usize>,
}

async fn goto(State(s): State<App>, body: Result<axum::Json<Goto>, JsonRejection>) -> Response {
    let g = match body {
        Ok(axum::Json(g)) => g,
        Err(e) => return bad_json(&e, "{\"step\": N} or {\"branch\": I, \"step\": N}"),
    };
    with_session(s, move |session| session.goto(g.branch, g.step)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Provide {
    value: Json,
}

async fn provide(
    State(s): State<App>,
    Path(op): Path<String>,
    body: Result<axum::Json<Provide>, JsonRejection>,
) -> Response {
    let p = match body {
        Ok(axum::Json(p)) => p,
        Err(e) => return bad_json(&e, "{\"value\": …}"),
    };
    with_session(s, move |session| session.provide(&op, p.value)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Text {
    text: String,
}

async fn check(State(s): State<App>, body: Result<axum::Json<Text>, JsonRejection>) -> Response {
    let t = match body {
        Ok(axum::Json(t)) => t,
        Err(e) => return bad_json(&e, "{\"text\": \"…\"}"),
    };
    let shared = Arc::clone(&s);
    let problems = tokio::task::spawn_blocking(move || {
        // Checking reads the catalogue and the file's folder only, not the engine.
        let session = shared.lock();
        session.check(&t.text)
    })
    .await
    .unwrap_or_default();
    axum::Json(json!({"valid": problems.is_empty(), "problems": problems})).into_response()
}

async fn save(State(s): State<App>, body: Result<axum::Json<Text>, JsonRejection>) -> Response {
    let t = match body {
        Ok(axum::Json(t)) => t,
        Err(e) => return bad_json(&e, "{\"text\": \"…\"}"),
    };
    {
        if s.lock().running {
            return error(StatusCode::CONFLICT, "a run is in progress: pause it first");
        }
    }
    let shared = Arc::clone(&s);
    let r = tokio::task::spawn_blocking(move || {
        let mut session = shared.lock();
        let r = session.save(&t.text);
        shared.dirty.store(true, Ordering::SeqCst);
        r.map(|text| json!({"saved": true, "text": text, "state": session.state_json()}))
    })
    .await;
    match r {
        Ok(Ok(v)) => axum::Json(v).into_response(),
        Ok(Err((refusal, problems))) => (
            StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST),
            axum::Json(json!({"error": refusal.message, "problems": problems})),
        )
            .into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("saving failed: {e}"),
        ),
    }
}

/// A 400 for a body that is not the JSON expected, saying what is.
fn bad_json(e: &JsonRejection, expected: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        format!(
            "malformed request: {}; expected a JSON body {expected}",
            e.body_text()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_equal_only_when_equal() {
        assert!(same_secret(b"s3cret", b"s3cret"));
        assert!(!same_secret(b"s3cret", b"s3cres"));
        assert!(!same_secret(b"s3cret", b"s3cre"));
        assert!(!same_secret(b"", b"x"));
    }
}
