//! Fetch settings: those the daemon file's `fetch` section and a watch
//! file's share, a watch's `fetch` section, and its render options.

use std::time::Duration;

use super::Ctx;
use crate::config::raw::{ByteSize, RawAuth, RawWaitFor, RawWatchFetch, Sp};
use crate::config::tree::join;
use crate::config::{Auth, FetchDefaults, WatchFetch};
use crate::page::browser::{Ready, RenderOptions, Resource, Revalidate, WaitFor};

/// The fetch settings a daemon file's `fetch` and a watch file's share.
pub(super) struct FetchFields<'a> {
    pub(super) max_body: Option<&'a Sp<ByteSize>>,
    pub(super) connect_timeout: Option<&'a Sp<String>>,
    pub(super) timeout: Option<&'a Sp<String>>,
    pub(super) max_redirects: Option<&'a Sp<usize>>,
    pub(super) retries: Option<&'a Sp<u32>>,
    pub(super) proxy: Option<&'a Sp<String>>,
}

/// `f` checked, each setting falling back to `d`'s when absent.
pub(super) fn fetch_settings(f: FetchFields<'_>, d: &FetchDefaults, cx: &mut Ctx) -> FetchDefaults {
    FetchDefaults {
        max_body: cx.byte_size(f.max_body, "fetch.max_body", d.max_body),
        connect_timeout: cx.duration_min(
            f.connect_timeout,
            "fetch.connect_timeout",
            d.connect_timeout,
            Duration::from_millis(1),
        ),
        timeout: cx.duration_min(
            f.timeout,
            "fetch.timeout",
            d.timeout,
            Duration::from_millis(1),
        ),
        max_redirects: f.max_redirects.map_or(d.max_redirects, |v| v.value),
        retries: f.retries.map_or(d.retries, |v| v.value),
        proxy: match f.proxy {
            Some(p) => cx.proxy(Some(p), "fetch.proxy"),
            None => d.proxy.clone(),
        },
        file_roots: d.file_roots.clone(),
        allow_private: d.allow_private,
        allow_hosts: d.allow_hosts.clone(),
        trust_watch_urls: d.trust_watch_urls,
    }
}

pub(super) fn watch_fetch(
    f: Option<&RawWatchFetch>,
    d: &FetchDefaults,
    cx: &mut Ctx,
) -> Option<WatchFetch> {
    let Some(f) = f else {
        return Some(WatchFetch {
            max_body: d.max_body,
            connect_timeout: d.connect_timeout,
            timeout: d.timeout,
            max_redirects: d.max_redirects,
            retries: d.retries,
            proxy: d.proxy.clone(),
            headers: Vec::new(),
            headers_cross_origin: false,
            cookies: Vec::new(),
            auth: None,
            render: None,
        });
    };
    let mut cookies = Vec::new();
    let mut ok = true;
    for (name, secret) in f.cookies.iter().flatten() {
        let path = join("fetch.cookies", name);
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        if !valid {
            cx.err(secret.at, &path, format!("invalid cookie name `{name}`"));
        }
        match cx.secret(secret, &path) {
            Some(s) if valid => cookies.push((name.clone(), s)),
            _ => ok = false,
        }
    }
    let auth = match f.auth.as_ref().map(|a| &a.value) {
        None => None,
        Some(RawAuth::Basic { username, password }) => {
            let password = cx.secret(password, "fetch.auth.basic.password");
            if username.value.contains(':') {
                cx.err(
                    username.at,
                    "fetch.auth.basic.username",
                    "a basic-auth user name cannot contain `:`",
                );
            }
            match password {
                Some(password) => Some(Auth::Basic {
                    username: username.value.clone(),
                    password,
                }),
                None => {
                    ok = false;
                    None
                }
            }
        }
        Some(RawAuth::Bearer { token }) => match cx.secret(token, "fetch.auth.bearer.token") {
            Some(token) => Some(Auth::Bearer { token }),
            None => {
                ok = false;
                None
            }
        },
    };
    let base = fetch_settings(
        FetchFields {
            max_body: f.max_body.as_ref(),
            connect_timeout: f.connect_timeout.as_ref(),
            timeout: f.timeout.as_ref(),
            max_redirects: f.max_redirects.as_ref(),
            retries: f.retries.as_ref(),
            proxy: f.proxy.as_ref(),
        },
        d,
        cx,
    );
    let fetch = WatchFetch {
        max_body: base.max_body,
        connect_timeout: base.connect_timeout,
        timeout: base.timeout,
        max_redirects: base.max_redirects,
        retries: base.retries,
        proxy: base.proxy,
        headers: cx.headers(f.headers.as_ref(), "fetch.headers"),
        headers_cross_origin: f.headers_cross_origin.as_ref().is_some_and(|v| v.value),
        cookies,
        auth,
        render: render_options(f, cx)?,
    };
    ok.then_some(fetch)
}

