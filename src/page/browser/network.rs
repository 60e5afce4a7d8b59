//! A tab's requests, judged by the daemon's fence before they are sent
//! (the DevTools `Fetch` domain), counted in flight for the settle wait,
//! and the settle wait itself. See the parent module's "Decisions".

use super::*;
/// A tab's requests as seen from DevTools: each one paused (the `Fetch`
/// domain, at its request stage, every URL) and judged before it is sent,
/// and those in flight counted (the `Network` domain) for the settle wait.
/// One task per tab, stopped when this is dropped.
pub(super) struct Network {
    pub(super) log: Arc<Mutex<RequestLog>>,
    /// Set once the page's own navigation (and its redirects) is done.
    pub(super) loaded: Arc<AtomicBool>,
    /// Told when the fence refuses the main frame's own navigation before
    /// it is done (a watch URL redirecting to an internal address): the
    /// driver does not always end the navigation then, and the render
    /// would wait for its deadline.
    pub(super) refused_navigation: Arc<tokio::sync::Notify>,
    /// The requests in flight and when the last one started or ended.
    pub(super) flight: Arc<Mutex<Flight>>,
    pub(super) task: JoinHandle<()>,
}

#[derive(Debug)]
pub(super) struct Flight {
    pub(super) requests: std::collections::HashSet<String>,
    pub(super) last: Instant,
}

impl Drop for Network {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One event of a tab's network.
pub(super) enum NetEvent {
    Paused(Arc<EventRequestPaused>),
    Started(String),
    Ended(String),
}

impl Network {
    /// Starts judging `page`'s requests by `req`'s fence and block list.
    ///
    /// Decisions: the listeners are in place before `Fetch.enable`, so no
    /// request is paused unheard (a paused request not answered would hang
    /// the page). Judgements are made one at a time, in order, each
    /// origin's verdict kept for the render (a name is resolved once).
    /// What `Fetch` does not pause is covered otherwise (docs/browser.md,
    /// "One fence for every request"): WebSockets have no route ([`NO_WEBSOCKETS`]),
    /// and service workers are bypassed.
    pub(super) async fn watch(
        page: &chromiumoxide::Page,
        req: &RenderRequest<'_>,
    ) -> Result<Network, BrowserError> {
        let step = "intercepting requests";
        let paused = page
            .event_listener::<EventRequestPaused>()
            .await
            .map_err(protocol(step))?;
        let started = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .map_err(protocol(step))?;
        let finished = page
            .event_listener::<EventLoadingFinished>()
            .await
            .map_err(protocol(step))?;
        let failed = page
            .event_listener::<EventLoadingFailed>()
            .await
            .map_err(protocol(step))?;
        let events = futures::stream::select_all([
            paused.map(NetEvent::Paused).boxed(),
            started
                .map(|e| NetEvent::Started(e.request_id.as_ref().to_owned()))
                .boxed(),
            finished
                .map(|e| NetEvent::Ended(e.request_id.as_ref().to_owned()))
                .boxed(),
            failed
                .map(|e| NetEvent::Ended(e.request_id.as_ref().to_owned()))
                .boxed(),
        ]);
        let log = Arc::new(Mutex::new(RequestLog::default()));
        let flight = Arc::new(Mutex::new(Flight {
            requests: std::collections::HashSet::new(),
            last: Instant::now(),
        }));
        let loaded = Arc::new(AtomicBool::new(false));
        let refused_navigation = Arc::new(tokio::sync::Notify::new());
        let judge = Judge {
            loaded: Arc::clone(&loaded),
            refused_navigation: Arc::clone(&refused_navigation),
            page: page.clone(),
            fence: req.fence.clone(),
            watch: req.url.clone(),
            headers: extra_headers(req),
            block: req.options.block.clone(),
            log: Arc::clone(&log),
            flight: Arc::clone(&flight),
            verdicts: std::collections::HashMap::new(),
        };
        let task = tokio::spawn(judge.run(events));
        page.execute(SetBypassServiceWorkerParams::new(true))
            .await
            .map_err(protocol(step))?;
        page.execute(
            FetchEnable::builder()
                .pattern(
                    RequestPattern::builder()
                        .url_pattern("*")
                        .request_stage(RequestStage::Request)
                        .build(),
                )
                .build(),
        )
        .await
        .map_err(protocol(step))?;
        Ok(Network {
            log,
            loaded,
            refused_navigation,
            flight,
            task,
        })
    }

