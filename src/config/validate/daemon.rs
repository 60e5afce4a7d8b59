//! The daemon file: its top level, `server`, `tokens`, the `fetch`
//! defaults and the fence, `limits`, `alerts`, `retention` and `browser`.

use std::time::Duration;

use url::Url;

use super::fetch::{FetchFields, fetch_settings};
use super::notifiers::{notifier, smtp_settings};
use super::sessions::session;
use super::{Ctx, DaemonOutcome, daemon_defaults, valid_id};
use crate::config::raw::{
    Pos, RawAlerts, RawBrowser, RawDaemon, RawFetchDefaults, RawLimits, RawPageLimits,
    RawRetention, RawScope, RawServer, RawToken, Sp,
};
use crate::config::tree::join;
use crate::config::{
    AlertSettings, DaemonConfig, Database, DemoConfig, FetchDefaults, Limits, PageLimits, Scope,
    ServerConfig, TokenConfig,
};
use crate::page::browser::BrowserSettings;
use crate::page::fence::AllowHost;
use crate::store::Retention;

pub(super) fn daemon(raw: Sp<RawDaemon>, cx: &mut Ctx) -> DaemonOutcome {
    let root_at = raw.at;
    let raw = raw.value;
    let mut c = daemon_defaults(Some(cx.file.to_path_buf()), cx.dir);
    database(&raw, &mut c, cx);
    let watches_at = raw.watches.as_ref().map_or(root_at, |w| w.at);
    if let Some(w) = &raw.watches {
        c.watches_dir = cx.path(&w.value);
    }
    c.listen = raw
        .listen
        .as_ref()
        .and_then(|l| cx.socket_addr(l, "listen"));
    if let Some(server) = &raw.server {
        server_settings(&server.value, &mut c.server, cx);
    }
    if let (Some(_), Some(listen)) = (c.listen, &raw.listen) {
        stylesheets_present(&raw, listen.at, &c.server, cx);
    }
    if let Some(smtp) = &raw.smtp {
        c.smtp = Some(smtp_settings(smtp, cx));
    }
    for (name, n) in raw.notifiers.iter().flatten() {
        if let Some(cfg) = notifier(name, n, raw.smtp.is_some(), cx) {
            c.notifiers.insert(name.clone(), cfg);
        }
    }
    for (name, t) in raw.tokens.iter().flatten() {
        if let Some(token) = token(name, &t.value, cx) {
            c.tokens.insert(name.clone(), token);
        }
    }
    if let Some(f) = &raw.fetch {
        c.fetch = daemon_fetch(&f.value, cx);
    }
    if let Some(l) = &raw.limits {
        c.limits = limits(&l.value, cx);
    }
    if let Some(a) = &raw.alerts {
        c.alerts = alert_settings(&a.value, cx);
    }
    if let Some(r) = &raw.retention {
        c.retention = retention(&r.value, cx);
    }
    if let Some(b) = &raw.browser {
        c.browser = browser_settings(&b.value, cx);
    }
    let fence = c.fence();
    for (name, s) in raw.sessions.iter().flatten() {
        if let Some(session) = session(name, &s.value, &fence, cx) {
            c.sessions.insert(name.clone(), session);
        } else if !valid_id(name) {
            cx.err(
                s.at,
                &join("sessions", name),
                format!("session name `{name}` may only use A-Z a-z 0-9 . _ - (at least one)"),
            );
        }
    }
    if let Some(demo) = &raw.demo {
        c.demo = cx
            .socket_addr(&demo.value.listen, "demo.listen")
            .map(|listen| DemoConfig { listen });
    }
    DaemonOutcome {
        config: c,
        notifier_names: Some(
            raw.notifiers
                .iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect(),
        ),
        watches_at: Some((cx.file.to_path_buf(), watches_at)),
    }
}

/// `database:` and `database_password:`: a path or a PostgreSQL URL, the
/// password only with a URL.
fn database(raw: &RawDaemon, c: &mut DaemonConfig, cx: &mut Ctx) {
    if let Some(db) = &raw.database {
        match Database::parse(&db.value, cx.dir) {
            Ok(database) => c.database = database,
            Err(message) => cx.err(db.at, "database", message),
        }
    }
    let Some(password) = &raw.database_password else {
        return;
    };
    let secret = cx.secret(password, "database_password");
    match (&mut c.database, secret) {
        (Database::Postgres(url), Some(secret)) => {
            *url = url.clone().with_password(secret.expose());
        }
        (Database::Sqlite(_), _) => cx.err(
            password.at,
            "database_password",
            "only a PostgreSQL database (database: postgres://...) takes a password",
        ),
        (Database::Postgres(_), None) => {}
    }
}

