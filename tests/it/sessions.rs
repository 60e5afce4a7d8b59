//! Sessions end to end: the real binary against a local site that needs a
//! session cookie obtained by a form POST (logs in once, keeps the cookie
//! across a restart, logs in again only after the site expires the
//! session, fails clearly on a refused login), and `semclip cookies
//! import` of a cookies.txt.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};

use semclip::store::Store;

use crate::daemon::{Daemon, GAZP, setup, wait_until};
use crate::fixture::{StateSite, quotes_page};
use crate::util::{describe, semclip};

/// The password the site accepts (and the test must never find in a log).
const PASSWORD: &str = "hunter2-correct-horse";

/// The login page: the hierarchy's page label is "Sign in".
const LOGIN_PAGE: &str = "<!doctype html><html><head><title>Sign in</title></head><body>\
    <h1>Sign in</h1><form id=login action=/login method=post>\
    <label>User <input name=user></label><label>Password <input name=password type=password></label>\
    <button>Sign in</button></form></body></html>";

/// The marker of a logged-out page, an XPath over the hierarchy.
const LOGGED_OUT: &str = "/page[@label='Sign in']";

#[derive(Debug, Default)]
struct ShopState {
    /// Session ids the site accepts.
    valid: HashSet<String>,
    /// The password it accepts now.
    password: String,
    /// Login POSTs, accepted or not.
    posts: usize,
    /// Logins accepted.
    logins: usize,
    /// The `Cookie` header of every `/account` request, in order.
    account: Vec<Option<String>>,
}

/// A shop whose `/account` shows the quote table only with a valid `sid`
/// cookie, and the login page otherwise.
struct Shop(StateSite<ShopState>);

impl Shop {
    fn start() -> Shop {
        let routes = Router::new()
            .route("/account", get(account))
            .route("/login", post(login));
        Shop(StateSite::start(
            ShopState {
                password: PASSWORD.to_owned(),
                ..ShopState::default()
            },
            routes,
        ))
    }

    fn url(&self, path: &str) -> String {
        self.0.url(path)
    }

    fn logins(&self) -> usize {
        self.0.state().logins
    }

    fn posts(&self) -> usize {
        self.0.state().posts
    }

    fn account(&self) -> Vec<Option<String>> {
        self.0.state().account.clone()
    }

    /// Forgets every session: the next page is the login page.
    fn expire(&self) {
        self.0.state().valid.clear();
    }

    fn set_password(&self, password: &str) {
        self.0.state().password = password.to_owned();
    }

    /// Accepts `sid` as a session (one a browser got).
    fn admit(&self, sid: &str) {
        self.0.state().valid.insert(sid.to_owned());
    }

    /// Waits until `/account` was requested `n` times.
    fn wait_account(&self, n: usize) {
        wait_until("/account requests", Duration::from_secs(30), || {
            self.account().len() >= n
        });
    }
}

fn sid(headers: &HeaderMap) -> Option<String> {
    let cookie = headers.get(header::COOKIE)?.to_str().ok()?;
    cookie
        .split("; ")
        .find_map(|c| c.strip_prefix("sid="))
        .map(str::to_owned)
}

async fn account(State(state): State<Arc<Mutex<ShopState>>>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    let cookie = headers
        .get(header::COOKIE)
        .map(|v| v.to_str().unwrap().to_owned());
    s.account.push(cookie);
    let logged_in = sid(&headers).is_some_and(|sid| s.valid.contains(&sid));
    if logged_in {
        Html(quotes_page("305,40", 0)).into_response()
    } else {
        Html(LOGIN_PAGE).into_response()
    }
}

async fn login(State(state): State<Arc<Mutex<ShopState>>>, body: String) -> Response {
    let mut s = state.lock().unwrap();
    s.posts += 1;
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    if field("user").as_deref() != Some("ann") || field("password") != Some(s.password.clone()) {
        return (StatusCode::UNAUTHORIZED, "wrong user or password").into_response();
    }
    s.logins += 1;
    let sid = format!("s{}", s.logins);
    s.valid.insert(sid.clone());
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/account".to_owned()),
            (header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly")),
        ],
    )
        .into_response()
}

/// The daemon file's `sessions` for the shop, and a watch of its account
/// page every second in session `shop`.
fn shop_setup(dir: &std::path::Path, shop: &Shop) {
    let sessions = format!(
        "sessions:\n  shop:\n    login:\n      url: {}\n      fields:\n        user: ann\n        \
         password: {{env: SHOP_PASSWORD}}\n      logged_out: [\"{LOGGED_OUT}\"]\n",
        shop.url("/login")
    );
    let watch = format!(
        "url: {}\nschedule: {{every: 1s}}\nsession: shop\nfetch: {{timeout: 5s, retries: 0}}\n\
         thresholds:\n  - name: gazp-high\n    xpath: \"{GAZP}\"\n    above: 300\n    notify: [log]\n",
        shop.url("/account")
    );
    setup(dir, &sessions, &[("account", watch)]);
}

fn store(dir: &std::path::Path) -> Store {
    Store::open(&dir.join("state/semclip.db")).unwrap()
}

