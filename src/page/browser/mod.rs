//! Rendering pages in one supervised local Chromium: a URL and a watch's
//! render options in, the rendered DOM (`document.documentElement.outerHTML`)
//! out as text, for the same page budget and hierarchy builder as an HTTP
//! page.
//!
//! # Guarantees
//!
//! - **One browser per daemon, started lazily** on the first render, in its
//!   own process group, with a throw-away profile directory.
//! - **No DevTools port.** The browser speaks DevTools over a pipe
//!   (`--remote-debugging-pipe`); the driver, which speaks it over a
//!   WebSocket only, reaches the pipe through a bridge (`PipeBridge`): a loopback
//!   endpoint at an unguessable path that accepts the driver's one
//!   connection and closes before the first render.
//! - **At most [`BrowserSettings::max_pages`] tabs at once**; a render
//!   waits for a tab within its own deadline. Every tab is closed after its
//!   render, whatever happened.
//! - **A hard deadline** around every DevTools call and around the whole
//!   render (the driver crate has no page-level deadline: a hanging server
//!   or a `while(true)` page would hang its call for ever).
//! - **A watchdog.** A renderer crash (`Inspector.targetCrashed`), a page
//!   that does not finish by its deadline (a spinning script), a browser
//!   process that exits, or a browser whose memory (PSS summed over its
//!   process tree, [`tree_pss`]) passes [`BrowserSettings::memory_cap`]:
//!   the browser is retired and the next render starts a new one. A retired
//!   browser is killed (its whole process group) when the last render
//!   still using it ends, so that only the render that hit the trouble
//!   fails; one over its memory cap or dead is killed at once (which tab
//!   grew cannot be told, and memory is what must be protected).
//! - **Nothing is left behind:** [`Browsers::shutdown`] and dropping the
//!   last handle kill the process group and remove the profile directory.
//!   A daemon killed outright takes its browser with it (the parent-death
//!   signal, set by `setpriv`), and the first start of a later run removes
//!   what a killed run left ([`reap_leftovers`]: profiles whose owner file
//!   names a dead process, and the processes using them).
//!
//! # Decisions
//!
//! - Driver: `chromiumoxide` (DevTools protocol, tokio-native, crash
//!   events), without its browser-downloading feature; the browser is
//!   started here, not by the crate, so that it runs in its own process
//!   group that can be killed whole (see docs/browser.md, "Why chromiumoxide").
//! - `wait_for` is evented, not polled: a `MutationObserver` in the page
//!   resolves a promise when the selector first matches. A `wait_for`
//!   over the *hierarchy* ([`Ready::Hierarchy`]) cannot be judged in the
//!   page: the DOM is taken, handed to the caller's [`DomTest`] (which
//!   builds the hierarchy; this module knows nothing of hierarchies), and
//!   when it does not match, taken again at the next DOM mutation, at most
//!   once per [`REBUILD_EVERY`], until the deadline.
//! - **One fence for every request.** Each tab pauses every request its
//!   page makes (the DevTools `Fetch` domain at the request stage, every
//!   URL: the navigation, each redirect hop, frames, subresources,
//!   `fetch`/XHR, worker scripts) and judges it with the daemon's fence
//!   ([`Fence::judge_request`]) before it is sent: the watch's own origin
//!   trusted as for an HTTP fetch, anything else held to the redirect
//!   rule, names judged by the addresses semclip resolves them to. A
//!   refused request fails in the page (`net::ERR_ACCESS_DENIED`), is
//!   counted and named ([`RequestLog`], [`Rendered::diagnose`]); a refused
//!   navigation fails the render ([`BrowserError::Refused`]). WebSockets,
//!   which `Fetch` does not pause (nor does `Network.setBlockedURLs` stop
//!   them, in Chromium 156), have no route at all ([`NO_WEBSOCKETS`]);
//!   service workers are bypassed, so a page's
//!   requests never go through one. Frames are kept in the page's process
//!   (no site isolation): a frame's requests are its page's to judge.
//! - **Settle before reading.** Without `wait_for`, the page is taken once
//!   it is quiet: no request in flight (the `Network` domain's events) and
//!   no DOM mutation (a `MutationObserver` installed in every document
//!   before its scripts) for [`QUIET`], or at the deadline less a reserve;
//!   [`Settled`] says which.
//! - Images, fonts and media are refused by resource type, as the tab's
//!   requests are paused anyway.
//! - A render is not retried: a page that hung or crashed the browser once
//!   is not given a second chance in the same check.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::cdp::browser_protocol::browser::BrowserContextId;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams as FetchEnable, EventRequestPaused, FailRequestParams,
    HeaderEntry, RequestPattern, RequestStage,
};
use chromiumoxide::cdp::browser_protocol::inspector::{
    EnableParams as InspectorEnable, EventTargetCrashed,
};
use chromiumoxide::cdp::browser_protocol::network::{
    CookieParam, ErrorReason, EventLoadingFailed, EventLoadingFinished, EventRequestWillBeSent,
    EventResponseReceived, ResourceType, SetBypassServiceWorkerParams, TimeSinceEpoch,
};
use chromiumoxide::cdp::browser_protocol::page::{AddScriptToEvaluateOnNewDocumentParams, FrameId};
use chromiumoxide::cdp::browser_protocol::storage::{
    GetCookiesParams as StorageGetCookies, SetCookiesParams as StorageSetCookies,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams, DisposeBrowserContextParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::handler::HandlerConfig;
use futures::{FutureExt, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};
use url::Url;

use crate::page::fence::Fence;
use crate::page::session::BrowserCookie;
use crate::sync::lock;

mod network;
mod process;

use network::*;
use process::*;
pub use process::{reap_leftovers, tree_pss};

/// Tabs open at once by default.
pub const DEFAULT_MAX_PAGES: usize = 4;
/// The browser's memory (PSS, all its processes) beyond which it is
/// restarted, by default: 2 GiB.
pub const DEFAULT_MEMORY_CAP: u64 = 2 << 30;
/// The executables looked for on `PATH`, in order, when none is set.
pub const EXECUTABLES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];
/// How long the browser may take to start and announce its DevTools
/// address.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);
/// How long closing a tab may take before the browser is retired.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the watchdog measures the browser's memory.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);
/// The V8 heap a page may grow (MiB): a page allocating without bound
/// crashes its own renderer long before the browser reaches its memory cap.
pub const PAGE_HEAP_MIB: u64 = 512;

/// The daemon's browser settings (`browser:` in the daemon file).
#[derive(Debug, Clone, PartialEq)]
pub struct BrowserSettings {
    /// The browser executable; `None`: the first of [`EXECUTABLES`] on
    /// `PATH`.
    pub executable: Option<PathBuf>,
    /// Tabs open at once, at least 1.
    pub max_pages: usize,
    /// Memory of all the browser's processes (PSS, [`tree_pss`]), in
    /// bytes, beyond which it is restarted.
    pub memory_cap: u64,
}

impl Default for BrowserSettings {
    fn default() -> BrowserSettings {
        BrowserSettings {
            executable: None,
            max_pages: DEFAULT_MAX_PAGES,
            memory_cap: DEFAULT_MEMORY_CAP,
        }
    }
}

