//! The router, the production layers, errors, and the clip endpoints.
//!
//! `GET /clips/{watch}` (the whole hierarchy) and `GET /clips/{watch}/{clip}`
//! answer in the representation chosen by `?format=` or else by `Accept`:
//! `xml` (default; `?fragment=1` leaves out the XML declaration), `json`,
//! `html` (the clip's XSLT stylesheet, sanitized; stylesheet parameters
//! from the query string, on an allow-list), `rdf` (RDF/XML) and `ttl`
//! (Turtle). The `ETag` is the clip's semantic hash with the
//! representation, `Last-Modified` the time its data last changed, and a
//! matching `If-None-Match` (or, without one, `If-Modified-Since`) gets 304.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower::ServiceBuilder;

use super::auth::{Need, Verdict};
use super::clip::{self, ClipData, ClipKey};
use super::render::{self, RenderError};
use super::{MAX_BODY, Server, api, explore, feed, status};
use crate::config::DaemonConfig;

/// How an error is shown: plain text (clips, feeds), JSON (API) or HTML
/// (status pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
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
pub struct Error {
    /// The status.
    pub status: StatusCode,
    /// What the client is told.
    pub message: String,
    /// How.
    pub form: Form,
}

impl Error {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>, form: Form) -> Error {
        Error {
            status,
            message: message.into(),
            form,
        }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>, form: Form) -> Error {
        Error::new(StatusCode::NOT_FOUND, message, form)
    }

    /// 500, logging the cause.
    pub fn internal(cause: &dyn std::fmt::Display, form: Form) -> Error {
        tracing::error!(error = %cause, "request failed");
        Error::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error (see the server log)",
            form,
        )
    }

    /// From an access verdict, `None` when allowed.
    pub fn access(verdict: Verdict, form: Form) -> Option<Error> {
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
pub fn require(server: &Server, headers: &HeaderMap, need: Need, form: Form) -> Result<(), Error> {
    match Error::access(server.tokens.check(headers, need), form) {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// The router, without the production layers (tests call it with `oneshot`).
pub fn app(server: Arc<Server>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { axum::response::Redirect::to("/status") }),
        )
        .route("/clips/{watch}", get(whole_clip))
        .route("/clips/{watch}/{clip}", get(named_clip))
        .route("/feeds/{file}", get(feed::watch_feed))
        .route("/feeds/{watch}/{file}", get(feed::clip_feed))
        .route("/status", get(status::overview))
        .route("/status/{watch}", get(status::watch))
        .route("/status/{watch}/tree", get(explore::tree))
        .route("/status/{watch}/changes/{event}", get(explore::change))
        .route("/status.js", get(explore::script))
        .route("/embed.js", get(explore::embed))
        .route("/api/openapi.json", get(api::openapi_doc))
        .route("/api/watches", get(api::watches))
        .route("/api/watches/{watch}", get(api::watch))
        .route("/api/watches/{watch}/changes", get(api::changes))
        .route("/api/watches/{watch}/thresholds", get(api::thresholds))
        .route(
            "/api/watches/{watch}/thresholds/{name}/values",
            get(api::values),
        )
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
            "the store has not been read yet\n",
        )
            .into_response()
    }
}

