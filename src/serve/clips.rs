//! The clip endpoints: `GET /clips/{watch}` (the whole hierarchy) and
//! `GET /clips/{watch}/{clip}`, one representation per request.
//!
//! The representation is chosen by `?format=` or else by `Accept`: `xml`
//! (default; `?fragment=1` leaves out the XML declaration), `json`, `html`
//! (the clip's XSLT stylesheet, sanitized; stylesheet parameters from the
//! query string, on an allow-list), `rdf` (RDF/XML) and `ttl` (Turtle). The
//! `ETag` is the clip's semantic hash with the representation,
//! `Last-Modified` the time its data last changed, and a matching
//! `If-None-Match` (or, without one, `If-Modified-Since`) gets 304.
//!
//! A clip's data ([`ClipData`]) is computed once per stored version and
//! cached ([`super::clip`]); each representation of it is made once and
//! kept with it: the cheap ones (JSON, Turtle from the RDF) in line, the
//! XSLT ones (HTML, RDF) in the render pool, at most once at a time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use super::Server;
use super::auth::Need;
use super::clip::{self, ClipData, ClipKey};
use super::error::{Error, Form, require};
use super::render::{self, RenderError};

/// The representations of a clip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
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

pub(crate) async fn whole_clip(
    State(server): State<Arc<Server>>,
    Path(watch): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_clip(&server, watch, None, &query, &headers).await
}

pub(crate) async fn named_clip(
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
pub(crate) async fn clip_data(
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
        .map_err(|e| Error::internal(&e, form))?;
    match computed {
        Ok(data) => {
            let data = Arc::new(data);
            server.cache.put(key.clone(), Arc::clone(&data));
            Ok(data)
        }
        Err(clip::ClipError::NoSnapshot(_)) => Err(no_snapshot()),
        Err(e) => Err(Error::internal(&e, form)),
    }
}

/// The HTML form of a clip, rendered or from the cache.
pub(crate) async fn html_of(
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
    let renderer = server.renderer.clone();
    let xml = data.xml.clone();
    let span = render_span(key, Format::Html);
    rendered(
        server,
        data,
        variant,
        async move { renderer.html(&stylesheet, xml, params).await }.instrument(span),
    )
    .await
}

/// The RDF/XML form of a clip, rendered or from the cache.
async fn rdf_of(
    server: &Arc<Server>,
    key: &ClipKey,
    data: &Arc<ClipData>,
) -> Result<Arc<str>, RenderError> {
    let base = match &key.clip {
        Some(c) => format!("{}/clips/{}/{}", server.base(), key.watch, c),
        None => format!("{}/clips/{}", server.base(), key.watch),
    };
    let renderer = server.renderer.clone();
    let xml = data.xml.clone();
    let variant = variant(Format::Rdf, render::RDF_STYLESHEET, &[]);
    let span = render_span(key, Format::Rdf);
    rendered(
        server,
        data,
        variant,
        async move { renderer.rdf(xml, &base).await }.instrument(span),
    )
    .await
}

/// The `render` span of one XSLT render: the clip and the form it renders
/// (the render pool's lines, a failed transform, fall in it).
fn render_span(key: &ClipKey, format: Format) -> tracing::Span {
    tracing::info_span!("render", watch = %key.watch, clip = key.clip.as_deref(), format = format.name())
}

/// A form rendered by an XSLT stylesheet: kept, or rendered once in the
/// render pool ([`ClipData::render_once`]), waited for until half a second
/// before the request timeout (then a 503 with `Retry-After`, rather than
/// the timeout's); a version that already has its fill of variants refuses
/// new ones.
async fn rendered<F>(
    server: &Server,
    data: &Arc<ClipData>,
    variant: String,
    render: F,
) -> Result<Arc<str>, RenderError>
where
    F: std::future::Future<Output = Result<String, RenderError>> + Send + 'static,
{
    let timeout = server.daemon.server.request_timeout;
    let patience = timeout
        .saturating_sub(Duration::from_millis(500))
        .max(timeout / 2);
    data.render_once(variant, patience, render)
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
        Format::Xml => Ok(if fragment {
            data.xml.as_str().into()
        } else {
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}", data.xml).into()
        }),
        Format::Json => data.kept_or(variant(Format::Json, "", &[]), || {
            Ok::<_, RenderError>(data.json.to_string())
        }),
        Format::Html => html_of(server, &key, &data, params).await,
        Format::Rdf => rdf_of(server, &key, &data).await,
        Format::Ttl => match rdf_of(server, &key, &data).await {
            Ok(rdf) => data.kept_or(variant(Format::Ttl, "", &[]), || render::turtle(&rdf)),
            Err(e) => Err(e),
        },
    }
    .map_err(|e| render_error(&e, form))?;
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
        RenderError::Busy | RenderError::Unfinished { .. } => {
            Error::unavailable(e.to_string(), e.retry_after().unwrap_or(1), form)
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
    use axum::http::HeaderValue;

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