/// What must match in the rendered DOM before the page is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitFor {
    /// A CSS selector (`document.querySelector`).
    Css(String),
    /// An XPath 1.0 expression over the DOM (`document.evaluate`).
    XPath(String),
}

impl WaitFor {
    /// An XPath when `spec` starts like one (`/`, `(`, `./`, `..`), else a
    /// CSS selector (which may start with `.`, a class).
    pub fn parse(spec: &str) -> WaitFor {
        if spec.starts_with(['/', '(']) || spec.starts_with("./") || spec.starts_with("..") {
            WaitFor::XPath(spec.to_owned())
        } else {
            WaitFor::Css(spec.to_owned())
        }
    }

    /// The JavaScript expression of the first element it selects, or
    /// `null`.
    fn element(&self) -> String {
        match self {
            WaitFor::Css(css) => format!("document.querySelector({})", js_string(css)),
            WaitFor::XPath(xpath) => format!(
                "document.evaluate({}, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue",
                js_string(xpath)
            ),
        }
    }

    /// The JavaScript test, a boolean expression.
    fn test(&self) -> String {
        match self {
            WaitFor::Css(css) => format!("!!document.querySelector({})", js_string(css)),
            WaitFor::XPath(xpath) => format!(
                "document.evaluate({}, document, null, XPathResult.BOOLEAN_TYPE, null).booleanValue",
                js_string(xpath)
            ),
        }
    }
}

impl std::fmt::Display for WaitFor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitFor::Css(s) | WaitFor::XPath(s) => f.write_str(s),
        }
    }
}

/// Kinds of subresources a render can do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// Pictures.
    Images,
    /// Web fonts.
    Fonts,
    /// Audio and video.
    Media,
}

impl Resource {
    /// Every kind, the default block list.
    pub const ALL: [Resource; 3] = [Resource::Images, Resource::Fonts, Resource::Media];

    /// The name in watch files.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Images => "images",
            Resource::Fonts => "fonts",
            Resource::Media => "media",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// What must hold before a rendered page is taken (a watch's
/// `fetch.wait_for`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// A selector matching in the DOM, judged in the page.
    Dom(WaitFor),
    /// An XPath over the page's hierarchy, judged by the render's
    /// [`RenderRequest::hierarchy`] test on the DOM taken.
    Hierarchy(String),
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ready::Dom(selector) => selector.fmt(f),
            Ready::Hierarchy(xpath) => write!(f, "hierarchy: {xpath}"),
        }
    }
}

/// A test of a rendered DOM that needs a later stage than this module (a
/// `wait_for` XPath over the hierarchy): the serialised DOM in, whether it
/// matches out, or why it cannot be judged (a page over its budget),
/// which fails the render.
pub trait DomTest: Send + Sync + std::fmt::Debug {
    /// Whether `html` matches.
    fn matches(
        &self,
        html: Arc<str>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool, String>> + Send + '_>>;
}

/// The shortest time between two DOMs taken for a hierarchy `wait_for`:
/// the DOM is taken again at the first mutation after a miss, but never
/// sooner than this after the previous one, so a page that mutates
/// without end (a ticker, an animation) costs at most one serialisation
/// and one hierarchy build per 250 ms of its deadline, each within the
/// page budget, not one per mutation.
pub const REBUILD_EVERY: Duration = Duration::from_millis(250);

/// What a rendered watch's check asks the server before rendering
/// (`fetch.revalidate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Revalidate {
    /// Nothing: the page is rendered at every check. A 304 on the HTML
    /// shell says nothing of the data its scripts fetch, so this is the
    /// default: a rendered check never goes stale.
    #[default]
    Render,
    /// A conditional request for the HTML with the validators of the last
    /// render; a 304 ends the check without a render. For pages whose data
    /// is in their HTML.
    Html,
}

impl Revalidate {
    /// Every choice.
    pub const ALL: [Revalidate; 2] = [Revalidate::Render, Revalidate::Html];

    /// The name in watch files.
    pub fn name(self) -> &'static str {
        match self {
            Revalidate::Render => "render",
            Revalidate::Html => "html",
        }
    }

    /// The choice named `name`.
    pub fn from_name(name: &str) -> Option<Revalidate> {
        Revalidate::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// A watch's render options (`fetch: {render: browser, ...}`).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOptions {
    /// What must match before the page is taken; `None`: the page is taken
    /// once it has settled ([`QUIET`]).
    pub wait_for: Option<Ready>,
    /// The viewport, width and height in CSS pixels.
    pub viewport: (u32, u32),
    /// Subresources not loaded.
    pub block: Vec<Resource>,
    /// What a check asks before rendering.
    pub revalidate: Revalidate,
}

/// The default viewport.
pub const DEFAULT_VIEWPORT: (u32, u32) = (1280, 800);

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            wait_for: None,
            viewport: DEFAULT_VIEWPORT,
            block: Resource::ALL.to_vec(),
            revalidate: Revalidate::default(),
        }
    }
}

/// One step of a browser login (a session's `login.steps`).
#[derive(Clone, PartialEq, Eq)]
pub enum Step {
    /// Types `value` into the field `selector` (its `input` and `change`
    /// events fire, as when a person types).
    Fill {
        /// The field.
        selector: WaitFor,
        /// What is typed; may be a secret, never printed.
        value: String,
    },
    /// Clicks the element `selector`.
    Click(WaitFor),
    /// Waits until `selector` matches, across a navigation the step
    /// before started.
    WaitFor(WaitFor),
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Fill { selector, .. } => write!(f, "Fill({selector}, ***)"),
            Step::Click(selector) => write!(f, "Click({selector})"),
            Step::WaitFor(selector) => write!(f, "WaitFor({selector})"),
        }
    }
}

impl Step {
    /// The step's name and selector, for errors (never the value).
    fn describe(&self) -> String {
        match self {
            Step::Fill { selector, .. } => format!("fill `{selector}`"),
            Step::Click(selector) => format!("click `{selector}`"),
            Step::WaitFor(selector) => format!("wait_for `{selector}`"),
        }
    }
}

/// What a tab does once its page has loaded.
#[derive(Debug, Clone, Copy)]
pub enum Job<'a> {
    /// Waits for the options' `wait_for` and takes the rendered DOM.
    Page,
    /// Runs a session's login steps; no DOM is taken.
    Login(&'a [Step]),
}

/// One render.
#[derive(Debug, Clone, Copy)]
pub struct RenderRequest<'a> {
    /// The page.
    pub url: &'a Url,
    /// The watch's options.
    pub options: &'a RenderOptions,
    /// Extra request headers: added to the requests for the page's origin
    /// only (by the request judge), unless `headers_cross_origin`.
    pub headers: &'a [(String, String)],
    /// Whether the headers go to other origins too (never those that carry
    /// credentials).
    pub headers_cross_origin: bool,
    /// Cookies the tab starts with (a session's jar, the watch's own).
    pub cookies: &'a [BrowserCookie],
    /// What to do once the page has loaded.
    pub job: Job<'a>,
    /// The test of a [`Ready::Hierarchy`] `wait_for`; without one such a
    /// render fails.
    pub hierarchy: Option<&'a dyn DomTest>,
    /// The whole render's deadline, waiting for a tab included.
    pub timeout: Duration,
    /// The largest rendered DOM accepted, in bytes.
    pub max_bytes: u64,
    /// The daemon's fence, which judges every request the page makes.
    pub fence: &'a Fence,
}

