//! The one error type of the handlers, the form it is shown in, and the
//! access check every handler starts with.
//!
//! Handlers return `Result<_, Error>`; an [`Error`] becomes a response with
//! its status and a short message in the handler's [`Form`] (text, JSON or
//! HTML). Internal causes are logged, never shown. A 401 challenges Basic
//! first (browsers only offer a sign-in dialog for a scheme they know on
//! the first line), then Bearer, one scheme per header line.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Server;
use super::auth::{Need, Verdict};

/// How an error is shown: plain text (clips, feeds), JSON (API) or HTML
/// (status pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `text/plain`.
    Text,
    /// `application/json` `{"error": ...}`.
    Json,
    /// A small HTML page.
    Html,
}

/// The one error type of the handlers. Clients see the status and a short
/// message, never internal detail (that is logged).
#[derive(Debug)]
pub(crate) struct Error {
    /// The status.
    pub status: StatusCode,
    /// What the client is told.
    pub message: String,
    /// How.
    pub form: Form,
    /// Seconds after which asking again may help (`Retry-After`, on a 503).
    pub retry_after: Option<u64>,
}

impl Error {
    /// An error with this status and message.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>, form: Form) -> Error {
        Error {
            status,
            message: message.into(),
            form,
            retry_after: None,
        }
    }

    /// 503 with `Retry-After: seconds`.
    pub(crate) fn unavailable(message: impl Into<String>, seconds: u64, form: Form) -> Error {
        Error {
            retry_after: Some(seconds),
            ..Error::new(StatusCode::SERVICE_UNAVAILABLE, message, form)
        }
    }

    /// 404.
    pub(crate) fn not_found(message: impl Into<String>, form: Form) -> Error {
        Error::new(StatusCode::NOT_FOUND, message, form)
    }

    /// 500, logging the cause.
    pub(crate) fn internal(cause: &dyn std::error::Error, form: Form) -> Error {
        tracing::error!(error = %crate::ErrorChain(cause), "request failed");
        Error::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error (see the server log)",
            form,
        )
    }

    /// From an access verdict, `None` when allowed.
    pub(crate) fn access(verdict: Verdict, form: Form) -> Option<Error> {
        match verdict {
            Verdict::Allowed => None,
            Verdict::Unauthorized => Some(Error::new(
                StatusCode::UNAUTHORIZED,
                "a token is needed: send Authorization: Bearer TOKEN, or sign in with \
                 any user name and the token as the password",
                form,
            )),
            Verdict::Forbidden => Some(Error::new(
                StatusCode::FORBIDDEN,
                "this token's scopes do not allow it",
                form,
            )),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let mut response = match self.form {
            Form::Text => (self.status, format!("{}\n", self.message)).into_response(),
            Form::Json => (
                self.status,
                axum::Json(serde_json::json!({ "error": self.message })),
            )
                .into_response(),
            Form::Html => (
                self.status,
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                super::pages::error(
                    self.status.as_u16(),
                    self.status.canonical_reason().unwrap_or("Error"),
                    &self.message,
                ),
            )
                .into_response(),
        };
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // One header line per scheme, Basic first: a browser reads only
            // the first challenge of a line (Chromium, at least), and only
            // Basic makes it ask for a user name and password. Programs
            // that send `Bearer` need no challenge to do so.
            let headers = response.headers_mut();
            headers.append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"semclip\", charset=\"UTF-8\""),
            );
            headers.append(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"semclip\""),
            );
        }
        response
    }
}

/// Refuses the request unless its credentials allow `need`.
pub(crate) fn require(
    server: &Server,
    headers: &HeaderMap,
    need: Need,
    form: Form,
) -> Result<(), Error> {
    match Error::access(server.tokens.check(headers, need), form) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn a_401_challenges_basic_first_one_scheme_per_line() {
        for form in [Form::Text, Form::Json, Form::Html] {
            let response = Error::access(Verdict::Unauthorized, form)
                .map(IntoResponse::into_response)
                .expect("refused");
            let challenges: Vec<&str> = response
                .headers()
                .get_all(header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            assert_eq!(
                challenges,
                [
                    "Basic realm=\"semclip\", charset=\"UTF-8\"",
                    "Bearer realm=\"semclip\""
                ]
            );
        }
        let forbidden = Error::access(Verdict::Forbidden, Form::Text)
            .map(IntoResponse::into_response)
            .expect("refused");
        assert!(forbidden.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
