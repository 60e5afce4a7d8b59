//! Getting the page of a check: over HTTP (conditional on the stored
//! validators), from the browser for a `render: browser` watch (after a
//! conditional request when `revalidate: html`), with the session's jar
//! read before and written after; and the session's login (a form posted,
//! or steps in the browser) when the page shows it logged out.

use std::sync::Arc;
use std::time::SystemTime;

use crate::config::{Auth, Login, LoginHow, Watch};
use crate::error_chain;
use crate::monitor::session::{Session, Turn};
use crate::monitor::watch_page;
use crate::monitor::workers::Workers;
use crate::page::browser::{
    DomTest, Job, Ready, RenderOptions, RenderRequest, Rendered, Revalidate,
};
use crate::page::budget::{Budget, PageLimits};
use crate::page::fetch::{self, Credentials, Fetched, PageRequest};
use crate::page::session::BrowserCookie;
use crate::page::source::{FetchOptions, RawPage, SourceError};
use crate::store::WatchStatus;
use crate::xpath::native::Evaluator;

use super::engine::Engine;

/// The page of `watch` as its fetch settings say: rendered in the browser
/// for a `render: browser` watch (after a conditional request with
/// `revalidate: html`, [`revalidate`]), otherwise fetched over HTTP, with
/// `session`'s jar either way.
pub(super) async fn fetch_page(
    engine: &Engine,
    watch: &Arc<Watch>,
    session: Option<&Session>,
    request: &mut PageRequest,
    now: SystemTime,
    dry_run: bool,
) -> Result<Fetched, SourceError> {
    match &watch.fetch.render {
        Some(options) => {
            // `revalidate: render` (the default) skips the
            // conditional request: a 304 on the HTML says nothing
            // of the data its scripts fetch.
            let answered = match options.revalidate {
                Revalidate::Html => revalidate(engine, session, request, now, dry_run).await,
                Revalidate::Render => None,
            };
            match answered {
                Some(answered) => answered,
                None => render(engine, watch, options, session, now, dry_run).await,
            }
        }
        None => fetch_in_session(engine, session, request, now, dry_run).await,
    }
}

/// Fetches `request` with `session`'s jar, if the watch has a session:
/// the stored jar is read first when it changed, and the jar is written
/// right after the fetch when the fetch changed it (not in a dry run).
async fn fetch_in_session(
    engine: &Engine,
    session: Option<&Session>,
    request: &mut PageRequest,
    now: SystemTime,
    dry_run: bool,
) -> Result<Fetched, SourceError> {
    let Some(session) = session else {
        return fetch::fetch(&engine.clients, &engine.limiter, request).await;
    };
    session.refresh(&engine.stores).await;
    let before = session.snapshot();
    request.jar = Some(session.jar().clone());
    let fetched = fetch::fetch(&engine.clients, &engine.limiter, request).await;
    if !dry_run {
        session
            .save(&engine.stores, before.as_deref(), false, now)
            .await;
    }
    fetched
}

/// Logs `session` in by posting `login`'s form with the watch's fetch
/// settings, unless another check logged it in since this one counted
/// `logins`. The jar is written right after (not in a dry run).
pub(super) async fn log_in(
    engine: &Engine,
    session: &Session,
    login: &Login,
    request: &PageRequest,
    logins: u64,
    now: SystemTime,
    dry_run: bool,
) -> Result<(), SourceError> {
    let turn = match session.login_turn(logins).await {
        Turn::Go(turn) => turn,
        Turn::Done => {
            tracing::info!(
                session = session.name(),
                "logged in by another check meanwhile"
            );
            return Ok(());
        }
        Turn::Held { last, wait } => return Err(SourceError::LoginHeld { last, wait }),
    };
    let before = session.snapshot();
    let posted = match &login.how {
        LoginHow::Form(form) => fetch::post_form(
            &engine.clients,
            &engine.limiter,
            form,
            session.jar(),
            &request.opts,
        )
        .await
        .map(drop),
        LoginHow::Steps { url, steps } => {
            let given = session.jar().browser_cookies();
            let options = RenderOptions::default();
            let browsed = browse(
                engine,
                RenderRequest {
                    url,
                    options: &options,
                    headers: &request.headers,
                    headers_cross_origin: request.headers_cross_origin,
                    cookies: &given,
                    job: Job::Login(steps),
                    hierarchy: None,
                    timeout: request.opts.request_timeout,
                    max_bytes: request.opts.max_body_bytes,
                    fence: engine.clients.fence(),
                },
            )
            .await;
            browsed.map(|rendered| {
                session
                    .jar()
                    .take_from_browser(&rendered.given, &rendered.cookies);
            })
        }
    };
    let ok = posted.is_ok();
    match &posted {
        Ok(()) => {
            turn.done();
            tracing::info!(session = session.name(), url = %login.how.url(), "logged in");
        }
        Err(error) => turn.failed(error_chain(error)),
    }
    if !dry_run {
        session
            .save(&engine.stores, before.as_deref(), ok, now)
            .await;
    }
    posted
}