/// What a render gives back.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The rendered DOM (empty for [`Job::Login`]).
    pub html: String,
    /// The cookies the tab's browser context held before the page was
    /// loaded: those of [`RenderRequest::cookies`] the browser took.
    pub given: Vec<BrowserCookie>,
    /// The cookies the tab's browser context held at the end: those it was
    /// given, as the page left them, and those it got.
    pub cookies: Vec<BrowserCookie>,
    /// The `ETag` of the page's own response (the last document the tab
    /// navigated to), if it had one: the validator of the next check's
    /// conditional request.
    pub etag: Option<String>,
    /// The `Last-Modified` of the page's own response, if it had one.
    pub last_modified: Option<String>,
    /// What the fence and the `block` list did to the page's requests.
    pub requests: RequestLog,
    /// How the render waited for the page to settle (no `wait_for`).
    pub settled: Option<Settled>,
}

/// How many refused requests a [`RequestLog`] names.
pub const NAMED_REFUSALS: usize = 10;

/// What became of a render's requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestLog {
    /// Requests let through.
    pub allowed: u64,
    /// Requests of a kind the watch's `block` names, failed unsent.
    pub blocked: u64,
    /// Requests the fence refused, failed in the page as network errors.
    pub refused: u64,
    /// The first [`NAMED_REFUSALS`] refused, each as `URL (why)`.
    pub named: Vec<String>,
}

impl RequestLog {
    /// The refused requests for a message: named, then how many more.
    pub fn refusals(&self) -> String {
        let mut text = self.named.join("; ");
        let more = self.refused.saturating_sub(self.named.len() as u64);
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        text
    }

    fn refuse(&mut self, url: &str, why: &str) {
        self.refused += 1;
        if self.named.len() < NAMED_REFUSALS {
            // A data: URL or a long query is cut: the message names it.
            let url: String = url.chars().take(200).collect();
            self.named.push(format!("{url} ({why})"));
        }
    }
}

/// How long a page without `wait_for` must be quiet, no request in flight
/// and no DOM mutation, before it is taken.
pub const QUIET: Duration = Duration::from_millis(500);
/// How often the settle wait looks at the page.
const SETTLE_POLL: Duration = Duration::from_millis(100);
/// The time kept, at most, from the settle wait for serialising the DOM
/// (never more than a quarter of what is left of the deadline).
const SETTLE_RESERVE: Duration = Duration::from_secs(1);

/// How a render without `wait_for` waited for its page to settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// From the `load` event to the DOM taken.
    pub waited: Duration,
    /// True: the page was quiet for [`QUIET`]; false: the wait reached its
    /// bound (the deadline less a reserve) and the page was taken as it
    /// was.
    pub quiet: bool,
    /// Requests still in flight when the page was taken.
    pub in_flight: usize,
}

impl std::fmt::Display for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.waited.as_millis();
        if self.quiet {
            write!(
                f,
                "settled {ms} ms after load: no request in flight and no DOM mutation for {} ms",
                QUIET.as_millis()
            )
        } else {
            write!(
                f,
                "taken {ms} ms after load at the settle bound, not quiet ({} requests in flight)",
                self.in_flight
            )
        }
    }
}

impl Rendered {
    /// Logs the render's diagnostics for `watch`: what became of the
    /// page's requests (each refused one named, as a warning) and how the
    /// page settled.
    pub fn diagnose(&self, watch: &str) {
        let r = &self.requests;
        if r.refused > 0 {
            tracing::warn!(
                watch,
                refused = r.refused,
                requests = %r.refusals(),
                "the fence refused requests of the rendered page"
            );
        }
        let settle = self
            .settled
            .as_ref()
            .map_or_else(|| "wait_for".to_owned(), Settled::to_string);
        tracing::info!(
            watch,
            allowed = r.allowed,
            blocked = r.blocked,
            refused = r.refused,
            settle = %settle,
            "page rendered"
        );
    }
}

/// Why a render failed.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No executable was found or set.
    #[error("no browser found: set browser.executable or install one of {}", EXECUTABLES.join(", "))]
    NotFound,
    /// The browser could not be started.
    #[error("cannot start the browser `{}`: {reason}", executable.display())]
    Launch {
        /// The executable.
        executable: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The daemon is stopping.
    #[error("the browser is shut down")]
    ShutDown,
    /// The deadline passed before a tab was free.
    #[error("no browser tab became free within {}s", timeout.as_secs_f32())]
    Busy {
        /// The deadline.
        timeout: Duration,
    },
    /// The deadline passed during the render.
    #[error("the page did not render within {}s ({step}); the browser is restarted", timeout.as_secs_f32())]
    Timeout {
        /// The deadline.
        timeout: Duration,
        /// What was under way.
        step: &'static str,
    },
    /// `wait_for` matched nothing by the deadline.
    #[error("wait_for `{wait_for}` matched nothing within {}s", timeout.as_secs_f32())]
    WaitFor {
        /// The selector.
        wait_for: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The tab's renderer crashed.
    #[error("the page crashed its renderer; the browser is restarted")]
    Crashed,
    /// The browser process ended or was killed.
    #[error("the browser stopped during the render ({reason}); it is restarted")]
    Died {
        /// Why, when known.
        reason: String,
    },
    /// The page failed: a script threw (a `wait_for` the browser cannot
    /// parse), the navigation failed, the browser refused a command.
    #[error("{step}: {reason}")]
    Page {
        /// What was under way.
        step: &'static str,
        /// The browser's message.
        reason: String,
    },
    /// The connection to the browser failed or a call got no answer.
    #[error("the browser failed at {step}: {reason}")]
    Protocol {
        /// What was under way.
        step: &'static str,
        /// The driver's error.
        reason: String,
    },
    /// A login step found nothing to act on, or what it waits for, by the
    /// deadline.
    #[error("login step {n} ({step}) matched nothing within {}s", timeout.as_secs_f32())]
    Step {
        /// The step, from 1.
        n: usize,
        /// What it is (name and selector, never a value).
        step: String,
        /// The deadline.
        timeout: Duration,
    },
    /// The rendered DOM is over the size cap.
    #[error("the rendered page is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The cap.
        limit: u64,
    },
    /// The page's own navigation failed, and the fence had refused
    /// requests of the page (a redirect of its URL, most likely).
    #[error("{reason}; refused by the fence: {}", requests.refusals())]
    Refused {
        /// The browser's message.
        reason: String,
        /// The page's requests.
        requests: RequestLog,
    },
}

