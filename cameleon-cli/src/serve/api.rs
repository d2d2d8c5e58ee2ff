//! The HTTP side of `serve`: the routes, and a handler per route — a small async function of
//! extractors that returns a view or an [`ApiError`]. What every request goes through (Host,
//! Origin, the token, the content type of a POST, the response headers) is a layer of
//! [`router`], not code in the handlers. A handler never waits for the engine on a server
//! worker: it reads what was published, or hands the work to the blocking pool.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::Value as JsonValue;
use tower_http::set_header::SetResponseHeaderLayer;

use super::error::{ApiError, ErrorKind};
use super::extract::{BodyShape, JsonBody, NoBody, Query};
use super::guard::{self, Guard};
use super::session::{Drawing, Session};
use super::shared::Shared;
use super::stream;
use super::view::{
    CheckView, HistoryView, InspectView, OutputsView, SavedView, SourceView, StateView,
};

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const RESULTS: &str = include_str!("results.js");
const STYLE: &str = include_str!("page.css");

/// Steps a run does per batch, between looks at the clock.
const RUN_BATCH: usize = 200;
/// Longest a run holds the engine's lock at once.
const RUN_SLICE: Duration = Duration::from_millis(15);

/// What every handler gets: the shared session and channels.
type App = Arc<Shared>;

/// Every route of the server, under the layers every request goes through (the outermost
/// first: response headers, Host, Origin, the token, the content type of a POST).
pub(crate) fn router(shared: App, g: Arc<Guard>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/page.js", get(script))
        .route("/results.js", get(results_script))
        .route("/page.css", get(style))
        .route("/api/state", get(state))
        .route("/api/svg", get(svg))
        .route("/api/history", get(history))
        .route("/api/source", get(source))
        .route("/api/outputs", get(outputs))
        .route("/api/inspect", get(inspect))
        .route("/api/events", get(stream::events))
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
        .layer(middleware::from_fn(guard::require_json_post))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&g),
            guard::require_token,
        ))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&g),
            guard::require_own_origin,
        ))
        .layer(middleware::from_fn_with_state(g, guard::require_own_host))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
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

async fn not_found(req: Request) -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
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

async fn results_script() -> Response {
    text("text/javascript; charset=utf-8", RESULTS)
}

async fn style() -> Response {
    text("text/css; charset=utf-8", STYLE)
}

async fn state(State(s): State<App>) -> Json<StateView> {
    Json(s.state_now())
}

async fn svg(State(s): State<App>) -> Result<Response, ApiError> {
    let svg = (header::CONTENT_TYPE, "image/svg+xml");
    match &*s.published().drawing {
        Some(Drawing::Net(drawing)) => Ok(([svg], drawing.clone()).into_response()),
        // Not a valid net yet: what could be read of it, marked as a sketch.
        Some(Drawing::Sketch(drawing)) => Ok((
            [svg, (HeaderName::from_static("x-cameleon-sketch"), "1")],
            drawing.clone(),
        )
            .into_response()),
        None => Err(ApiError::conflict(
            "the served file is not readable as a net: there is nothing to draw yet",
        )),
    }
}

/// The query of `GET /api/history`.
#[derive(Deserialize)]
struct HistoryQuery {
    limit: Option<usize>,
}

async fn history(
    State(s): State<App>,
    Query(q): Query<HistoryQuery>,
) -> Result<Json<HistoryView>, ApiError> {
    let limit = q.limit.unwrap_or(500);
    Ok(Json(s.read(move |session| session.history(limit)).await?))
}

async fn source(State(s): State<App>) -> Json<Arc<SourceView>> {
    Json(s.published().source)
}

async fn outputs(State(s): State<App>) -> Result<Json<OutputsView>, ApiError> {
    Ok(Json(s.read(Session::outputs).await?))
}

/// The query of `GET /api/inspect`.
#[derive(Deserialize)]
struct InspectQuery {
    conn: Option<String>,
    op: Option<String>,
}

async fn inspect(
    State(s): State<App>,
    Query(q): Query<InspectQuery>,
) -> Result<Json<InspectView>, ApiError> {
    let view = s
        .read(move |session| session.inspect(q.conn.as_deref(), q.op.as_deref()))
        .await??;
    Ok(Json(view))
}

/// Runs `f` on the session in tokio's blocking pool (an operator may take its time), then
/// answers with the new state.
async fn with_session(
    s: App,
    f: impl FnOnce(&mut Session) -> Result<(), ApiError> + Send + 'static,
) -> Result<Json<Arc<StateView>>, ApiError> {
    s.change(f).await.map(Json)
}