    /// Requests in flight, and how long since the last started or ended.
    pub(super) fn in_flight(&self) -> (usize, Duration) {
        let flight = lock(&self.flight);
        (flight.requests.len(), flight.last.elapsed())
    }
}

/// Fails the render when the navigation `navigated` failed or the tab
/// shows the browser's error page (a navigation failed without the
/// driver saying so): with the fence's refusals when there were some
/// (a watch URL redirecting to an internal address, most likely).
pub(super) async fn check_loaded(
    page: &chromiumoxide::Page,
    navigated: Result<(), chromiumoxide::error::CdpError>,
    net: &Network,
) -> Result<(), BrowserError> {
    let reason = match navigated {
        Err(error) => match protocol("loading the page")(error) {
            BrowserError::Page { reason, .. } => reason,
            error => return Err(error),
        },
        Ok(()) => {
            let error_page = evaluate::<bool>(page, "location.protocol === 'chrome-error:'")
                .await
                .unwrap_or(false);
            if !error_page {
                return Ok(());
            }
            "the browser could not load the page".to_owned()
        }
    };
    let requests = lock(&net.log).clone();
    Err(if requests.refused > 0 {
        BrowserError::Refused { reason, requests }
    } else {
        BrowserError::Page {
            step: "loading the page",
            reason,
        }
    })
}

/// A watch's headers and whether they may leave its origin.
#[derive(Debug, Clone, Default)]
pub(super) struct ExtraHeaders {
    list: Vec<(String, String)>,
    cross_origin: bool,
}

fn extra_headers(req: &super::RenderRequest<'_>) -> ExtraHeaders {
    ExtraHeaders {
        list: req.headers.to_vec(),
        cross_origin: req.headers_cross_origin,
    }
}

/// Whether a header carries credentials: it never leaves the watch's
/// origin, whatever the watch says.
fn carries_credentials(name: &str) -> bool {
    ["authorization", "cookie", "proxy-authorization"]
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name))
}

/// The judge of one tab's paused requests.
pub(super) struct Judge {
    pub(super) loaded: Arc<AtomicBool>,
    pub(super) refused_navigation: Arc<tokio::sync::Notify>,
    pub(super) page: chromiumoxide::Page,
    pub(super) fence: Fence,
    pub(super) watch: Url,
    /// The watch's headers, added to the requests they may go with
    /// ([`extra_headers`]).
    pub(super) headers: ExtraHeaders,
    pub(super) block: Vec<Resource>,
    pub(super) log: Arc<Mutex<RequestLog>>,
    pub(super) flight: Arc<Mutex<Flight>>,
    /// Each origin's verdict so far.
    pub(super) verdicts: std::collections::HashMap<String, Result<(), String>>,
}

impl Judge {
    pub(super) async fn run(mut self, mut events: impl futures::Stream<Item = NetEvent> + Unpin) {
        while let Some(event) = events.next().await {
            match event {
                NetEvent::Started(id) => {
                    let mut flight = lock(&self.flight);
                    flight.requests.insert(id);
                    flight.last = Instant::now();
                }
                NetEvent::Ended(id) => {
                    let mut flight = lock(&self.flight);
                    flight.requests.remove(&id);
                    flight.last = Instant::now();
                }
                NetEvent::Paused(event) => self.answer(&event).await,
            }
        }
    }

    /// Lets `event`'s request go, or fails it in the page.
    pub(super) async fn answer(&mut self, event: &EventRequestPaused) {
        let id = event.request_id.clone();
        tracing::trace!(url = %event.request.url, kind = ?event.resource_type, "request paused");
        let url = event.request.url.as_str();
        let verdict = if self.blocked(&event.resource_type) {
            Err(None)
        } else {
            self.verdict(url).await.map_err(Some)
        };
        let sent = match verdict {
            Ok(()) => {
                lock(&self.log).allowed += 1;
                let mut go = ContinueRequestParams::new(id);
                go.headers = self.headers_for(event);
                self.page.execute(go).await.map(drop)
            }
            Err(None) => {
                lock(&self.log).blocked += 1;
                self.page
                    .execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
                    .await
                    .map(drop)
            }
            Err(Some(why)) => {
                tracing::debug!(url, why, "request refused by the fence");
                lock(&self.log).refuse(url, &why);
                // A navigation refused once the page is loaded (a script
                // sending it elsewhere, a frame) is aborted: the document
                // (or the empty frame) stays, as when a navigation is
                // cancelled, instead of being replaced by the browser's
                // error page. Any other refusal is a network error.
                let document = event.resource_type == ResourceType::Document;
                let reason = if document && self.loaded.load(Ordering::SeqCst) {
                    ErrorReason::Aborted
                } else {
                    ErrorReason::AccessDenied
                };
                // The main frame's id is its target's.
                if document
                    && !self.loaded.load(Ordering::SeqCst)
                    && event.frame_id.inner() == self.page.target_id().inner()
                {
                    self.refused_navigation.notify_one();
                }
                self.page
                    .execute(FailRequestParams::new(id, reason))
                    .await
                    .map(drop)
            }
        };
        // An error: the tab is closing, or the request was cancelled
        // meanwhile.
        tracing::trace!(?sent, "answered a paused request");
    }