/// The daemon's browser: started on first use, restarted by the watchdog.
/// Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Browsers {
    settings: BrowserSettings,
    /// One permit per tab. Owned here; closed by [`Browsers::shutdown`].
    tabs: Arc<Semaphore>,
    /// The browser in use, if started and not retired.
    current: tokio::sync::Mutex<Option<Arc<Instance>>>,
    /// A start under way, in a task of its own (locked only while
    /// `current` is): a render whose deadline ends while the browser
    /// starts leaves the start running here for the next render, rather
    /// than cancelling it (on a slow machine, with short timeouts, every
    /// render would otherwise start the browser anew and none finish).
    starting: tokio::sync::Mutex<Option<JoinHandle<Result<Instance, BrowserError>>>>,
    /// Every browser started that may still run, to kill at shutdown.
    groups: Arc<Mutex<Vec<u32>>>,
    /// How many browsers were started (log and tests).
    launches: AtomicU64,
    shut: AtomicBool,
}

impl Browsers {
    /// No browser yet; one is started on the first render.
    pub fn new(settings: BrowserSettings) -> Browsers {
        Browsers {
            tabs: Arc::new(Semaphore::new(settings.max_pages.max(1))),
            settings,
            current: tokio::sync::Mutex::new(None),
            starting: tokio::sync::Mutex::new(None),
            groups: Arc::new(Mutex::new(Vec::new())),
            launches: AtomicU64::new(0),
            shut: AtomicBool::new(false),
        }
    }

    /// How many browsers were started so far.
    pub fn launches(&self) -> u64 {
        self.launches.load(Ordering::Relaxed)
    }

    /// The process id of the browser in use, if one runs.
    pub async fn pid(&self) -> Option<u32> {
        self.current.lock().await.as_ref().map(|i| i.pid)
    }

    /// Renders `req`: waits for a tab, starts the browser if needed, loads
    /// the page, waits for `wait_for`, and returns the serialised DOM.
    pub async fn render(&self, req: RenderRequest<'_>) -> Result<Rendered, BrowserError> {
        let deadline = Instant::now() + req.timeout;
        let _tab = match timeout_at(deadline, Arc::clone(&self.tabs).acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(BrowserError::ShutDown),
            Err(_) => {
                return Err(BrowserError::Busy {
                    timeout: req.timeout,
                });
            }
        };
        let instance = match timeout_at(deadline, self.instance()).await {
            Ok(instance) => instance?,
            Err(_) => {
                return Err(BrowserError::Timeout {
                    timeout: req.timeout,
                    step: "starting the browser",
                });
            }
        };
        let result = instance.render(req, deadline).await;
        match &result {
            Err(error) if retires(error) => self.retire(&instance, error).await,
            Ok(_) if !instance.usable() => {
                self.retire(
                    &instance,
                    &BrowserError::Protocol {
                        step: "closing the tab",
                        reason: "no answer".into(),
                    },
                )
                .await;
            }
            _ => {}
        }
        result
    }

    /// Kills every browser started, waits (at most [`CLOSE_TIMEOUT`]) until
    /// their processes are gone, and refuses further renders.
    pub async fn shutdown(&self) {
        self.shut.store(true, Ordering::SeqCst);
        self.tabs.close();
        self.current.lock().await.take();
        // A start under way is stopped before the kill (its process, if
        // spawned, is in `groups` and killed on drop).
        if let Some(start) = self.starting.lock().await.take() {
            start.abort();
            let _ = start.await;
        }
        let groups: Vec<u32> = lock(&self.groups).clone();
        let strays = kill_groups(&self.groups);
        let deadline = Instant::now() + CLOSE_TIMEOUT;
        while Instant::now() < deadline {
            let (groups, strays) = (groups.clone(), strays.clone());
            let running = tokio::task::spawn_blocking(move || {
                groups.iter().any(|&g| group_running(g)) || strays.iter().any(|&p| running(p))
            })
            .await
            .unwrap_or(false);
            if !running {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if Instant::now() >= deadline {
            tracing::warn!("browser processes still running after the kill");
        }
        let _ = tokio::task::spawn_blocking(remove_profiles).await;
    }

    /// The browser in use, started when there is none or it died.
    async fn instance(&self) -> Result<Arc<Instance>, BrowserError> {
        let mut current = self.current.lock().await;
        if self.shut.load(Ordering::SeqCst) {
            return Err(BrowserError::ShutDown);
        }
        if let Some(instance) = current.as_ref() {
            if instance.usable() {
                return Ok(Arc::clone(instance));
            }
            tracing::warn!(pid = instance.pid, "browser not usable; starting another");
            current.take();
        }
        let executable = match &self.settings.executable {
            Some(path) => path.clone(),
            None => find_executable().ok_or(BrowserError::NotFound)?,
        };
        let mut starting = self.starting.lock().await;
        let start = match starting.as_mut() {
            Some(start) => start,
            None => {
                let (executable, settings) = (executable.clone(), self.settings.clone());
                let groups = Arc::clone(&self.groups);
                starting.insert(tokio::spawn(async move {
                    Instance::launch(&executable, &settings, groups).await
                }))
            }
        };
        // Awaited by reference: a caller cancelled here (its deadline)
        // leaves the start in `starting`, and the next caller takes its
        // result.
        let joined = start.await;
        starting.take();
        let instance = Arc::new(joined.map_err(|e| BrowserError::Launch {
            executable: executable.clone(),
            reason: format!("the start failed: {e}"),
        })??);
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(pid = instance.pid, launches = n, executable = %executable.display(), "browser started");
        *current = Some(Arc::clone(&instance));
        Ok(instance)
    }

    /// Stops handing out `instance`: the next render starts another. It is
    /// killed when the last render using it ends (or at once when it is
    /// dead or over its memory cap).
    async fn retire(&self, instance: &Arc<Instance>, why: &BrowserError) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, instance)) {
            tracing::warn!(pid = instance.pid, reason = %why, "browser retired");
            current.take();
        }
    }
}

impl Drop for Browsers {
    fn drop(&mut self) {
        kill_groups(&self.groups);
    }
}

/// Whether `error` means the browser should not be used again.
fn retires(error: &BrowserError) -> bool {
    matches!(
        error,
        BrowserError::Timeout { .. }
            | BrowserError::Crashed
            | BrowserError::Died { .. }
            | BrowserError::Protocol { .. }
    )
}

/// The first of [`EXECUTABLES`] on `PATH`.
pub fn find_executable() -> Option<PathBuf> {
    EXECUTABLES.iter().find_map(|name| find_on_path(name))
}

/// The executable `name` in the first directory of `PATH` holding it.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// One running browser.
struct Instance {
    pid: u32,
    browser: Browser,
    /// True once the process ended (set by the reaper task), with why.
    dead: watch::Receiver<Option<String>>,
    /// The handler, reaper, log and watchdog tasks; aborted on drop.
    tasks: Vec<JoinHandle<()>>,
    /// The profile directory, removed on drop.
    dir: PathBuf,
    /// Set when a tab could not be closed: retired after this render.
    spoiled: AtomicBool,
    groups: Arc<Mutex<Vec<u32>>>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").field("pid", &self.pid).finish()
    }
}