/// The conditional request before a render, when the watch has stored
/// validators (an `ETag` or `Last-Modified` of the page's own response,
/// kept from the last render, and a snapshot to fall back on): sent
/// through the same client, host limits and session jar as an HTTP
/// watch's. `Some` answer ends the check's fetch: a 304 (unchanged, no
/// render), or a failure (a block is judged as for any fetch). `None`:
/// the page changed or there is nothing to revalidate with; render it.
///
/// Decision: on a 200 the browser navigates to the page itself rather
/// than being handed the body just fetched (`setContent`): a page's
/// scripts need its real origin (relative URLs, same-origin requests,
/// its cookies), which handing over a body would only give through
/// intercepting the tab's requests, an event loop per tab that the
/// supervision keeps out. The cost is the page fetched twice when it
/// changed; an unchanged page costs one 304 and no browser at all.
async fn revalidate(
    engine: &Engine,
    session: Option<&Session>,
    request: &mut PageRequest,
    now: SystemTime,
    dry_run: bool,
) -> Option<Result<Fetched, SourceError>> {
    if request.etag.is_none() && request.last_modified.is_none() {
        return None;
    }
    match fetch_in_session(engine, session, request, now, dry_run).await {
        Ok(Fetched::Page { .. }) => None,
        answered => Some(answered),
    }
}

/// Renders a `render: browser` watch's page in the daemon's browser.
/// The tab starts with the session's cookies (the stored jar read first
/// when it changed) and the watch's own `fetch.cookies`; what the page did
/// to the session's cookies goes back into the jar, written right after
/// (not in a dry run), as after an HTTP fetch. The validators of the
/// page's own response are kept for the next check's conditional request
/// ([`revalidate`]).
async fn render(
    engine: &Engine,
    watch: &Arc<Watch>,
    options: &RenderOptions,
    session: Option<&Session>,
    now: SystemTime,
    dry_run: bool,
) -> Result<Fetched, SourceError> {
    let url = &watch.url;
    let mut given = Vec::new();
    let before = match session {
        Some(session) => {
            session.refresh(&engine.stores).await;
            given = session.jar().browser_cookies();
            session.snapshot()
        }
        None => None,
    };
    let own: Vec<BrowserCookie> = watch
        .fetch
        .cookies
        .iter()
        .filter_map(|(name, value)| {
            Some(BrowserCookie {
                name: name.clone(),
                value: value.expose().to_owned(),
                domain: url.host_str()?.to_owned(),
                host_only: true,
                path: "/".to_owned(),
                secure: false,
                http_only: false,
                expires: None,
            })
        })
        .collect();
    given.extend(own.iter().cloned());
    let hierarchy = match &options.wait_for {
        Some(Ready::Hierarchy(xpath)) => Some(HierarchyTest {
            workers: &engine.workers,
            watch: Arc::clone(watch),
            xpath: xpath.clone(),
            limits: engine.daemon.limits.page,
        }),
        _ => None,
    };
    let rendered = browse(
        engine,
        RenderRequest {
            url,
            options,
            headers: &watch.fetch.headers,
            headers_cross_origin: watch.fetch.headers_cross_origin,
            cookies: &given,
            job: Job::Page,
            hierarchy: hierarchy.as_ref().map(|t| t as &dyn DomTest),
            timeout: watch.fetch.timeout,
            max_bytes: watch.fetch.max_body,
            fence: engine.clients.fence(),
        },
    )
    .await;
    if let Some(session) = session {
        if let Ok(rendered) = &rendered {
            // The watch's own cookies are not the session's: as the page
            // left them, they are not taken into the jar.
            let session_only = |cookies: &[BrowserCookie]| -> Vec<BrowserCookie> {
                cookies
                    .iter()
                    .filter(|c| !own.contains(c))
                    .cloned()
                    .collect()
            };
            session.jar().take_from_browser(
                &session_only(&rendered.given),
                &session_only(&rendered.cookies),
            );
        }
        if !dry_run {
            session
                .save(&engine.stores, before.as_deref(), false, now)
                .await;
        }
    }
    let rendered = rendered?;
    rendered.diagnose(&watch.id);
    Ok(Fetched::Page {
        page: RawPage {
            bytes: rendered.html.into_bytes(),
            content_type: Some("text/html; charset=utf-8".to_owned()),
            url: Some(url.clone()),
        },
        etag: rendered.etag,
        last_modified: rendered.last_modified,
    })
}