/// A watch's `render` and browser options: `None` when they are wrong
/// (reported), `Some(None)` for an HTTP watch.
fn render_options(f: &RawWatchFetch, cx: &mut Ctx) -> Option<Option<RenderOptions>> {
    let browser = match &f.render {
        None => false,
        Some(r) if r.value == "http" => false,
        Some(r) if r.value == "browser" => true,
        Some(r) => {
            cx.err(
                r.at,
                "fetch.render",
                format!(
                    "unknown render `{}`: expected one of http, browser",
                    r.value
                ),
            );
            return None;
        }
    };
    let only_browser = [
        ("fetch.wait_for", f.wait_for.as_ref().map(|w| w.at)),
        ("fetch.viewport", f.viewport.as_ref().map(|v| v.at)),
        ("fetch.block", f.block.as_ref().map(|b| b.at)),
        ("fetch.revalidate", f.revalidate.as_ref().map(|r| r.at)),
    ];
    if !browser {
        let mut ok = true;
        for (path, at) in only_browser {
            if let Some(at) = at {
                cx.err(at, path, "only with `render: browser`");
                ok = false;
            }
        }
        return ok.then_some(None);
    }
    browser_options(f, cx).map(Some)
}

/// The options of a `render: browser` watch (`wait_for`, `viewport`,
/// `block`, `revalidate`): `None` when one is wrong (reported).
fn browser_options(f: &RawWatchFetch, cx: &mut Ctx) -> Option<RenderOptions> {
    let mut ok = true;
    let mut options = RenderOptions::default();
    if let Some(w) = &f.wait_for {
        let (spec, hierarchy) = match &w.value {
            RawWaitFor::Dom(spec) => (spec.trim(), false),
            RawWaitFor::Hierarchy(xpath) => (xpath.trim(), true),
        };
        let xpath = || Sp {
            value: spec.to_owned(),
            at: w.at,
        };
        let wait_for = if hierarchy {
            Ready::Hierarchy(spec.to_owned())
        } else {
            Ready::Dom(WaitFor::parse(spec))
        };
        match &wait_for {
            _ if spec.is_empty() => {
                cx.err(w.at, "fetch.wait_for", "an empty selector");
                ok = false;
            }
            Ready::Hierarchy(_) | Ready::Dom(WaitFor::XPath(_)) => {
                ok &= cx.xpath(&xpath(), "fetch.wait_for").is_some();
            }
            // CSS syntax is the browser's to judge: a selector it cannot
            // parse fails the check with the browser's message.
            Ready::Dom(WaitFor::Css(_)) => {}
        }
        options.wait_for = Some(wait_for);
    }
    if let Some(v) = &f.viewport {
        match parse_viewport(&v.value) {
            Some(size) => options.viewport = size,
            None => {
                cx.err(
                    v.at,
                    "fetch.viewport",
                    format!(
                        "invalid viewport `{}`: expected WIDTHxHEIGHT, each 1 to 10000, e.g. 1280x800",
                        v.value
                    ),
                );
                ok = false;
            }
        }
    }
    if let Some(b) = &f.block {
        options.block.clear();
        for (i, name) in b.value.iter().enumerate() {
            match Resource::from_name(&name.value) {
                Some(r) if !options.block.contains(&r) => options.block.push(r),
                Some(_) => {}
                None => {
                    cx.err(
                        name.at,
                        &format!("fetch.block[{i}]"),
                        format!(
                            "unknown resource `{}`: expected one of images, fonts, media",
                            name.value
                        ),
                    );
                    ok = false;
                }
            }
        }
    }
    if let Some(r) = &f.revalidate {
        match Revalidate::from_name(r.value.trim()) {
            Some(revalidate) => options.revalidate = revalidate,
            None => {
                cx.err(
                    r.at,
                    "fetch.revalidate",
                    format!(
                        "unknown revalidate `{}`: expected one of render, html",
                        r.value
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(options)
}

/// `WIDTHxHEIGHT`, each from 1 to 10000.
fn parse_viewport(v: &str) -> Option<(u32, u32)> {
    let (w, h) = v.trim().split_once(['x', 'X'])?;
    let side = |s: &str| {
        s.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=10_000).contains(n))
    };
    Some((side(w)?, side(h)?))
}