impl Instance {
    /// Starts `executable` in a process group of its own and connects to
    /// it.
    #[expect(
        clippy::too_many_lines,
        reason = "the launch's steps in order (command line, pipe bridge, handshake, driver, reaper), each short; apart they would hide the order"
    )]
    async fn launch(
        executable: &Path,
        settings: &BrowserSettings,
        groups: Arc<Mutex<Vec<u32>>>,
    ) -> Result<Instance, BrowserError> {
        let failed = |reason: String| BrowserError::Launch {
            executable: executable.to_owned(),
            reason,
        };
        static REAPED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
        REAPED
            .get_or_init(|| async {
                let _ = tokio::task::spawn_blocking(reap_leftovers).await;
            })
            .await;
        let dir = profile_dir().map_err(|e| failed(format!("no profile directory: {e}")))?;
        // The browser dies with this process however it dies: `setpriv`
        // (util-linux) sets the parent-death signal and execs it (this
        // crate forbids `unsafe`, which `pre_exec` needs). The "parent" is
        // the spawning thread: a runtime worker, living as long as the
        // runtime. Without `setpriv`, a leftover is reaped at the next
        // start (`reap_leftovers`).
        let mut command = match find_on_path("setpriv") {
            Some(setpriv) => {
                let mut command = Command::new(setpriv);
                command.args(["--pdeathsig", "KILL", "--"]);
                command
            }
            None => {
                tracing::warn!("no setpriv on PATH: the browser may outlive a killed daemon");
                Command::new("sh")
            }
        };
        // DevTools over a pipe (`--remote-debugging-pipe`: commands in on
        // fd 3, answers out on fd 4), not a TCP port any local process
        // could drive. The pipes are handed over as the child's standard
        // input and output (the only descriptors `std` hands a child
        // without `unsafe`), moved to 3 and 4 by `sh` before it execs the
        // browser.
        let pipes = std::io::pipe().and_then(|to| Ok((to, std::io::pipe()?)));
        let ((browser_in, to_browser), (from_browser, browser_out)) = match pipes {
            Ok(pipes) => pipes,
            Err(e) => {
                remove_profile(&dir);
                return Err(failed(format!("no pipe: {e}")));
            }
        };
        if command.as_std().get_program() != "sh" {
            command.arg("sh");
        }
        command
            .args([
                "-c",
                "exec 3<&0 4>&1 </dev/null >/dev/null && exec \"$0\" \"$@\"",
            ])
            .arg(executable)
            .args(browser_args(&dir))
            .process_group(0)
            .kill_on_drop(true)
            .stdin(std::process::Stdio::from(browser_in))
            .stdout(std::process::Stdio::from(browser_out))
            .stderr(std::process::Stdio::piped());
        let spawned = command.spawn();
        // The child's ends are the child's alone from here: a read of its
        // answers ends when it exits.
        drop(command);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                remove_profile(&dir);
                return Err(failed(e.to_string()));
            }
        };
        let Some(pid) = child.id() else {
            remove_profile(&dir);
            return Err(failed("it exited at once".into()));
        };
        lock(&groups).push(pid);
        let cleanup = |reason: String| {
            kill_group(pid);
            lock(&groups).retain(|g| *g != pid);
            remove_profile(&dir);
            failed(reason)
        };
        let Some(stderr) = child.stderr.take() else {
            return Err(cleanup("no standard error".into()));
        };
        let mut lines = BufReader::new(stderr).lines();
        let (ws, bridge) = match PipeBridge::start(to_browser, from_browser).await {
            Ok(bridge) => bridge,
            Err(e) => return Err(cleanup(format!("cannot bridge its DevTools pipe: {e}"))),
        };
        let config = HandlerConfig {
            ignore_https_errors: false,
            request_timeout: LAUNCH_TIMEOUT,
            ..HandlerConfig::default()
        };
        let connected = tokio::time::timeout(
            LAUNCH_TIMEOUT,
            Browser::connect_with_config(ws.clone(), config),
        )
        .await;
        let (browser, mut handler) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(cleanup(format!("cannot connect to {ws}: {e}"))),
            Err(_) => return Err(cleanup(format!("no answer from {ws}"))),
        };
        let (dead_tx, dead) = watch::channel(None);
        let dead_tx = Arc::new(dead_tx);
        let mut tasks = bridge;
        // The driver's event loop: it must be polled for any call to
        // complete.
        tasks.push(tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(error) = event {
                    tracing::debug!(error = %crate::ErrorChain(&error), "browser connection event");
                }
            }
        }));
        // The browser's log, read so that its pipe never fills.
        tasks.push(tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::trace!(line = %line, "browser");
            }
        }));
        // The reaper: the process ending, for whatever reason.
        let reaped = Arc::clone(&dead_tx);
        tasks.push(tokio::spawn(async move {
            let status = child.wait().await;
            let reason = match status {
                Ok(status) => status.to_string(),
                Err(e) => e.to_string(),
            };
            tracing::warn!(pid, %reason, "browser process ended");
            reaped.send_if_modified(|d| {
                let first = d.is_none();
                if first {
                    *d = Some(reason);
                }
                first
            });
        }));
        // The memory watchdog.
        let cap = settings.memory_cap;
        tasks.push(tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let tree = tokio::task::spawn_blocking(move || tree_memory(pid))
                    .await
                    .unwrap_or_default();
                let pss: u64 = tree.iter().map(|p| p.pss).sum();
                match over_cap(&tree, cap) {
                    None => {}
                    // One page's renderer holds the excess: it goes, and
                    // its render fails as a crashed renderer; the others
                    // go on.
                    Some(Some(renderer)) => {
                        tracing::warn!(
                            pid,
                            renderer,
                            pss,
                            cap,
                            "browser over its memory cap; killing its largest renderer"
                        );
                        if let Some(p) = rustix::process::Pid::from_raw(renderer as i32) {
                            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                        }
                    }
                    Some(None) => {
                        let reason = format!("{pss} bytes of PSS, over the cap of {cap}");
                        tracing::warn!(pid, pss, cap, "browser over its memory cap; killing it");
                        dead_tx.send_replace(Some(reason));
                        kill_group(pid);
                        return;
                    }
                }
            }
        }));
        // Up once it answers: the bridge accepts the driver at once, so a
        // connection alone says nothing of the browser (it may still be
        // starting, or never start).
        let mut exited = dead.clone();
        let answered = tokio::select! {
            answered = tokio::time::timeout(LAUNCH_TIMEOUT, browser.version()) => match answered {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(format!("no answer to its first command: {e}")),
                Err(_) => Err(format!("no answer within {}s", LAUNCH_TIMEOUT.as_secs())),
            },
            ended = exited.wait_for(Option::is_some) => {
                Err(format!("it exited: {}", ended.ok().and_then(|d| d.clone()).unwrap_or_default()))
            }
        };
        if let Err(reason) = answered {
            for task in &tasks {
                task.abort();
            }
            return Err(cleanup(reason));
        }
        Ok(Instance {
            pid,
            browser,
            dead,
            tasks,
            dir,
            spoiled: AtomicBool::new(false),
            groups,
        })
    }

    fn is_dead(&self) -> bool {
        self.dead.borrow().is_some()
    }

    /// Whether a new render may use this browser.
    fn usable(&self) -> bool {
        !self.is_dead() && !self.spoiled.load(Ordering::SeqCst)
    }

    /// Resolves when the process ended or was killed, with why.
    async fn died(&self) -> String {
        let mut dead = self.dead.clone();
        match dead.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "its watcher stopped".to_owned(),
        }
    }

    /// One render in a new tab of a new browser context (cookies and
    /// storage of its own: one watch's session never reaches another's
    /// page), disposed of afterwards.
    async fn render(
        &self,
        req: RenderRequest<'_>,
        deadline: Instant,
    ) -> Result<Rendered, BrowserError> {
        let timeout = req.timeout;
        let opened = async {
            let context = self
                .browser
                .create_browser_context(CreateBrowserContextParams::default())
                .await
                .map_err(protocol("opening a browser context"))?;
            if !req.cookies.is_empty() {
                let params = StorageSetCookies::builder()
                    .cookies(req.cookies.iter().map(cookie_param))
                    .browser_context_id(context.clone())
                    .build()
                    .map_err(|reason| BrowserError::Page {
                        step: "setting cookies",
                        reason,
                    })?;
                self.browser
                    .execute(params)
                    .await
                    .map_err(protocol("setting cookies"))?;
            }
            let given = context_cookies(&self.browser, &context).await?;
            let mut params = CreateTargetParams::new("about:blank");
            params.browser_context_id = Some(context.clone());
            let page = self
                .browser
                .new_page(params)
                .await
                .map_err(protocol("opening a tab"))?;
            Ok::<_, BrowserError>((context, page, given))
        };
        let (context, page, given) = tokio::select! {
            opened = timeout_at(deadline, opened) => {
                opened.map_err(|_| BrowserError::Timeout { timeout, step: "opening a tab" })??
            }
            reason = self.died() => return Err(BrowserError::Died { reason }),
        };
        let result = tokio::select! {
            result = timeout_at(deadline, load(&self.browser, &page, &context, req, given, deadline)) => {
                result.unwrap_or(Err(BrowserError::Timeout { timeout, step: "loading the page" }))
            }
            reason = self.died() => Err(BrowserError::Died { reason }),
        };
        if let Err(error) = &result
            && retires(error)
        {
            // The browser is retired; its tabs go with it. Closing a tab
            // whose renderer spins or died could only wait.
            return result;
        }
        let closed = self.close(context).await;
        match (result, closed) {
            (Ok(page), Err(error)) => {
                // The page is good; the browser is not.
                tracing::warn!(pid = self.pid, error = %crate::ErrorChain(&error), "cannot close a tab");
                self.spoiled.store(true, Ordering::SeqCst);
                Ok(page)
            }
            (result, _) => result,
        }
    }

    /// Disposes of the browser context `context` and so closes its tab
    /// (no beforeunload hooks) and forgets its cookies.
    async fn close(&self, context: BrowserContextId) -> Result<(), BrowserError> {
        if self.is_dead() {
            return Ok(());
        }
        match tokio::time::timeout(
            CLOSE_TIMEOUT,
            self.browser
                .execute(DisposeBrowserContextParams::new(context)),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(protocol("closing the tab")(e)),
            Err(_) => Err(BrowserError::Timeout {
                timeout: CLOSE_TIMEOUT,
                step: "closing the tab",
            }),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        kill_group(self.pid);
        lock(&self.groups).retain(|g| *g != self.pid);
        // The profile goes once its processes are gone: removed while one
        // still writes, it would come back in part. The wait is bounded
        // and off the async workers; shutdown removes what is left.
        let (pid, dir) = (self.pid, self.dir.clone());
        let _ = std::thread::Builder::new()
            .name("semclip-profile".into())
            .spawn(move || {
                wait_group_gone(pid, CLOSE_TIMEOUT);
                remove_profile(&dir);
            });
        tracing::debug!(pid = self.pid, "browser stopped");
    }
}

