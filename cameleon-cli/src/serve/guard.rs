//! The rules every request goes through before any handler, each a layer of the router
//! (`api::router`): the token, when the server has one, and a JSON content type on every POST
//! (a cross-site form cannot send one). A refusal is an [`ApiError`], as a handler's is.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Shared;
use super::error::{ApiError, ErrorKind};

/// Refuses a request without the server's token (when it has one): `Authorization: Bearer T`,
/// or `?token=T`, compared in constant time.
pub(crate) async fn require_token(
    State(s): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(expected) = &s.token {
        let ok = token_of(&req).is_some_and(|t| same_secret(t.as_bytes(), expected.as_bytes()));
        if !ok {
            return ApiError::new(
                ErrorKind::Unauthorized,
                "missing or wrong token: send `Authorization: Bearer T`, or open the page with `?token=T`",
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// Refuses a POST that does not say `Content-Type: application/json`.
pub(crate) async fn require_json_post(req: Request, next: Next) -> Response {
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
            return ApiError::new(
                ErrorKind::NotJson,
                "POST requests must send `Content-Type: application/json`",
            )
            .into_response();
        }
    }
    next.run(req).await
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