/// The server's default stylesheets must be there when it will serve
/// (`listen_at`: where `listen` is set).
fn stylesheets_present(raw: &RawDaemon, listen_at: Pos, server: &ServerConfig, cx: &mut Ctx) {
    let xslt_at = raw
        .server
        .as_ref()
        .and_then(|s| s.value.xslt.as_ref().map(|x| x.at));
    let (at, path) = match xslt_at {
        Some(at) => (at, "server.xslt"),
        None => (listen_at, "listen"),
    };
    for name in ["html.xsl", "rdf.xsl"] {
        if !server.xslt.join(name).is_file() {
            cx.err(
                at,
                path,
                format!(
                    "no {name} in the stylesheet directory {}: set server.xslt to semclip's xslt/ directory",
                    server.xslt.display()
                ),
            );
        }
    }
}

/// The `server` section over its defaults.
fn server_settings(raw: &RawServer, c: &mut ServerConfig, cx: &mut Ctx) {
    if let Some(u) = &raw.public_url {
        c.public_url = cx.base_url(u, "server.public_url");
    }
    if let Some(x) = &raw.xslt {
        c.xslt = cx.path(&x.value);
    }
    for (i, o) in raw
        .cors_origins
        .iter()
        .flat_map(|v| v.value.iter())
        .enumerate()
    {
        let origin = o.value.trim();
        let ok = origin == "*"
            || Url::parse(origin).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && !origin.ends_with('/')
                    && u.query().is_none()
                    && u.fragment().is_none()
            });
        if ok {
            c.cors_origins.push(origin.to_owned());
        } else {
            cx.err(
                o.at,
                &format!("server.cors_origins[{i}]"),
                format!(
                    "`{origin}` is not an origin: write SCHEME://HOST[:PORT] (no path), or \"*\""
                ),
            );
        }
    }
    if let Some(list) = &raw.frame_ancestors {
        c.frame_ancestors.clear();
        for (i, o) in list.value.iter().enumerate() {
            let source = o.value.trim();
            if frame_ancestor(source) {
                c.frame_ancestors.push(source.to_owned());
            } else {
                cx.err(
                    o.at,
                    &format!("server.frame_ancestors[{i}]"),
                    format!(
                        "`{source}` is not a frame ancestor: write SCHEME://HOST[:PORT] \
                         (no path), \"'self'\" or \"*\""
                    ),
                );
            }
        }
    }
    c.max_in_flight = cx.at_least_one(
        raw.max_in_flight.as_ref(),
        "server.max_in_flight",
        c.max_in_flight,
    );
    c.request_timeout = cx.duration_min(
        raw.request_timeout.as_ref(),
        "server.request_timeout",
        c.request_timeout,
        Duration::from_millis(1),
    );
    if let Some(cc) = &raw.cache_control {
        c.cache_control = cx.header_value(cc, "server.cache_control");
    }
    c.header_timeout = cx.duration_min(
        raw.header_timeout.as_ref(),
        "server.header_timeout",
        c.header_timeout,
        Duration::from_millis(1),
    );
    c.max_connections = cx.at_least_one(
        raw.max_connections.as_ref(),
        "server.max_connections",
        c.max_connections,
    );
    c.max_client_connections = cx.at_least_one(
        raw.max_client_connections.as_ref(),
        "server.max_client_connections",
        c.max_client_connections,
    );
    c.render_threads = cx.at_least_one(
        raw.render_threads.as_ref(),
        "server.render_threads",
        c.render_threads,
    );
}

/// A CSP `frame-ancestors` source semclip accepts: `'self'`, `*`, or an
/// origin (`https://portal.example.org`, `https://*.example.org`), so that
/// nothing written there can end the directive or add another.
fn frame_ancestor(source: &str) -> bool {
    if source == "'self'" || source == "*" {
        return true;
    }
    let Some((scheme, host)) = source.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*' | '[' | ']'))
}

/// API token `name`; `None` when its secret cannot be read.
fn token(name: &str, t: &RawToken, cx: &mut Ctx) -> Option<TokenConfig> {
    let path = join("tokens", name);
    let secret = cx.secret(&t.secret, &join(&path, "secret"));
    let mut scopes: Vec<Scope> = t
        .scopes
        .value
        .iter()
        .map(|s| match s {
            RawScope::Read => Scope::Read,
            RawScope::Admin => Scope::Admin,
        })
        .collect();
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        cx.err(
            t.scopes.at,
            &join(&path, "scopes"),
            "give at least one scope (read, admin)",
        );
    }
    Some(TokenConfig {
        secret: secret?,
        scopes,
    })
}

/// The daemon file's `fetch` section: defaults for every watch, and the
/// fence.
fn daemon_fetch(f: &RawFetchDefaults, cx: &mut Ctx) -> FetchDefaults {
    let mut fetch = fetch_settings(
        FetchFields {
            max_body: f.max_body.as_ref(),
            connect_timeout: f.connect_timeout.as_ref(),
            timeout: f.timeout.as_ref(),
            max_redirects: f.max_redirects.as_ref(),
            retries: f.retries.as_ref(),
            proxy: f.proxy.as_ref(),
        },
        &FetchDefaults::default(),
        cx,
    );
    fence_settings(f, &mut fetch, cx);
    fetch
}