/// Loads `req` in `page`: options, navigation, then `wait_for` and
/// serialisation or the login steps, and the context's cookies.
async fn load(
    browser: &Browser,
    page: &chromiumoxide::Page,
    context: &BrowserContextId,
    req: RenderRequest<'_>,
    given: Vec<BrowserCookie>,
    deadline: Instant,
) -> Result<Rendered, BrowserError> {
    let mut crashed = page
        .event_listener::<EventTargetCrashed>()
        .await
        .map_err(protocol("listening for crashes"))?;
    page.execute(InspectorEnable::default())
        .await
        .map_err(protocol("listening for crashes"))?;
    // Every request of the page is judged from here on, until the tab
    // closes (the task is stopped when `net` goes).
    let net = Network::watch(page, &req).await?;
    let work = async {
        let (width, height) = req.options.viewport;
        page.execute(SetDeviceMetricsOverrideParams::new(
            width, height, 1.0, false,
        ))
        .await
        .map_err(protocol("setting the viewport"))?;
        // Installed for every document before its first script: the
        // settle wait reads when the DOM last changed.
        if req.options.wait_for.is_none() && matches!(req.job, Job::Page) {
            page.execute(AddScriptToEvaluateOnNewDocumentParams::new(QUIET_INSTALL))
                .await
                .map_err(protocol("watching the DOM"))?;
        }
        let mut responses = page
            .event_listener::<EventResponseReceived>()
            .await
            .map_err(protocol("listening for responses"))?;
        let navigated = tokio::select! {
            navigated = page.goto(req.url.as_str()) => navigated.map(drop),
            () = net.refused_navigation.notified() => {
                net.loaded.store(true, Ordering::SeqCst);
                return Err(BrowserError::Refused {
                    reason: "the fence refused the page's own navigation".to_owned(),
                    requests: lock(&net.log).clone(),
                });
            }
        };
        net.loaded.store(true, Ordering::SeqCst);
        check_loaded(page, navigated, &net).await?;
        let main = page.mainframe().await.ok().flatten();
        let (etag, last_modified) = document_validators(&mut responses, main.as_ref());
        drop(responses);
        let mut settled = None;
        let html = match req.job {
            Job::Page => {
                if req.options.wait_for.is_none() {
                    let quiet = settle(page, &net, deadline).await;
                    tracing::debug!(url = %req.url, %quiet, "page settled");
                    settled = Some(quiet);
                }
                let html = take_page(page, req, deadline).await?;
                check_loaded(page, Ok(()), &net).await?;
                html
            }
            Job::Login(steps) => {
                run_steps(page, steps, req.timeout, deadline).await?;
                String::new()
            }
        };
        let cookies = context_cookies(browser, context).await?;
        Ok(Rendered {
            html,
            given,
            cookies,
            etag,
            last_modified,
            requests: lock(&net.log).clone(),
            settled,
        })
    };
    tokio::select! {
        result = work => result,
        _ = crashed.next() => Err(BrowserError::Crashed),
    }
}

