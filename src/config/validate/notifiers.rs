//! The daemon file's `smtp` section and its notifiers: email, webhook and
//! file here, chat and push ones in [`crate::config::channels`].

use std::time::Duration;

use url::Url;

use super::{Ctx, valid_id};
use crate::config::channels::channel_config;
use crate::config::raw::{RawEmail, RawNotifier, RawSecurity, RawSmtp, RawWebhook, Sp};
use crate::config::tree::join;
use crate::config::{NotifierConfig, SmtpConfig, SmtpSecurity, WebhookConfig};

/// The `smtp` section.
pub(super) fn smtp_settings(smtp: &Sp<RawSmtp>, cx: &mut Ctx) -> SmtpConfig {
    let s = &smtp.value;
    let security = match s.security.as_ref().map(|s| s.value) {
        None | Some(RawSecurity::Starttls) => SmtpSecurity::StartTls,
        Some(RawSecurity::Tls) => SmtpSecurity::Tls,
        Some(RawSecurity::None) => SmtpSecurity::None,
    };
    let port = s.port.as_ref().map_or(
        match security {
            SmtpSecurity::StartTls => 587,
            SmtpSecurity::Tls => 465,
            SmtpSecurity::None => 25,
        },
        |p| p.value,
    );
    if port == 0
        && let Some(p) = &s.port
    {
        cx.err(p.at, "smtp.port", "must be a port number from 1 to 65535");
    }
    if s.host.value.trim().is_empty() {
        cx.err(s.host.at, "smtp.host", "must not be empty");
    }
    cx.mailbox(&s.from, "smtp.from");
    let password = s
        .password
        .as_ref()
        .and_then(|p| cx.secret(p, "smtp.password"));
    if s.password.is_some() && s.username.is_none() {
        cx.err(smtp.at, "smtp.username", "a password needs a username");
    }
    let timeout = cx.duration_min(
        s.timeout.as_ref(),
        "smtp.timeout",
        Duration::from_secs(30),
        Duration::from_millis(1),
    );
    SmtpConfig {
        host: s.host.value.trim().to_owned(),
        port,
        security,
        username: s.username.as_ref().map(|u| u.value.clone()),
        password,
        from: s.from.value.clone(),
        timeout,
    }
}

/// Notifier `name` (`has_smtp`: whether the daemon file has an `smtp`
/// section); `None` after reporting its problems, when it cannot be built.
pub(super) fn notifier(
    name: &str,
    n: &Sp<RawNotifier>,
    has_smtp: bool,
    cx: &mut Ctx,
) -> Option<NotifierConfig> {
    let path = join("notifiers", name);
    if !valid_id(name) {
        cx.err(
            n.at,
            &path,
            format!("notifier name `{name}` may only use A-Z a-z 0-9 . _ -"),
        );
    }
    match &n.value {
        RawNotifier::Email(e) => Some(email_notifier(e, &path, has_smtp, cx)),
        RawNotifier::Webhook(w) => webhook_notifier(w, &path, cx).map(NotifierConfig::Webhook),
        RawNotifier::File(f) => {
            if f.value.path.value.trim().is_empty() {
                cx.err(
                    f.value.path.at,
                    &join(&path, "file.path"),
                    "must not be empty",
                );
            }
            Some(NotifierConfig::File {
                path: cx.path(&f.value.path.value),
            })
        }
        channel => channel_config(channel, &path, cx).map(NotifierConfig::Channel),
    }
}

/// An email notifier (`path` is `notifiers.NAME`).
fn email_notifier(e: &Sp<RawEmail>, path: &str, has_smtp: bool, cx: &mut Ctx) -> NotifierConfig {
    let p = join(path, "email");
    if !has_smtp {
        cx.err(
            e.at,
            &p,
            "email notifiers need an `smtp` section in the daemon file",
        );
    }
    let to_path = join(&p, "to");
    if e.value.to.value.is_empty() {
        cx.err(e.value.to.at, &to_path, "give at least one mailbox");
    }
    for (i, m) in e.value.to.value.iter().enumerate() {
        cx.mailbox(m, &format!("{to_path}[{i}]"));
    }
    NotifierConfig::Email {
        to: e.value.to.value.iter().map(|m| m.value.clone()).collect(),
    }
}

/// A webhook notifier (`path` is `notifiers.NAME`); `None` without a
/// valid URL, after every problem is reported.
fn webhook_notifier(w: &Sp<RawWebhook>, path: &str, cx: &mut Ctx) -> Option<WebhookConfig> {
    let p = join(path, "webhook");
    let url = match Url::parse(w.value.url.value.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Some(u),
        Ok(u) => {
            cx.err(
                w.value.url.at,
                &join(&p, "url"),
                format!("unsupported scheme `{}`: use http or https", u.scheme()),
            );
            None
        }
        Err(e) => {
            cx.err(
                w.value.url.at,
                &join(&p, "url"),
                format!("invalid URL `{}`: {e}", w.value.url.value),
            );
            None
        }
    };
    let secret = w
        .value
        .secret
        .as_ref()
        .and_then(|s| cx.secret(s, &join(&p, "secret")));
    let timeout = cx.duration_min(
        w.value.timeout.as_ref(),
        &join(&p, "timeout"),
        Duration::from_secs(10),
        Duration::from_millis(1),
    );
    let headers = cx.headers(w.value.headers.as_ref(), &join(&p, "headers"));
    Some(WebhookConfig {
        url: url?,
        secret,
        timeout,
        headers,
    })
}