/// The router with the production layers: tracing, load shedding, a
/// timeout, a body limit, compression and CORS.
pub fn with_layers(router: Router, daemon: &DaemonConfig) -> Router {
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
        .layer(tower_http::trace::TraceLayer::new_for_http())
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

/// The representations of a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The hierarchy fragment.
    Xml,
    /// The JSON form.
    Json,
    /// The HTML fragment.
    Html,
    /// RDF/XML.
    Rdf,
    /// Turtle.
    Ttl,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Xml => "xml",
            Format::Json => "json",
            Format::Html => "html",
            Format::Rdf => "rdf",
            Format::Ttl => "ttl",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Xml => "application/xml; charset=utf-8",
            Format::Json => "application/json",
            Format::Html => "text/html; charset=utf-8",
            Format::Rdf => "application/rdf+xml",
            Format::Ttl => "text/turtle; charset=utf-8",
        }
    }

    fn from_name(s: &str) -> Option<Format> {
        Some(match s {
            "xml" => Format::Xml,
            "json" => Format::Json,
            "html" => Format::Html,
            "rdf" => Format::Rdf,
            "ttl" | "turtle" => Format::Ttl,
            _ => return None,
        })
    }

    /// The format `Accept` prefers, by quality then by order; xml when it
    /// names none we have (or is absent).
    fn from_accept(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Xml;
        };
        let mut best: Option<(f32, usize, Format)> = None;
        for (i, part) in accept.split(',').enumerate() {
            let mut pieces = part.split(';');
            let mime = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = pieces
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let format = match mime.as_str() {
                "application/xml" | "text/xml" => Format::Xml,
                "application/json" => Format::Json,
                "text/html" | "application/xhtml+xml" => Format::Html,
                "application/rdf+xml" => Format::Rdf,
                "text/turtle" => Format::Ttl,
                _ => continue,
            };
            if q > 0.0 && best.is_none_or(|(bq, bi, _)| q > bq || (q == bq && i < bi)) {
                best = Some((q, i, format));
            }
        }
        best.map_or(Format::Xml, |(_, _, f)| f)
    }
}