/// The `ETag` and `Last-Modified` of the last document response of the
/// main frame `main` among the responses heard so far (the navigation's
/// own, after any redirects; the driver hands each event to the listener
/// before the navigation it belongs to completes).
fn document_validators(
    responses: &mut chromiumoxide::listeners::EventStream<EventResponseReceived>,
    main: Option<&FrameId>,
) -> (Option<String>, Option<String>) {
    let mut found = (None, None);
    while let Some(Some(event)) = responses.next().now_or_never() {
        if event.r#type != ResourceType::Document || event.frame_id.as_ref() != main {
            continue;
        }
        let header = |name: &str| {
            event
                .response
                .headers
                .inner()
                .as_object()?
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))?
                .1
                .as_str()
                .map(str::to_owned)
        };
        found = (header("etag"), header("last-modified"));
    }
    found
}

/// The cookies the browser context `context` holds.
async fn context_cookies(
    browser: &Browser,
    context: &BrowserContextId,
) -> Result<Vec<BrowserCookie>, BrowserError> {
    Ok(browser
        .execute(
            StorageGetCookies::builder()
                .browser_context_id(context.clone())
                .build(),
        )
        .await
        .map_err(protocol("reading cookies"))?
        .result
        .cookies
        .iter()
        .map(jar_cookie)
        .collect())
}

/// Waits for the options' `wait_for` and serialises the DOM.
async fn take_page(
    page: &chromiumoxide::Page,
    req: RenderRequest<'_>,
    deadline: Instant,
) -> Result<String, BrowserError> {
    let html = match &req.options.wait_for {
        None => evaluate::<String>(page, SERIALISE)
            .await
            .map_err(protocol("reading the DOM"))?,
        Some(ready) => {
            let waited = async {
                match (ready, req.hierarchy) {
                    (Ready::Dom(wait_for), _) => wait_dom(page, wait_for).await,
                    (Ready::Hierarchy(_), Some(test)) => {
                        wait_hierarchy(page, test, req.max_bytes, deadline).await
                    }
                    (Ready::Hierarchy(_), None) => Err(BrowserError::Page {
                        step: "waiting for wait_for",
                        reason: "no hierarchy test was given".into(),
                    }),
                }
            };
            timeout_at(deadline, waited)
                .await
                .map_err(|_| BrowserError::WaitFor {
                    wait_for: ready.to_string(),
                    timeout: req.timeout,
                })??
        }
    };
    if html.len() as u64 > req.max_bytes {
        return Err(BrowserError::TooLarge {
            limit: req.max_bytes,
        });
    }
    Ok(html)
}

/// Waits (evented, in the page) until the selector `wait_for` matches,
/// then serialises the DOM.
async fn wait_dom(page: &chromiumoxide::Page, wait_for: &WaitFor) -> Result<String, BrowserError> {
    evaluate::<bool>(page, &wait_script(wait_for))
        .await
        .map_err(protocol("waiting for wait_for"))?;
    evaluate::<String>(page, SERIALISE)
        .await
        .map_err(protocol("reading the DOM"))
}

/// Takes the DOM until `test` finds it ready: at once, then after each
/// miss at the next DOM mutation (or at once if one came meanwhile), at
/// most once per [`REBUILD_EVERY`]. A document replaced by a navigation
/// is taken anew. Runs until `test` matches; the caller holds the
/// deadline.
async fn wait_hierarchy(
    page: &chromiumoxide::Page,
    test: &dyn DomTest,
    max_bytes: u64,
    deadline: Instant,
) -> Result<String, BrowserError> {
    // The document and mutation count the last DOM taken was at.
    let mut seen = (String::new(), -1i64);
    let mut last: Option<Instant> = None;
    loop {
        if let Some(at) = last {
            tokio::time::sleep_until((at + REBUILD_EVERY).min(deadline)).await;
        }
        let taken: (String, i64, String) = match evaluate(page, &next_dom_script(&seen)).await {
            Ok(taken) => taken,
            Err(error) => match protocol("waiting for wait_for")(error) {
                BrowserError::Page { ref reason, .. } if navigated(reason) => {
                    tokio::time::sleep(NAVIGATION_RETRY).await;
                    continue;
                }
                error => return Err(error),
            },
        };
        let (document, mutations, html) = taken;
        if html.len() as u64 > max_bytes {
            return Err(BrowserError::TooLarge { limit: max_bytes });
        }
        last = Some(Instant::now());
        let html: Arc<str> = html.into();
        let matched =
            test.matches(Arc::clone(&html))
                .await
                .map_err(|reason| BrowserError::Page {
                    step: "waiting for wait_for",
                    reason,
                })?;
        if matched {
            return Ok(html.to_string());
        }
        seen = (document, mutations);
    }
}

/// A promise of `[document, mutations, DOM]` once the page differs from
/// `seen` (another document, or mutations since): at once when it does,
/// else at its next mutation. The first call installs a
/// `MutationObserver` that counts mutations for the document's life;
/// installing and serialising in one task means no mutation falls between
/// them.
fn next_dom_script(seen: &(String, i64)) -> String {
    let (document, mutations) = seen;
    let document = js_string(document);
    format!(
        "new Promise((resolve) => {{
            let s = window.__semclipReady;
            if (!s) {{
                s = {{ id: Math.random().toString(36).slice(2), n: 0, wake: null }};
                window.__semclipReady = s;
                new MutationObserver(() => {{
                    s.n++;
                    const wake = s.wake;
                    s.wake = null;
                    if (wake) wake();
                }}).observe(document, {{ childList: true, subtree: true, attributes: true, characterData: true }});
            }}
            const take = () => resolve([s.id, s.n, {SERIALISE}]);
            if (s.id !== {document} || s.n !== {mutations}) {{ take(); return; }}
            s.wake = take;
        }})"
    )
}

/// How long a login step waits before trying again when the page it
/// acted on was replaced by a navigation (the step's script ran in a
/// document that is gone): the new document's `load` cannot be awaited
/// from the old one.
const NAVIGATION_RETRY: Duration = Duration::from_millis(100);

