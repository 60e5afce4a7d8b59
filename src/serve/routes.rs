//! The router (every path and its handler) and the production layers
//! (timeouts, body and concurrency limits, CORS, security headers).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower::ServiceBuilder;

use super::error::{Error, Form};
use super::{MAX_BODY, Server, api, backtest, clips, explore, feed, openapi, series, status};
use crate::config::DaemonConfig;

/// The router, without the production layers (tests call it with `oneshot`).
pub fn app(server: Arc<Server>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { axum::response::Redirect::to("/status") }),
        )
        .route("/clips/{watch}", get(clips::whole_clip))
        .route("/clips/{watch}/{clip}", get(clips::named_clip))
        .route("/feeds/{file}", get(feed::watch_feed))
        .route("/feeds/{watch}/{file}", get(feed::clip_feed))
        .route("/status", get(status::overview))
        .route("/status/{watch}", get(status::watch))
        .route("/status/{watch}/tree", get(explore::tree))
        .route("/status/{watch}/changes/{event}", get(explore::change))
        .route(
            "/status/{watch}/changes/at/{at}",
            get(explore::check_changes),
        )
        .route("/status.js", get(explore::script))
        .route("/embed.js", get(explore::embed))
        .route("/api/openapi.json", get(openapi::openapi_doc))
        .route("/api/watches", get(api::watches))
        .route("/api/watches/{watch}", get(api::watch))
        .route("/api/watches/{watch}/changes", get(api::changes))
        .route("/api/watches/{watch}/thresholds", get(api::thresholds))
        .route(
            "/api/watches/{watch}/thresholds/{name}/values",
            get(api::values),
        )
        .route("/api/watches/{watch}/series", get(series::series))
        .route("/api/watches/{watch}/backtest", get(backtest::backtest))
        .route("/api/watches/{watch}/check", post(api::check_now))
        .route("/metrics", get(api::metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .fallback(|| async { Error::not_found("no such page", Form::Text) })
        .with_state(server)
}

async fn readyz(State(server): State<Arc<Server>>) -> Response {
    if server.is_ready() {
        "ready\n".into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the store has not been read in the last few seconds (the log says why)\n",
        )
            .into_response()
    }
}

/// The router with the production layers: tracing, load shedding, a
/// timeout, a body limit, compression and CORS.
pub(crate) fn with_layers(router: Router, daemon: &DaemonConfig) -> Router {
    let cfg = &daemon.server;
    let cors = cors(&cfg.cors_origins);
    let csp = content_security_policy(&cfg.frame_ancestors);
    router
        .layer(cors)
        .layer(tower_http::compression::CompressionLayer::new())
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY))
        .layer(
            ServiceBuilder::new()
                .layer(axum::error_handling::HandleErrorLayer::new(overloaded))
                .load_shed()
                .concurrency_limit(cfg.max_in_flight)
                .timeout(cfg.request_timeout),
        )
        // Bodies that echo input (error messages quote the path or the
        // parameter they refuse) must never be sniffed into HTML or script.
        .layer(tower_http::set_header::SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        // HTML (status pages, HTML clips) runs no script but the server's
        // own, loads nothing from elsewhere, and is framed only where the
        // daemon file allows (`server.frame_ancestors`).
        .layer(
            tower_http::set_header::SetResponseHeaderLayer::if_not_present(
                header::CONTENT_SECURITY_POLICY,
                move |response: &Response| is_html(response).then(|| csp.clone()),
            ),
        )
        .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(http_span))
}

/// The `http` span of one request: its method and the route it matched
/// (`/clips/{watch}/{clip}`, not the path: no ids or query in the span;
/// none for a path no route matches). `Router::layer` wraps each route, so
/// the route is known here.
fn http_span(request: &axum::extract::Request) -> tracing::Span {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(axum::extract::MatchedPath::as_str);
    tracing::info_span!("http", method = %request.method(), route)
}

/// The `Content-Security-Policy` of HTML answers, framed by `ancestors`.
fn content_security_policy(ancestors: &[String]) -> HeaderValue {
    let ancestors = if ancestors.is_empty() {
        "'none'".to_owned()
    } else {
        ancestors.join(" ")
    };
    let policy = format!(
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors {ancestors}"
    );
    // The configuration checks each origin; a value that still cannot be
    // a header falls back to the strictest policy rather than none.
    HeaderValue::from_str(&policy)
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"))
}

fn is_html(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

async fn overloaded(error: tower::BoxError) -> Response {
    let message = if error.is::<tower::timeout::error::Elapsed>() {
        "the request took too long"
    } else if error.is::<tower::load_shed::error::Overloaded>() {
        "overloaded: try again shortly"
    } else {
        "service unavailable"
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        format!("{message}\n"),
    )
        .into_response()
}

fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return CorsLayer::new();
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::HEAD])
        .allow_headers([
            header::AUTHORIZATION,
            header::IF_NONE_MATCH,
            header::IF_MODIFIED_SINCE,
            header::ACCEPT,
        ])
        .expose_headers([header::ETAG, header::LAST_MODIFIED])
        .max_age(std::time::Duration::from_secs(3600))
}