/// The stylesheet parameters of a query, on the allow-list, sorted.
fn html_params(query: &BTreeMap<String, String>) -> Vec<(String, String)> {
    query
        .iter()
        .filter(|(k, _)| render::HTML_PARAMS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

async fn whole_clip(
    State(server): State<Arc<Server>>,
    Path(watch): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_clip(&server, watch, None, &query, &headers).await
}

async fn named_clip(
    State(server): State<Arc<Server>>,
    Path((watch, clip)): Path<(String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_clip(&server, watch, Some(clip), &query, &headers).await
}

async fn serve_clip(
    server: &Arc<Server>,
    watch: String,
    clip: Option<String>,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    let format = match query.get("format") {
        Some(f) => match Format::from_name(f) {
            Some(f) => Some(f),
            None => {
                server.metrics.clip_request("none", 400);
                return Error::new(
                    StatusCode::BAD_REQUEST,
                    format!("unknown format `{f}`: use xml, json, html, rdf or ttl"),
                    Form::Text,
                )
                .into_response();
            }
        },
        None => None,
    };
    let format = format.unwrap_or_else(|| {
        Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()))
    });
    let response = match clip_response(server, watch, clip, format, query, headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    server
        .metrics
        .clip_request(format.name(), response.status().as_u16());
    response
}

/// The current version of a clip, from the cache or computed.
pub async fn clip_data(
    server: &Arc<Server>,
    key: &ClipKey,
    form: Form,
) -> Result<Arc<ClipData>, Error> {
    let watches = server.watches();
    let Some(watch) = watches.get(&key.watch).cloned() else {
        return Err(Error::not_found(format!("no watch `{}`", key.watch), form));
    };
    let clip = match &key.clip {
        None => None,
        Some(name) => match watch.clips.get(name) {
            Some(c) => Some((name.clone(), c.clone())),
            None => {
                return Err(Error::not_found(
                    format!("watch `{}` has no clip `{name}`", key.watch),
                    form,
                ));
            }
        },
    };
    let no_snapshot =
        || Error::not_found(format!("watch `{}` has no snapshot yet", key.watch), form);
    let Some(current) = server.cache.current(&key.watch) else {
        return Err(no_snapshot());
    };
    if let Some(data) = server.cache.get(key, current) {
        return Ok(data);
    }
    let previous = server.cache.previous(key);
    let id = key.watch.clone();
    let computed = server
        .stores
        .run(move |store| {
            Ok(clip::compute(
                store,
                &id,
                clip.as_ref().map(|(n, c)| (n.as_str(), c)),
                previous.as_deref(),
            ))
        })
        .await
        .map_err(|e| Error::internal(&format!("{e:#}"), form))?;
    match computed {
        Ok(data) => {
            let data = Arc::new(data);
            server.cache.put(key.clone(), Arc::clone(&data));
            Ok(data)
        }
        Err(clip::ClipError::NoSnapshot(_)) => Err(no_snapshot()),
        Err(e) => Err(Error::internal(&format!("{e:#}"), form)),
    }
}

/// The HTML form of a clip, rendered or from the cache.
pub async fn html_of(
    server: &Arc<Server>,
    key: &ClipKey,
    data: &Arc<ClipData>,
    params: Vec<(String, String)>,
) -> Result<Arc<str>, RenderError> {
    let stylesheet = key
        .clip
        .as_ref()
        .and_then(|c| {
            server
                .watches()
                .get(&key.watch)?
                .clips
                .get(c)?
                .stylesheet
                .clone()
        })
        .unwrap_or_else(|| render::HTML_STYLESHEET.to_owned());
    let variant = variant(Format::Html, &stylesheet, &params);
    if let Some(body) = data.render(&variant) {
        return Ok(body);
    }
    let renderer = server.renderer.clone();
    let xml = data.xml.clone();
    let render = async move { renderer.html(&stylesheet, xml, params).await };
    data.render_once(variant, render)
        .await
        .unwrap_or(Err(RenderError::TooManyVariants))
}

/// A cache key of one rendered form.
fn variant(format: Format, stylesheet: &str, params: &[(String, String)]) -> String {
    let mut v = format!("{}|{stylesheet}", format.name());
    for (k, val) in params {
        v.push('|');
        v.push_str(k);
        v.push('=');
        v.push_str(val);
    }
    v
}

async fn clip_response(
    server: &Arc<Server>,
    watch: String,
    clip: Option<String>,
    format: Format,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, Error> {
    let form = Form::Text;
    let watches = server.watches();
    let configured = clip
        .as_ref()
        .and_then(|c| watches.get(&watch)?.clips.get(c));
    let public = configured.is_some_and(|c| c.public);
    require(
        server,
        headers,
        if public { Need::Nothing } else { Need::Read },
        form,
    )?;
    let cache_control = configured
        .and_then(|c| c.cache_control.clone())
        .or_else(|| server.daemon.server.cache_control.clone())
        .unwrap_or_else(|| {
            if public || !server.tokens.any() {
                "no-cache".to_owned()
            } else {
                "private, no-cache".to_owned()
            }
        });
    let key = ClipKey { watch, clip };
    let data = clip_data(server, &key, form).await?;

    let fragment = query
        .get("fragment")
        .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "yes"));
    let params = if format == Format::Html {
        html_params(query)
    } else {
        Vec::new()
    };
    // The ETag: the clip's semantic hash, and what tells representations apart.
    let mut tag = format!(
        "{}-{}",
        &data.hash[..32.min(data.hash.len())],
        format.name()
    );
    if fragment && format == Format::Xml {
        tag.push_str("-f");
    }
    if !params.is_empty() {
        let h = blake3::hash(variant(format, "", &params).as_bytes());
        tag.push('-');
        tag.push_str(&h.to_hex()[..8]);
    }
    let etag = format!("\"{tag}\"");
    let last_modified = httpdate::fmt_http_date(data.last_modified);

    let mut builder = Response::builder()
        .header(header::ETAG, &etag)
        .header(header::LAST_MODIFIED, &last_modified)
        .header(header::CACHE_CONTROL, &cache_control)
        .header(header::VARY, "Accept, Authorization");
    if not_modified(headers, &tag, data.last_modified) {
        return builder
            .status(StatusCode::NOT_MODIFIED)
            .body(Body::empty())
            .map_err(|e| Error::internal(&e, form));
    }
    let body: Arc<str> = match format {
        Format::Xml => {
            if fragment {
                data.xml.as_str().into()
            } else {
                format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}", data.xml).into()
            }
        }
        Format::Json => {
            let v = variant(Format::Json, "", &[]);
            match data.render(&v) {
                Some(j) => j,
                None => {
                    let j: Arc<str> = data.json.to_string().into();
                    data.keep(v, Arc::clone(&j));
                    j
                }
            }
        }
        Format::Html => html_of(server, &key, &data, params)
            .await
            .map_err(|e| render_error(&e, form))?,
        Format::Rdf | Format::Ttl => {
            let rdf_variant = variant(Format::Rdf, render::RDF_STYLESHEET, &[]);
            let rdf = match data.render(&rdf_variant) {
                Some(r) => r,
                None => {
                    let base = match &key.clip {
                        Some(c) => format!("{}/clips/{}/{}", server.base(), key.watch, c),
                        None => format!("{}/clips/{}", server.base(), key.watch),
                    };
                    let renderer = server.renderer.clone();
                    let xml = data.xml.clone();
                    let render = async move { renderer.rdf(xml, &base).await };
                    data.render_once(rdf_variant, render)
                        .await
                        .unwrap_or(Err(RenderError::TooManyVariants))
                        .map_err(|e| render_error(&e, form))?
                }
            };
            if format == Format::Rdf {
                rdf
            } else {
                let ttl_variant = variant(Format::Ttl, "", &[]);
                match data.render(&ttl_variant) {
                    Some(t) => t,
                    None => {
                        let ttl: Arc<str> = render::turtle(&rdf)
                            .map_err(|e| render_error(&e, form))?
                            .into();
                        data.keep(ttl_variant, Arc::clone(&ttl));
                        ttl
                    }
                }
            }
        }
    };
    builder = builder.header(header::CONTENT_TYPE, format.content_type());
    builder
        .status(StatusCode::OK)
        .body(Body::from(body.to_string()))
        .map_err(|e| Error::internal(&e, form))
}