/// A `wait_for` over the hierarchy: the rendered DOM built into the
/// page's hierarchy by the check's own builder ([`watch_page::build_page`],
/// the watch's clips included, within the page budget) on a worker
/// thread, and the XPath judged as XPath's `boolean()` judges it (a
/// node-set not empty, a comparison true), so `count(//row) > 2` waits
/// for the third row. Decisions: region clips start without their stored
/// wrappers and a learned template is not applied (both live in the
/// store, and the XPath is about what the page shows, not what the watch
/// keeps of it); the check builds the hierarchy again from the DOM taken
/// (the page is judged and stored exactly as any other).
#[derive(Debug)]
struct HierarchyTest<'e> {
    workers: &'e Workers,
    watch: Arc<Watch>,
    xpath: String,
    limits: PageLimits,
}

impl DomTest for HierarchyTest<'_> {
    fn matches(
        &self,
        html: Arc<str>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + '_>>
    {
        let watch = Arc::clone(&self.watch);
        let xpath = self.xpath.clone();
        let limits = self.limits;
        Box::pin(async move {
            let judged = self.workers.run(move || {
                let budget = Budget::new(limits);
                let url = watch.url.to_string();
                let page = watch_page::build_page(
                    &html,
                    Some(&url),
                    &watch,
                    &std::collections::BTreeMap::new(),
                    None,
                    &budget,
                )
                .map_err(|exceeded| exceeded.to_string())?;
                Ok(holds(&Evaluator::new(&page.hierarchy), &xpath))
            });
            judged.await.map_err(|panicked| panicked.to_string())?
        })
    }
}

/// Whether `xpath` holds on the hierarchy of `ev`, as XPath's `boolean()`
/// of its value: natively when it is a path the flat evaluator takes,
/// else by libxml2. An XPath that fails to evaluate does not hold.
fn holds(ev: &Evaluator<'_>, xpath: &str) -> bool {
    if let Some(hits) = ev.flat().select(xpath) {
        return !hits.is_empty();
    }
    ev.doc()
        .and_then(|doc| doc.evaluate(xpath))
        .is_ok_and(|value| value.to_boolean())
}

/// Renders `req` in the daemon's browser, under the same fence and
/// per-host politeness (a host's `Retry-After` hold included) as an HTTP
/// fetch of its URL.
async fn browse(engine: &Engine, req: RenderRequest<'_>) -> Result<Rendered, SourceError> {
    let url = req.url;
    engine.clients.fence().route(url, url, 0)?;
    let host = url.host_str().unwrap_or_default();
    fetch::refuse_if_held(&engine.limiter, url, req.timeout).await?;
    let _permit = engine.limiter.acquire(host, req.timeout).await;
    engine
        .browsers
        .render(req)
        .await
        .map_err(|source| SourceError::Browser {
            url: url.clone(),
            source: Box::new(source),
        })
}

pub(super) fn page_request(watch: &Watch, status: &WatchStatus, validators: bool) -> PageRequest {
    let f = &watch.fetch;
    PageRequest {
        url: watch.url.clone(),
        opts: FetchOptions {
            max_body_bytes: f.max_body,
            connect_timeout: f.connect_timeout,
            request_timeout: f.timeout,
            max_redirects: f.max_redirects,
            proxy: f.proxy.clone(),
        },
        retries: f.retries,
        headers: f.headers.clone(),
        headers_cross_origin: f.headers_cross_origin,
        cookies: f
            .cookies
            .iter()
            .map(|(n, v)| (n.clone(), v.expose().to_owned()))
            .collect(),
        jar: None,
        credentials: f.auth.as_ref().map(|a| match a {
            Auth::Basic { username, password } => Credentials::Basic {
                username: username.clone(),
                password: password.expose().to_owned(),
            },
            Auth::Bearer { token } => Credentials::Bearer(token.expose().to_owned()),
        }),
        etag: status.etag.clone().filter(|_| validators),
        last_modified: status.last_modified.clone().filter(|_| validators),
    }
}