/// The fence settings of the daemon file's `fetch` section into `c`.
fn fence_settings(f: &RawFetchDefaults, c: &mut FetchDefaults, cx: &mut Ctx) {
    if let Some(roots) = &f.file_roots {
        let mut out = Vec::new();
        for (i, root) in roots.value.iter().enumerate() {
            let text = root.value.trim();
            if text.is_empty() {
                cx.err(
                    root.at,
                    &format!("fetch.file_roots[{i}]"),
                    "must not be empty",
                );
                continue;
            }
            let path = cx.path(text);
            out.push(std::path::absolute(&path).unwrap_or(path));
        }
        c.file_roots = Some(out);
    }
    if let Some(a) = &f.allow_private {
        c.allow_private = a.value;
    }
    for (i, entry) in f
        .allow_hosts
        .iter()
        .flat_map(|v| v.value.iter())
        .enumerate()
    {
        match AllowHost::parse(&entry.value) {
            Ok(host) => c.allow_hosts.push(host),
            Err(message) => cx.err(entry.at, &format!("fetch.allow_hosts[{i}]"), message),
        }
    }
    if let Some(t) = &f.trust_watch_urls {
        c.trust_watch_urls = t.value;
    }
}

/// The `limits` section over the defaults.
fn limits(l: &RawLimits, cx: &mut Ctx) -> Limits {
    let d = Limits::default();
    Limits {
        concurrency: cx.at_least_one(l.concurrency.as_ref(), "limits.concurrency", d.concurrency),
        per_host: cx.at_least_one(l.per_host.as_ref(), "limits.per_host", d.per_host),
        host_spacing: cx.duration(
            l.host_spacing.as_ref(),
            "limits.host_spacing",
            d.host_spacing,
        ),
        page: match &l.page {
            Some(p) => page_limits(&p.value, cx),
            None => d.page,
        },
    }
}

/// The page budget of `limits.page`.
fn page_limits(p: &RawPageLimits, cx: &mut Ctx) -> PageLimits {
    let d = PageLimits::default();
    PageLimits {
        dom_nodes: cx.at_least_one(p.dom_nodes.as_ref(), "limits.page.dom_nodes", d.dom_nodes),
        dom_bytes: cx.byte_size(p.dom_bytes.as_ref(), "limits.page.dom_bytes", d.dom_bytes),
        cells: cx.at_least_one(p.cells.as_ref(), "limits.page.cells", d.cells),
        nodes: cx.at_least_one(p.nodes.as_ref(), "limits.page.nodes", d.nodes),
        text_bytes: cx.byte_size(
            p.text_bytes.as_ref(),
            "limits.page.text_bytes",
            d.text_bytes,
        ),
        id_bytes: cx.byte_size(p.id_bytes.as_ref(), "limits.page.id_bytes", d.id_bytes),
        cpu: cx.duration_min(
            p.cpu.as_ref(),
            "limits.page.cpu",
            d.cpu,
            Duration::from_millis(1),
        ),
    }
}

/// The `alerts` section over the defaults.
fn alert_settings(a: &RawAlerts, cx: &mut Ctx) -> AlertSettings {
    let d = AlertSettings::default();
    AlertSettings {
        failures_before_alert: cx.at_least_one(
            a.failures_before_alert.as_ref(),
            "alerts.failures_before_alert",
            d.failures_before_alert,
        ),
        give_up_after: cx.duration_min(
            a.give_up_after.as_ref(),
            "alerts.give_up_after",
            d.give_up_after,
            Duration::from_millis(1),
        ),
    }
}

/// The `retention` section over the defaults.
fn retention(r: &RawRetention, cx: &mut Ctx) -> Retention {
    let d = Retention::default();
    Retention {
        keep_versions: cx.at_least_one(
            r.keep_versions.as_ref(),
            "retention.keep_versions",
            d.keep_versions,
        ),
        keep_days: cx.at_least_one(r.keep_days.as_ref(), "retention.keep_days", d.keep_days),
    }
}

/// The daemon file's `browser` section over the defaults.
fn browser_settings(b: &RawBrowser, cx: &mut Ctx) -> BrowserSettings {
    let d = BrowserSettings::default();
    BrowserSettings {
        executable: b.executable.as_ref().map(|e| cx.path(&e.value)),
        max_pages: cx.at_least_one(b.max_pages.as_ref(), "browser.max_pages", d.max_pages),
        memory_cap: cx.byte_size(b.memory_cap.as_ref(), "browser.memory_cap", d.memory_cap),
    }
}