async fn step(State(s): State<App>, _: NoBody) -> Result<Json<Arc<StateView>>, ApiError> {
    with_session(s, Session::step).await
}

async fn back(State(s): State<App>, _: NoBody) -> Result<Json<Arc<StateView>>, ApiError> {
    with_session(s, Session::back).await
}

async fn refire(State(s): State<App>, _: NoBody) -> Result<Json<Arc<StateView>>, ApiError> {
    with_session(s, Session::refire).await
}

/// Pauses a run in progress first and cancels its step in flight (a model's answer streaming
/// in is cut at once), and waits for it to stop.
async fn reset(State(s): State<App>, _: NoBody) -> Result<Json<Arc<StateView>>, ApiError> {
    s.cancel_step();
    let state = s
        .blocking(|shared| {
            let _busy = shared.busy();
            loop {
                shared.pause();
                let mut session = shared.lock();
                if !session.is_running() {
                    let r = session.reset();
                    let state = shared.publish(&session);
                    return r.map(|()| state);
                }
                drop(session);
                // The run takes the engine back for one more step at most, then sees the pause.
                std::thread::sleep(Duration::from_millis(1));
            }
        })
        .await??;
    Ok(Json(state))
}

/// Asks the run in progress to stop before its next step, at once (the state it answers with
/// may still say `running`: the stream says when it stopped).
async fn pause(State(s): State<App>, _: NoBody) -> Json<StateView> {
    s.pause();
    Json(s.state_now())
}

/// Runs to an end state (or until Pause), in slices so other requests get the engine between
/// them; answers with the state where it stopped.
async fn run(State(s): State<App>, _: NoBody) -> Result<Json<Arc<StateView>>, ApiError> {
    s.blocking(|shared| {
        let mut session = shared.lock();
        session.start_run()?;
        shared.publish(&session);
        drop(session);
        let _driver = RunDriver(shared);
        loop {
            let mut session = shared.lock();
            let over = session.run_slice(RUN_SLICE, RUN_BATCH);
            let state = shared.publish(&session);
            if !matches!(over, Ok(false)) {
                return over.map(|_| Json(state));
            }
            drop(session);
            // Let the other requests have the engine between slices (a mutex is not fair:
            // without a pause the run would take it straight back).
            std::thread::sleep(Duration::from_millis(1));
        }
    })
    .await?
}

/// Ends the run when its driver stops by any way — a panic included, so the session never
/// stays "running" with nobody driving it.
struct RunDriver<'a>(&'a Shared);

impl Drop for RunDriver<'_> {
    fn drop(&mut self) {
        let mut session = self.0.lock();
        if session.is_running() {
            session.end_run();
            self.0.publish(&session);
        }
    }
}

/// The body of `POST /api/goto`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Goto {
    branch: Option<usize>,
    step: Option<usize>,
}

impl BodyShape for Goto {
    const SHAPE: &'static str = "{\"step\": N} or {\"branch\": I, \"step\": N}";
}

async fn goto(
    State(s): State<App>,
    JsonBody(g): JsonBody<Goto>,
) -> Result<Json<Arc<StateView>>, ApiError> {
    with_session(s, move |session| session.goto(g.branch, g.step)).await
}

/// The body of `POST /api/provide/OP`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Provide {
    value: JsonValue,
}

impl BodyShape for Provide {
    const SHAPE: &'static str = "{\"value\": …}";
}

async fn provide(
    State(s): State<App>,
    Path(op): Path<String>,
    JsonBody(p): JsonBody<Provide>,
) -> Result<Json<Arc<StateView>>, ApiError> {
    with_session(s, move |session| session.provide(&op, p.value)).await
}

/// The body of `POST /api/check` and `POST /api/save`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Text {
    text: String,
}

impl BodyShape for Text {
    const SHAPE: &'static str = "{\"text\": \"…\"}";
}

async fn check(
    State(s): State<App>,
    JsonBody(t): JsonBody<Text>,
) -> Result<Json<CheckView>, ApiError> {
    // Checking reads the catalogue and the file's folder only, never the engine.
    let problems = s
        .blocking(move |shared| shared.served.check(&t.text))
        .await?;
    Ok(Json(CheckView {
        valid: problems.is_empty(),
        problems,
    }))
}

async fn save(
    State(s): State<App>,
    JsonBody(t): JsonBody<Text>,
) -> Result<Json<SavedView>, ApiError> {
    s.blocking(move |shared| {
        let _busy = shared.busy();
        let mut session = shared.lock();
        let saved = session.save(&t.text);
        let state = shared.publish(&session);
        Ok(Json(SavedView {
            saved: true,
            text: saved?,
            state,
        }))
    })
    .await?
}
