//! The extractors of the API: a JSON body of a known shape, the empty body of a POST that takes
//! no arguments, a query. A request they cannot read is refused with an [`ApiError`] saying what
//! was expected, before the handler runs.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query as AxumQuery, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A body the API reads: its JSON shape, as the error of a malformed request names it.
pub(crate) trait BodyShape: DeserializeOwned {
    /// The shape, written as JSON (`{"value": …}`).
    const SHAPE: &'static str;
}

/// A JSON body of shape `T`. Anything else — not JSON, a missing or misspelt key, a value of
/// the wrong type — is a 400: `malformed request: …; expected a JSON body {T::SHAPE}`.
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<S: Send + Sync, T: BodyShape> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(JsonBody(v)),
            Err(e) => Err(ApiError::malformed(format!(
                "malformed request: {}; expected a JSON body {}",
                e.body_text(),
                T::SHAPE
            ))),
        }
    }
}

/// The body of a POST that takes no arguments: empty, or any JSON value (`{}`); anything else
/// is a malformed request.
#[derive(Debug)]
pub(crate) struct NoBody;

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let body = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::malformed(format!("malformed request: {}", e.body_text())))?;
        if body.iter().all(u8::is_ascii_whitespace)
            || serde_json::from_slice::<serde_json::Value>(&body).is_ok()
        {
            Ok(NoBody)
        } else {
            Err(ApiError::malformed(
                "malformed request: the body is not JSON; send no body, or `{}`",
            ))
        }
    }
}

/// The query of a GET, read as `T`; one that does not read is a malformed request.
#[derive(Debug)]
pub(crate) struct Query<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match AxumQuery::<T>::from_request_parts(parts, state).await {
            Ok(AxumQuery(q)) => Ok(Query(q)),
            Err(e) => Err(ApiError::malformed(e.body_text())),
        }
    }
}