fn render_error(e: &RenderError, form: Form) -> Error {
    match e {
        RenderError::BadParam { .. } => Error::new(StatusCode::BAD_REQUEST, e.to_string(), form),
        RenderError::TooManyVariants => {
            Error::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string(), form)
        }
        _ => Error::internal(e, form),
    }
}

/// Whether the client's cached copy is current: `If-None-Match` names the
/// tag (weak comparison, `*` matches), or, without `If-None-Match`,
/// `If-Modified-Since` is not before the last change.
fn not_modified(headers: &HeaderMap, tag: &str, last_modified: SystemTime) -> bool {
    if let Some(inm) = headers.get(header::IF_NONE_MATCH) {
        let Ok(inm) = inm.to_str() else { return false };
        return inm.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/").trim_matches('"') == tag
        });
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .is_some_and(|since| since >= last_modified)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert_eq!(Format::from_accept(None), Format::Xml);
        assert_eq!(Format::from_accept(Some("text/turtle")), Format::Ttl);
        assert_eq!(
            Format::from_accept(Some("text/html;q=0.5, application/json")),
            Format::Json
        );
        assert_eq!(
            Format::from_accept(Some("application/rdf+xml, application/json")),
            Format::Rdf
        );
        assert_eq!(Format::from_accept(Some("image/png, */*")), Format::Xml);
        assert_eq!(
            Format::from_accept(Some("application/json;q=0, text/html")),
            Format::Html
        );
    }

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

    #[test]
    fn conditional_requests() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"abc-xml\""),
        );
        assert!(not_modified(&h, "abc-xml", t));
        assert!(!not_modified(&h, "abc-json", t));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"abc-xml\""),
        );
        assert!(not_modified(&h, "abc-xml", t));
        let mut h = HeaderMap::new();
        let date = httpdate::fmt_http_date(t);
        h.insert(
            header::IF_MODIFIED_SINCE,
            HeaderValue::from_str(&date).unwrap_or(HeaderValue::from_static("")),
        );
        assert!(not_modified(&h, "abc", t));
        assert!(!not_modified(
            &h,
            "abc",
            t + std::time::Duration::from_secs(1)
        ));
    }
}
