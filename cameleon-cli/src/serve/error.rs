//! The one error of the API: what went wrong, and — in [`ApiError::status`], the only place —
//! the HTTP status it gets. Every refusal, whether a layer's, an extractor's or the session's,
//! reaches the page as `{"error": message}` (and, for a text that is not a valid net,
//! `"problems"`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::view::{ErrorView, ProblemView};

/// What kind of refusal an [`ApiError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The request is not what the endpoint reads (its body, its query): 400.
    Malformed,
    /// A well-formed request whose content is refused (an answer of the wrong type, a branch
    /// that does not exist, a text that is not a valid net): 400.
    Invalid,
    /// The served net cannot do it now (a run in progress, no valid net, nothing to undo): 409.
    Conflict,
    /// The token is missing or wrong: 401.
    Unauthorized,
    /// The `Host` does not name this server (a DNS-rebinding page's request): 421.
    MisdirectedHost,
    /// The `Origin` is another site's page: 403.
    ForeignOrigin,
    /// A POST that does not say its body is JSON: 415.
    NotJson,
    /// No such route: 404.
    NotFound,
    /// The server failed (a file it could not write, an engine task that died): 500.
    Internal,
}

/// A refused request: its kind and the message the page shows.
#[derive(Debug)]
pub(crate) struct ApiError {
    kind: ErrorKind,
    message: String,
    problems: Option<Vec<ProblemView>>,
}

impl ApiError {
    /// An error of kind `kind`.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ApiError {
            kind,
            message: message.into(),
            problems: None,
        }
    }

    /// [`ErrorKind::Malformed`].
    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        ApiError::new(ErrorKind::Malformed, message)
    }

    /// [`ErrorKind::Invalid`].
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(ErrorKind::Invalid, message)
    }

    /// [`ErrorKind::Conflict`].
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(ErrorKind::Conflict, message)
    }

    /// [`ErrorKind::Internal`].
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError::new(ErrorKind::Internal, message)
    }

    /// The same error, with the problems of the text it refused (sent as `"problems"`).
    pub(crate) fn with_problems(mut self, problems: Vec<ProblemView>) -> Self {
        self.problems = Some(problems);
        self
    }

    /// The kind.
    #[cfg(test)]
    pub(crate) fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status of each kind.
    pub(crate) fn status(&self) -> StatusCode {
        match self.kind {
            ErrorKind::Malformed | ErrorKind::Invalid => StatusCode::BAD_REQUEST,
            ErrorKind::Conflict => StatusCode::CONFLICT,
            ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorKind::MisdirectedHost => StatusCode::MISDIRECTED_REQUEST,
            ErrorKind::ForeignOrigin => StatusCode::FORBIDDEN,
            ErrorKind::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorView {
            error: self.message,
            problems: self.problems,
        };
        (status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_status_and_the_body_says_why() {
        let cases = [
            (ErrorKind::Malformed, 400),
            (ErrorKind::Invalid, 400),
            (ErrorKind::Conflict, 409),
            (ErrorKind::Unauthorized, 401),
            (ErrorKind::MisdirectedHost, 421),
            (ErrorKind::ForeignOrigin, 403),
            (ErrorKind::NotJson, 415),
            (ErrorKind::NotFound, 404),
            (ErrorKind::Internal, 500),
        ];
        for (kind, status) in cases {
            let r = ApiError::new(kind, "why").into_response();
            assert_eq!(r.status().as_u16(), status, "{kind:?}");
            assert_eq!(
                r.headers()["content-type"],
                "application/json",
                "{kind:?}: a JSON error"
            );
        }
    }
}
