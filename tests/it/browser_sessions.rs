//! Sessions of rendered watches end to end: the real binary and Debian's
//! Chromium against a local shop whose login form is driven by
//! JavaScript. The session logs in once with browser steps (fill, click,
//! wait_for), its cookies reach the tab and come back to the stored jar
//! (the page's own `document.cookie` too), survive a restart, and it logs
//! in again only when the shop expires the session. No Chromium profile
//! directory is left behind.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};

use crate::daemon::{Daemon, GAZP, setup, store, wait_until};
use crate::fixture::{StateSite, quotes_page};
use crate::util::chromium;

/// The password the shop accepts (and the test must never find in a log).
const PASSWORD: &str = "hunter2-browser-horse";

/// The login page: the form posts with `fetch` from a script and goes to
/// the account page when the shop accepts it.
const LOGIN_PAGE: &str = "<!doctype html><html><head><title>Sign in</title></head><body>\
    <h1>Sign in</h1><label>User <input id=user></label>\
    <label>Password <input id=password type=password></label>\
    <button id=go type=button>Sign in</button><script>\
    document.getElementById('go').addEventListener('click', function () {\
      var body = 'user=' + encodeURIComponent(document.getElementById('user').value) +\
        '&password=' + encodeURIComponent(document.getElementById('password').value);\
      fetch('/login', {method: 'POST', body: body,\
        headers: {'Content-Type': 'application/x-www-form-urlencoded'}})\
      .then(function (r) { if (r.ok) { location.href = '/account'; }\
        else { document.body.insertAdjacentHTML('beforeend', '<p id=refused>Refused</p>'); } });\
    });</script></body></html>";

#[derive(Debug, Default)]
struct ShopState {
    valid: HashSet<String>,
    /// Login POSTs accepted.
    logins: usize,
    /// The `Cookie` header of every `/account` request, in order.
    account: Vec<Option<String>>,
}

struct Shop(StateSite<ShopState>);

impl Shop {
    fn start() -> Shop {
        let routes = Router::new()
            .route("/account", get(account))
            .route("/login", post(login));
        Shop(StateSite::start(ShopState::default(), routes))
    }

    fn url(&self, path: &str) -> String {
        self.0.url(path)
    }

    fn logins(&self) -> usize {
        self.0.state().logins
    }

    fn account(&self) -> Vec<Option<String>> {
        self.0.state().account.clone()
    }

    fn expire(&self) {
        self.0.state().valid.clear();
    }