/// Runs the login `steps` in `page`, each waiting (evented, by the
/// deadline) for its element first. A step whose document is replaced by
/// a navigation under it is run again in the new document.
async fn run_steps(
    page: &chromiumoxide::Page,
    steps: &[Step],
    timeout: Duration,
    deadline: Instant,
) -> Result<(), BrowserError> {
    for (i, step) in steps.iter().enumerate() {
        let failed = || BrowserError::Step {
            n: i + 1,
            step: step.describe(),
            timeout,
        };
        let script = step_script(step);
        loop {
            match timeout_at(deadline, evaluate::<bool>(page, &script)).await {
                Err(_) => return Err(failed()),
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => return Err(failed()),
                Ok(Err(error)) => {
                    let error = protocol("running a login step")(error);
                    if !matches!(error, BrowserError::Page { ref reason, .. } if navigated(reason))
                    {
                        return Err(error);
                    }
                    if timeout_at(deadline, tokio::time::sleep(NAVIGATION_RETRY))
                        .await
                        .is_err()
                    {
                        return Err(failed());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Whether a script's error says its document went away (a navigation).
fn navigated(reason: &str) -> bool {
    [
        "context was destroyed",
        "Cannot find context",
        "Promise was collected",
        "Inspected target navigated",
    ]
    .iter()
    .any(|m| reason.contains(m))
}

/// The script of one login step: a promise resolving to true once its
/// element is found (at once or at the DOM mutation that adds it) and
/// acted on.
fn step_script(step: &Step) -> String {
    let (selector, act) = match step {
        Step::Fill { selector, value } => (
            selector,
            format!(
                "el.focus(); el.value = {}; \
                 el.dispatchEvent(new Event('input', {{bubbles: true}})); \
                 el.dispatchEvent(new Event('change', {{bubbles: true}}));",
                js_string(value)
            ),
        ),
        Step::Click(selector) => (selector, "el.click();".to_owned()),
        Step::WaitFor(selector) => (selector, String::new()),
    };
    let find = selector.element();
    format!(
        "new Promise((resolve) => {{
            const run = () => {{
                const el = {find};
                if (!el) return false;
                {act}
                return true;
            }};
            if (run()) {{ resolve(true); return; }}
            const observer = new MutationObserver(() => {{
                if (run()) {{ observer.disconnect(); resolve(true); }}
            }});
            observer.observe(document, {{ childList: true, subtree: true, attributes: true, characterData: true }});
        }})"
    )
}

/// The DevTools form of a jar's cookie.
fn cookie_param(c: &BrowserCookie) -> CookieParam {
    let mut param = CookieParam::new(c.name.clone(), c.value.clone());
    if c.host_only {
        let scheme = if c.secure { "https" } else { "http" };
        param.url = Some(format!("{scheme}://{}{}", c.domain, c.path));
    } else {
        param.domain = Some(format!(".{}", c.domain));
    }
    param.path = Some(c.path.clone());
    param.secure = Some(c.secure);
    param.http_only = Some(c.http_only);
    param.expires = c.expires.map(|at| TimeSinceEpoch::new(at as f64));
    param
}

/// A browser's cookie as the jar takes it back.
fn jar_cookie(c: &chromiumoxide::cdp::browser_protocol::network::Cookie) -> BrowserCookie {
    let (domain, host_only) = match c.domain.strip_prefix('.') {
        Some(domain) => (domain.to_owned(), false),
        None => (c.domain.clone(), true),
    };
    BrowserCookie {
        name: c.name.clone(),
        value: c.value.clone(),
        domain,
        host_only,
        path: c.path.clone(),
        secure: c.secure,
        http_only: c.http_only,
        expires: (!c.session && c.expires > 0.0).then_some(c.expires as i64),
    }
}

/// The rendered document, doctype included (quirks mode follows it).
const SERIALISE: &str = "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML";

/// A promise resolving to true when `wait_for` first matches: at once, or
/// on the DOM mutation that makes it match. A selector the browser cannot
/// parse rejects it.
fn wait_script(wait_for: &WaitFor) -> String {
    let test = wait_for.test();
    format!(
        "new Promise((resolve) => {{
            const test = () => {test};
            if (test()) {{ resolve(true); return; }}
            const observer = new MutationObserver(() => {{
                if (test()) {{ observer.disconnect(); resolve(true); }}
            }});
            observer.observe(document, {{ childList: true, subtree: true, attributes: true, characterData: true }});
        }})"
    )
}

/// Evaluates `expression` in the page, awaiting a promise, and returns its
/// value.
async fn evaluate<T: serde::de::DeserializeOwned>(
    page: &chromiumoxide::Page,
    expression: &str,
) -> Result<T, chromiumoxide::error::CdpError> {
    let mut params = EvaluateParams::new(expression);
    params.await_promise = Some(true);
    params.return_by_value = Some(true);
    Ok(page.evaluate_expression(params).await?.into_value()?)
}

/// A JavaScript string literal of `s`.
fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A driver error at `step`: the page's (a script's exception, a
/// navigation error, an answer the browser gave) or the browser's (the
/// connection failed or a call got no answer).
fn protocol(step: &'static str) -> impl Fn(chromiumoxide::error::CdpError) -> BrowserError {
    use chromiumoxide::error::CdpError;
    move |e| {
        let reason = match &e {
            CdpError::JavascriptException(details) => details
                .exception
                .as_ref()
                .and_then(|x| x.description.clone())
                .unwrap_or_else(|| details.text.clone()),
            other => other.to_string(),
        };
        match e {
            CdpError::JavascriptException(_)
            | CdpError::Chrome(_)
            | CdpError::ChromeMessage(_)
            | CdpError::FrameNotFound(_)
            | CdpError::NotFound
            | CdpError::Serde(_)
            | CdpError::Url(_) => BrowserError::Page { step, reason },
            _ => BrowserError::Protocol { step, reason },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_for_tells_xpath_from_css() {
        assert_eq!(
            WaitFor::parse("//table[@id='q']//td"),
            WaitFor::XPath("//table[@id='q']//td".into())
        );
        assert_eq!(
            WaitFor::parse("(//td)[2]"),
            WaitFor::XPath("(//td)[2]".into())
        );
        assert_eq!(WaitFor::parse("./td"), WaitFor::XPath("./td".into()));
        assert_eq!(
            WaitFor::parse(".quote td"),
            WaitFor::Css(".quote td".into())
        );
        assert_eq!(
            WaitFor::parse("#quotes tr"),
            WaitFor::Css("#quotes tr".into())
        );
    }

    #[test]
    fn selectors_are_quoted_into_the_script() {
        let test = WaitFor::Css("a[title=\"x\"]\n').x('".into()).test();
        assert_eq!(
            test,
            "!!document.querySelector(\"a[title=\\\"x\\\"]\\n').x('\")"
        );
    }

    #[test]
    fn over_the_cap_the_largest_renderer_goes_when_that_is_enough() {
        let p = |pid, mb: u64, renderer| ProcessMemory {
            pid,
            pss: mb << 20,
            renderer,
        };
        let cap = 1024 << 20;
        // Under the cap: nothing.
        assert_eq!(over_cap(&[p(1, 300, false), p(2, 200, true)], cap), None);
        // One page grew: its renderer alone.
        let grown = [p(1, 300, false), p(2, 100, true), p(3, 900, true)];
        assert_eq!(over_cap(&grown, cap), Some(Some(3)));
        // Many small pages, or the browser process itself: all of it.
        let many = [
            p(1, 300, false),
            p(2, 300, true),
            p(3, 300, true),
            p(4, 300, true),
        ];
        assert_eq!(over_cap(&many, cap), Some(None));
        let browser = [p(1, 1100, false), p(2, 100, true)];
        assert_eq!(over_cap(&browser, cap), Some(None));
        assert_eq!(over_cap(&[p(1, 1100, false)], cap), Some(None));
    }

    #[test]
    fn the_process_tree_of_this_process_has_memory() {
        assert!(tree_pss(std::process::id()) > 0);
        assert_eq!(tree_pss(u32::MAX), 0);
    }

    #[test]
    fn resources_round_trip_their_names() {
        for r in Resource::ALL {
            assert_eq!(Resource::from_name(r.name()), Some(r));
        }
        assert_eq!(Resource::from_name("scripts"), None);
    }
}
