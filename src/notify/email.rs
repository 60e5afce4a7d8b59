//! Email notifier: a multipart/alternative message (text and HTML) through
//! the daemon's SMTP relay, with lettre.

use crate::error_chain;
use std::fmt::Write as _;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::format::{escape, facts, inert, is_web_link, title};
use super::links::Links;
use super::{Alert, DeliveryError, NotifyError};
use crate::config::{SmtpConfig, SmtpSecurity};

/// Mails alerts to a list of recipients.
#[derive(Debug)]
pub struct EmailNotifier {
    name: String,
    from: Mailbox,
    to: Vec<Mailbox>,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    /// Where each alert links to.
    links: Links,
}

impl EmailNotifier {
    pub(super) fn new(
        name: &str,
        to: &[String],
        smtp: &SmtpConfig,
        links: Links,
    ) -> Result<EmailNotifier, NotifyError> {
        let mailbox = |address: &str| {
            address
                .parse::<Mailbox>()
                .map_err(|e| NotifyError::Address {
                    notifier: name.to_owned(),
                    address: address.to_owned(),
                    message: e.to_string(),
                })
        };
        let from = mailbox(&smtp.from)?;
        let to = to
            .iter()
            .map(|address| mailbox(address))
            .collect::<Result<Vec<_>, _>>()?;
        if to.is_empty() {
            return Err(NotifyError::NoRecipients {
                notifier: name.to_owned(),
            });
        }
        let transport_error = |source| NotifyError::Transport {
            notifier: name.to_owned(),
            source,
        };
        let builder = match smtp.security {
            SmtpSecurity::StartTls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)
                    .map_err(transport_error)?
            }
            SmtpSecurity::Tls => {
                AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host).map_err(transport_error)?
            }
            SmtpSecurity::None => {
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host)
            }
        };
        let mut builder = builder.port(smtp.port).timeout(Some(smtp.timeout));
        if let (Some(username), Some(password)) = (&smtp.username, &smtp.password) {
            builder = builder.credentials(Credentials::new(
                username.clone(),
                password.expose().to_owned(),
            ));
        }
        Ok(EmailNotifier {
            name: name.to_owned(),
            from,
            to,
            transport: builder.build(),
            links,
        })
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let message = self.message(alerts)?;
        self.transport
            .send(message)
            .await
            .map(drop)
            .map_err(|e| classify(&e))
    }

    /// The message for one alert or a digest.
    fn message(&self, alerts: &[Alert]) -> Result<Message, DeliveryError> {
        let first = alerts
            .first()
            .ok_or_else(|| DeliveryError::permanent("no alert to mail"))?;
        let subject = subject(alerts);
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(subject.clone())
            .message_id(Some(message_id(&first.id)));
        for to in &self.to {
            builder = builder.to(to.clone());
        }
        builder
            .multipart(MultiPart::alternative_plain_html(
                text_body(alerts, &self.links),
                html_body(&subject, alerts, &self.links),
            ))
            .map_err(|e| DeliveryError::permanent(format!("cannot build the message: {e}")))
    }
}

/// SMTP 5xx and client-side errors (no common auth mechanism, no STARTTLS)
/// repeat; 4xx, connection, TLS and timeouts may not.
fn classify(e: &lettre::transport::smtp::Error) -> DeliveryError {
    let message = format!("SMTP: {}", error_chain(e));
    if e.is_permanent() || e.is_client() {
        DeliveryError::permanent(message)
    } else {
        DeliveryError::transient(message)
    }
}

/// `[semclip] <summary>` for one alert, `[semclip] <watch>: N alerts` for a
/// digest; on one line whatever the alert holds.
fn subject(alerts: &[Alert]) -> String {
    format!("[semclip] {}", title(alerts))
}

/// `<id@semclip>`, with characters a Message-ID cannot hold replaced by `-`.
fn message_id(id: &str) -> String {
    let local: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_+=".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let local = if local.is_empty() { "alert" } else { &local };
    format!("<{local}@semclip>")
}

/// The facts of `alert` as (label, value) rows, ending with its page on
/// semclip's server (its change view, or its watch's status page) when the
/// daemon has a public URL.
fn rows(alert: &Alert, links: &Links) -> Vec<(&'static str, String)> {
    let mut rows = facts(alert);
    rows.extend(links.server(alert));
    rows
}

/// The readable text/plain part: every change line of each alert (a mail
/// has room for them), and each alert's link.
fn text_body(alerts: &[Alert], links: &Links) -> String {
    let mut out = String::new();
    if alerts.len() > 1 {
        let watch = alerts.first().map_or("", |a| a.watch.as_str());
        let _ = writeln!(out, "{} alerts for {watch}\n", alerts.len());
    }
    for (i, alert) in alerts.iter().enumerate() {
        if i > 0 {
            out.push_str("\n----------------------------------------\n\n");
        }
        let _ = writeln!(out, "{}\n", inert(&alert.summary));
        let rows = rows(alert, links);
        let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
        for (label, value) in rows {
            let _ = writeln!(
                out,
                "{:<width$}  {value}",
                format!("{label}:"),
                width = width + 1
            );
        }
        if !alert.changes.is_empty() {
            out.push_str("\nChanges:\n");
            for change in &alert.changes {
                let _ = writeln!(out, "  {}", inert(&change.text));
            }
        }
    }
    out.push_str("\n-- \nsemclip\n");
    out
}

/// The text/html part: the same content, every dynamic string escaped.
fn html_body(subject: &str, alerts: &[Alert], links: &Links) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n\
         <body style=\"font-family: sans-serif\">\n",
        escape(subject)
    );
    if alerts.len() > 1 {
        let watch = alerts.first().map_or("", |a| a.watch.as_str());
        let _ = writeln!(out, "<p>{} alerts for {}</p>", alerts.len(), escape(watch));
    }
    for (i, alert) in alerts.iter().enumerate() {
        if i > 0 {
            out.push_str("<hr>\n");
        }
        let _ = writeln!(out, "<h2>{}</h2>\n<table>", escape(&inert(&alert.summary)));
        // The watched page and the server link are the links to click.
        let server = links.server(alert);
        for (label, value) in rows(alert, links) {
            let is_link = label == "Page" || server.as_ref().is_some_and(|(l, _)| *l == label);
            let cell = if is_link && is_web_link(&value) {
                format!("<a href=\"{0}\">{0}</a>", escape(&value))
            } else if label == "XPath" || label == "Node" {
                format!("<code>{}</code>", escape(&value))
            } else {
                escape(&value)
            };
            let _ = writeln!(
                out,
                "<tr><th align=\"left\" valign=\"top\">{}</th><td>{cell}</td></tr>",
                escape(label)
            );
        }
        out.push_str("</table>\n");
        if !alert.changes.is_empty() {
            out.push_str("<h3>Changes</h3>\n<ul>\n");
            for change in &alert.changes {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code></li>",
                    escape(&inert(&change.text))
                );
            }
            out.push_str("</ul>\n");
        }
    }
    out.push_str("<p style=\"color: gray\">semclip</p>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::message_id;

    #[test]
    fn message_ids_are_valid() {
        assert_eq!(message_id("42"), "<42@semclip>");
        assert_eq!(message_id("a b@c<d>"), "<a-b-c-d-@semclip>");
        assert_eq!(message_id(""), "<alert@semclip>");
    }
}