#[test]
fn a_session_logs_in_once_keeps_its_cookie_across_a_restart_and_again_only_when_expired() {
    let shop = Shop::start();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    shop_setup(dir, &shop);
    let env = [("SHOP_PASSWORD", PASSWORD)];

    // First check: the login page, one login, the page again and checked.
    let daemon = Daemon::start_with_env(dir, &env);
    daemon.wait_log("outcome=first", Duration::from_secs(30));
    assert_eq!(shop.logins(), 1, "{}", daemon.log());
    let first = shop.account();
    assert_eq!(first[0], None, "the first request has no cookie");
    assert_eq!(first[1].as_deref(), Some("sid=s1"), "{first:?}");
    // Later checks send the cookie and never log in again.
    shop.wait_account(first.len() + 3);
    assert_eq!(shop.logins(), 1, "{}", daemon.log());
    assert_eq!(daemon.stop().code(), Some(0));

    // A restart: the jar comes from the store, no second login.
    let before = shop.account().len();
    let daemon = Daemon::start_with_env(dir, &env);
    shop.wait_account(before + 3);
    let after_restart = shop.account();
    assert!(
        after_restart[before..]
            .iter()
            .all(|c| c.as_deref() == Some("sid=s1")),
        "{after_restart:?}"
    );
    assert_eq!(shop.posts(), 1, "{}", daemon.log());

    // The site expires the session: one more login, then the page again.
    shop.expire();
    wait_until("a second login", Duration::from_secs(30), || {
        shop.logins() >= 2
    });
    let n = shop.account().len();
    shop.wait_account(n + 3);
    assert_eq!(shop.logins(), 2, "{}", daemon.log());
    assert_eq!(shop.account().last().unwrap().as_deref(), Some("sid=s2"));
    let status = store(dir).status("account").unwrap().unwrap();
    assert_eq!(status.failures, 0, "{status:?}");

    // A refused login is a clear failure of the watch, never data.
    let posts = shop.posts();
    shop.set_password("changed");
    shop.expire();
    let failed = || {
        store(dir)
            .status("account")
            .unwrap()
            .unwrap()
            .last_error
            .is_some()
    };
    wait_until("a failed login", Duration::from_secs(30), failed);
    let error = store(dir)
        .status("account")
        .unwrap()
        .unwrap()
        .last_error
        .unwrap();
    assert!(
        error.contains("cannot log in to session `shop`") && error.contains("401"),
        "{error}"
    );
    // It backs off: the checks of the next seconds (every 1s) find the
    // session logged out and fail without posting the form again.
    let n = shop.account().len();
    shop.wait_account(n + 3);
    assert_eq!(shop.posts(), posts + 1, "{}", daemon.log());
    let log = daemon.log();
    assert!(log.contains("not tried again for"), "{log}");
    assert_eq!(daemon.stop().code(), Some(0));
    let store = store(dir);
    // The login page was never compared or stored: one snapshot, no
    // change, the threshold still on the real value.
    assert_eq!(store.snapshots("account").unwrap().len(), 1);
    assert_eq!(store.changes("account", None, 100).unwrap().len(), 0);
    assert_eq!(store.thresholds("account").unwrap()[0].value, Some(305.4));
    assert!(store.session_jar("shop").unwrap().is_some());
    // The password is in no log, status or stored jar.
    let jar = store.session_jar("shop").unwrap().unwrap().jar;
    for (what, text) in [("log", &log), ("status", &error), ("jar", &jar)] {
        assert!(
            !text.contains(PASSWORD),
            "the password in the {what}:\n{text}"
        );
    }
    assert!(log.contains("logged in"), "{log}");
}

#[test]
fn a_cookies_txt_imported_into_a_session_is_sent_and_a_bad_one_imports_nothing() {
    let shop = Shop::start();
    shop.admit("from-browser");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let watch = format!(
        "url: {}\nschedule: {{every: 1h}}\nsession: manual\nblocked: [\"{LOGGED_OUT}\"]\n",
        shop.url("/account")
    );
    setup(dir, "sessions:\n  manual: {}\n", &[("account", watch)]);
    let config = dir.join("semclip.yaml");
    let config = config.to_str().unwrap();

    // A bad line: an error naming the file and line, nothing stored.
    let bad = dir.join("bad.txt");
    std::fs::write(
        &bad,
        "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfrom-browser\n\
         127.0.0.1\tFALSE\t/\tMAYBE\t0\tx\t1\n",
    )
    .unwrap();
    let args = [
        "cookies",
        "import",
        "manual",
        bad.to_str().unwrap(),
        "--config",
        config,
    ];
    let out = semclip(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(
        stderr.contains("bad.txt:3: secure must be TRUE or FALSE, not `MAYBE`")
            && stderr.contains("nothing imported"),
        "{}",
        describe(&args, &out)
    );
    assert!(store(dir).session_jar("manual").unwrap().is_none());

    // Over the size cap (a 17 MiB file): refused whole, as it is read.
    let huge = dir.join("huge.txt");
    let line = format!("127.0.0.1\tFALSE\t/\tFALSE\t0\tc\t{}\n", "v".repeat(1000));
    std::fs::write(&huge, line.repeat((17 << 20) / line.len() + 1)).unwrap();
    let args = [
        "cookies",
        "import",
        "manual",
        huge.to_str().unwrap(),
        "--config",
        config,
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("huge.txt: the file is larger than 16 MiB: nothing imported"),
        "{}",
        describe(&args, &out)
    );
    assert!(store(dir).session_jar("manual").unwrap().is_none());

    // An unknown session is refused by name.
    let args = ["cookies", "import", "typo", "-", "--config", config];
    let out = semclip(&args, Some(b""));
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session `typo`"));

    // A good file: the cookie reaches the site with the check.
    let good = "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfrom-browser\n";
    let args = ["cookies", "import", "manual", "-", "--config", config];
    let out = semclip(&args, Some(good.as_bytes()));
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("imported 1 cookie into session `manual`"),
        "{stdout}"
    );
    assert!(!stdout.contains("from-browser"), "values are never printed");
    let args = ["check", "--config", config];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert_eq!(shop.account(), [Some("sid=from-browser".to_owned())]);

    // Cleared: the next check is logged out (here: blocked), and fails.
    let args = ["cookies", "clear", "manual", "--config", config];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let args = ["check", "--config", config];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert_eq!(shop.account().last().unwrap(), &None);
}