    /// The request's headers with the watch's added, when the request may
    /// carry them (the watch's origin; others only when the watch allows
    /// it, and never the headers that carry credentials); `None`: as sent.
    fn headers_for(&self, event: &EventRequestPaused) -> Option<Vec<HeaderEntry>> {
        let target = Url::parse(&event.request.url).ok()?;
        let same_origin = target.origin() == self.watch.origin();
        let extra: Vec<&(String, String)> = self
            .headers
            .list
            .iter()
            .filter(|(name, _)| {
                same_origin || (self.headers.cross_origin && !carries_credentials(name))
            })
            .collect();
        if extra.is_empty() {
            return None;
        }
        let mut entries: Vec<HeaderEntry> = event
            .request
            .headers
            .inner()
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
            .filter_map(|(name, value)| Some(HeaderEntry::new(name.clone(), value.as_str()?)))
            .collect();
        entries.extend(
            extra
                .iter()
                .map(|(n, v)| HeaderEntry::new(n.clone(), v.clone())),
        );
        Some(entries)
    }

    pub(super) fn blocked(&self, kind: &ResourceType) -> bool {
        self.block.iter().any(|r| match r {
            Resource::Images => *kind == ResourceType::Image,
            Resource::Fonts => *kind == ResourceType::Font,
            Resource::Media => *kind == ResourceType::Media,
        })
    }

    /// The fence's verdict on `url`, by its origin (kept for the render).
    pub(super) async fn verdict(&mut self, url: &str) -> Result<(), String> {
        let Ok(target) = Url::parse(url) else {
            return Err("not a URL".to_owned());
        };
        // Nothing leaves the browser for these.
        if matches!(target.scheme(), "data" | "blob" | "about") {
            return Ok(());
        }
        let origin = target.origin().ascii_serialization();
        if let Some(verdict) = self.verdicts.get(&origin) {
            return verdict.clone();
        }
        let verdict = match tokio::time::timeout(
            LOOKUP_TIMEOUT,
            self.fence.judge_request(&self.watch, &target),
        )
        .await
        {
            Ok(verdict) => verdict,
            Err(_) => Err(format!(
                "its host was not resolved within {}s",
                LOOKUP_TIMEOUT.as_secs()
            )),
        };
        // An opaque origin (`null`) is not kept: it stands for many.
        if target.origin().is_tuple() {
            self.verdicts.insert(origin, verdict.clone());
        }
        verdict
    }
}

/// How long resolving a request's host may take before it is refused.
pub(super) const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Installs, once per document, a `MutationObserver` that records when
/// the DOM last changed (`performance.now()`), from the document's start.
pub(super) const QUIET_INSTALL: &str = "(() => {
    if (window.__semclipQuiet) return;
    const s = { last: performance.now() };
    Object.defineProperty(window, '__semclipQuiet', { value: s });
    new MutationObserver(() => { s.last = performance.now(); })
        .observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
})()";

/// Milliseconds since the DOM last changed (installing the observer if
/// the document has none: it then counts from now).
pub(super) fn quiet_script() -> String {
    format!("{QUIET_INSTALL}, performance.now() - window.__semclipQuiet.last")
}

/// Waits until the page is quiet: no request in flight and no DOM
/// mutation for [`QUIET`], or until the deadline less a reserve for
/// taking the DOM. A script error (a navigation replacing the document)
/// counts as not quiet.
pub(super) async fn settle(
    page: &chromiumoxide::Page,
    net: &Network,
    deadline: Instant,
) -> Settled {
    let start = Instant::now();
    let left = deadline.saturating_duration_since(start);
    let bound = start + left.saturating_sub(SETTLE_RESERVE.min(left / 4));
    let script = quiet_script();
    loop {
        let dom = evaluate::<f64>(page, &script).await.unwrap_or(0.0);
        let (in_flight, network) = net.in_flight();
        let quiet = in_flight == 0 && network >= QUIET && dom >= QUIET.as_millis() as f64;
        if quiet || Instant::now() + SETTLE_POLL > bound {
            return Settled {
                waited: start.elapsed(),
                quiet,
                in_flight,
            };
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}