    fn wait_account(&self, n: usize) {
        wait_until("/account requests", Duration::from_secs(60), || {
            self.account().len() >= n
        });
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    let cookie = headers.get(header::COOKIE)?.to_str().ok()?;
    cookie
        .split("; ")
        .find_map(|c| c.strip_prefix(&format!("{name}=")))
        .map(str::to_owned)
}

/// The quote table with a valid `sid`, whose script also sets a cookie of
/// its own; the login page otherwise.
async fn account(State(state): State<Arc<Mutex<ShopState>>>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    s.account.push(
        headers
            .get(header::COOKIE)
            .map(|v| v.to_str().unwrap().to_owned()),
    );
    if cookie(&headers, "sid").is_some_and(|sid| s.valid.contains(&sid)) {
        let page = quotes_page("305,40", 0).replace(
            "</body>",
            "<script>document.cookie = 'theme=dark; path=/; max-age=86400';</script></body>",
        );
        Html(page).into_response()
    } else {
        Html(LOGIN_PAGE).into_response()
    }
}

async fn login(State(state): State<Arc<Mutex<ShopState>>>, body: String) -> Response {
    let mut s = state.lock().unwrap();
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let ok = fields.contains(&("user".into(), "ann".into()))
        && fields.contains(&("password".into(), PASSWORD.into()));
    if !ok {
        return (axum::http::StatusCode::UNAUTHORIZED, "no").into_response();
    }
    s.logins += 1;
    let sid = format!("b{}", s.logins);
    s.valid.insert(sid.clone());
    (
        [(header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly"))],
        "ok",
    )
        .into_response()
}

/// Chromium profile directories of the daemon `pid` left in the
/// temporary directory.
fn profiles_left(pid: u32) -> Vec<String> {
    let prefix = format!("semclip-browser-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn a_rendered_watch_logs_in_with_browser_steps_once_and_keeps_its_cookies_across_a_restart() {
    let name =
        "a_rendered_watch_logs_in_with_browser_steps_once_and_keeps_its_cookies_across_a_restart";
    let Some(bin) = chromium(name) else {
        return;
    };
    let shop = Shop::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let extra = format!(
        "browser: {{executable: {bin}, max_pages: 2}}\n\
         limits: {{per_host: 4, host_spacing: 0s}}\n\
         sessions:\n  shop:\n    login:\n      url: {}\n      steps:\n        \
         - fill: {{selector: \"#user\", value: ann}}\n        \
         - fill: {{selector: \"#password\", value: {{env: SHOP_PASSWORD}}}}\n        \
         - click: \"#go\"\n        \
         - wait_for: \"//table/caption\"\n      \
         logged_out: [\"/page[@label='Sign in']\"]\n",
        shop.url("/account")
    );
    let watch = format!(
        "url: {}\nschedule: {{every: 1s}}\nsession: shop\n\
         fetch: {{render: browser, timeout: 20s, retries: 0}}\n\
         thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        shop.url("/account")
    );
    setup(dir, &extra, &[("account", watch)]);
    let env = [("SHOP_PASSWORD", PASSWORD)];
    let reading = |dir: &Path| {
        store(dir)
            .thresholds("account")
            .unwrap()
            .first()
            .and_then(|t| t.value)
    };

    let daemon = Daemon::start_with_env(dir, &env);
    let pid = daemon.pid();
    wait_until("the first reading", Duration::from_secs(90), || {
        reading(dir) == Some(305.4)
    });
    assert_eq!(shop.logins(), 1, "{}", daemon.log());
    let first = shop.account();
    assert_eq!(first[0], None, "the first render has no cookie: {first:?}");
    // The page rendered after the login carries the session's cookie.
    assert!(
        first
            .iter()
            .any(|c| c.as_deref().is_some_and(|c| c.contains("sid=b1"))),
        "{first:?}"
    );
    // Later renders send the session cookie and the one the page's own
    // script set, and never log in again.
    shop.wait_account(first.len() + 3);
    assert_eq!(shop.logins(), 1, "{}", daemon.log());
    let last = shop.account().last().cloned().flatten().unwrap_or_default();
    assert!(
        last.contains("sid=b1") && last.contains("theme=dark"),
        "{last}"
    );
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");
    assert!(log.contains("logged in"), "{log}");
    let jar = store(dir).session_jar("shop").unwrap().unwrap().jar;
    assert!(jar.contains("theme") && jar.contains("b1"), "{jar}");
    assert_eq!(profiles_left(pid), Vec::<String>::new());

    // A restart: the cookies come from the store, no second login.
    let before = shop.account().len();
    let daemon = Daemon::start_with_env(dir, &env);
    shop.wait_account(before + 3);
    let after = shop.account();
    assert!(
        after[before..]
            .iter()
            .all(|c| c.as_deref().is_some_and(|c| c.contains("sid=b1"))),
        "{after:?}"
    );
    assert_eq!(shop.logins(), 1, "{}", daemon.log());

    // The shop expires the session: one more login, by the steps again.
    shop.expire();
    wait_until("a second login", Duration::from_secs(60), || {
        shop.logins() >= 2
    });
    let n = shop.account().len();
    shop.wait_account(n + 3);
    assert_eq!(shop.logins(), 2, "{}", daemon.log());
    let last = shop.account().last().cloned().flatten().unwrap_or_default();
    assert!(last.contains("sid=b2"), "{last}");
    let status = store(dir).status("account").unwrap().unwrap();
    assert_eq!(status.failures, 0, "{status:?}");
    let pid = daemon.pid();
    let log = daemon.log();
    assert_eq!(daemon.stop().code(), Some(0), "{log}");
    assert_eq!(profiles_left(pid), Vec::<String>::new());

    // The login page was never compared or stored, and the password is in
    // no log, status or stored jar.
    let store = store(dir);
    assert_eq!(store.changes("account", None, 100).unwrap().len(), 0);
    let jar = store.session_jar("shop").unwrap().unwrap().jar;
    let error = status.last_error.unwrap_or_default();
    for (what, text) in [("log", &log), ("status", &error), ("jar", &jar)] {
        assert!(
            !text.contains(PASSWORD),
            "the password in the {what}:\n{text}"
        );
    }
}
