//! The daemon file's `sessions`: a login form or browser login steps, and
//! the XPaths that show a page logged out.

use url::Url;

use super::{Ctx, valid_id, xpath_list};
use crate::config::raw::{RawSecretOrText, RawSession, RawStep, Sp};
use crate::config::tree::join;
use crate::config::{FormField, Login, LoginForm, LoginHow, SessionConfig};
use crate::page::browser::{Step, WaitFor};
use crate::page::fence::Fence;

/// Session `name`: its login form (URL through the fence, fields with
/// their secrets read) and logged-out XPaths. `None` after a diagnostic.
pub(super) fn session(
    name: &str,
    raw: &RawSession,
    fence: &Fence,
    cx: &mut Ctx,
) -> Option<SessionConfig> {
    if !valid_id(name) {
        return None;
    }
    let Some(login) = &raw.login else {
        return Some(SessionConfig::default());
    };
    let path = join(&join("sessions", name), "login");
    let l = &login.value;
    let url = match Url::parse(l.url.value.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => match fence.check_watch_url(&u) {
            Ok(()) => Some(u),
            Err(e) => {
                cx.err(l.url.at, &join(&path, "url"), e.to_string());
                None
            }
        },
        Ok(u) => {
            cx.err(
                l.url.at,
                &join(&path, "url"),
                format!(
                    "unsupported scheme `{}`: a login is posted over http or https",
                    u.scheme()
                ),
            );
            None
        }
        Err(e) => {
            cx.err(
                l.url.at,
                &join(&path, "url"),
                format!("invalid URL `{}`: {e}", l.url.value),
            );
            None
        }
    };
    let mut fields = Vec::new();
    let mut ok = true;
    let steps = match &l.steps {
        Some(steps) if l.fields.is_some() => {
            cx.err(
                steps.at,
                &join(&path, "steps"),
                "a login has either fields (a form posted) or steps (in the browser), not both",
            );
            ok = false;
            None
        }
        Some(steps) => login_steps(steps, &join(&path, "steps"), cx),
        None => None,
    };
    ok &= l.steps.is_none() || steps.is_some();
    for (field, value) in l.fields.iter().flatten() {
        let at = join(&join(&path, "fields"), field);
        match &value.value {
            RawSecretOrText::Text(text) => fields.push(FormField {
                name: field.clone(),
                value: text.clone(),
                secret: false,
            }),
            RawSecretOrText::Secret(secret) => {
                let raw = Sp {
                    value: secret.clone(),
                    at: value.at,
                };
                match cx.secret(&raw, &at) {
                    Some(s) => fields.push(FormField {
                        name: field.clone(),
                        value: s.expose().to_owned(),
                        secret: true,
                    }),
                    None => ok = false,
                }
            }
        }
    }
    let logged_out = xpath_list(Some(&l.logged_out), &join(&path, "logged_out"), cx);
    if l.logged_out.value.is_empty() {
        cx.err(
            l.logged_out.at,
            &join(&path, "logged_out"),
            "at least one XPath is needed: the login runs only when the page shows one",
        );
        ok = false;
    }
    let url = url?;
    let how = match steps {
        Some(steps) => LoginHow::Steps { url, steps },
        None => LoginHow::Form(LoginForm { url, fields }),
    };
    let login = Login { how, logged_out };
    ok.then_some(SessionConfig { login: Some(login) })
}

/// The steps of a browser login, their secrets read and their XPaths
/// compiled; `None` after a diagnostic.
fn login_steps(raw: &Sp<Vec<Sp<RawStep>>>, path: &str, cx: &mut Ctx) -> Option<Vec<Step>> {
    if raw.value.is_empty() {
        cx.err(raw.at, path, "at least one step is needed");
        return None;
    }
    let mut steps = Vec::new();
    let mut ok = true;
    for (i, step) in raw.value.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let selector = |spec: &str, cx: &mut Ctx| {
            let spec = spec.trim();
            let parsed = WaitFor::parse(spec);
            match &parsed {
                _ if spec.is_empty() => {
                    cx.err(step.at, &at, "an empty selector");
                    None
                }
                WaitFor::XPath(x) => {
                    let x = Sp {
                        value: x.clone(),
                        at: step.at,
                    };
                    cx.xpath(&x, &at).map(|_| parsed.clone())
                }
                WaitFor::Css(_) => Some(parsed.clone()),
            }
        };
        let parsed = match &step.value {
            RawStep::Fill(fill) => {
                let selector = selector(&fill.selector, cx);
                let value = match &fill.value {
                    RawSecretOrText::Text(text) => Some(text.clone()),
                    RawSecretOrText::Secret(secret) => {
                        let raw = Sp {
                            value: secret.clone(),
                            at: step.at,
                        };
                        cx.secret(&raw, &format!("{at}.value"))
                            .map(|s| s.expose().to_owned())
                    }
                };
                selector
                    .zip(value)
                    .map(|(selector, value)| Step::Fill { selector, value })
            }
            RawStep::Click(spec) => selector(spec, cx).map(Step::Click),
            RawStep::WaitFor(spec) => selector(spec, cx).map(Step::WaitFor),
        };
        match parsed {
            Some(step) => steps.push(step),
            None => ok = false,
        }
    }
    ok.then_some(steps)
}
