//! semclip: semantic web clipping and monitoring.
//!
//! The library takes a web page (bytes from a file, stdin or a URL) and gives
//! its *semantic hierarchy*: an XML document of the page's data, every node
//! labelled with its own XPath; the daemon checks watched pages, reports
//! changes in that data, raises threshold alarms and serves clips.
//!
//! # Layout
//!
//! One folder per stage, in pipeline order. A module imports only from its
//! own stage and the stages above it in this list, never from one below
//! (`tests/it/layers.rs` holds the code to that, and to no import circle):
//!
//! 1. [`sync`]: the one poison-recovering `Mutex` lock every stage takes;
//! 2. [`page`]: load a page (file, stdin, URL through the fence, polite
//!    fetching), decode it and parse it into a DOM within the page budget;
//! 3. [`hierarchy`]: build the semantic hierarchy from the DOM (tables,
//!    text, structured data, numbers), write it as XML/JSON/outline, read a
//!    written one back, and its compact packed form;
//! 4. [`xpath`]: check XPath syntax and evaluate XPath over a hierarchy
//!    (natively for the common forms, libxml2 for the rest);
//! 5. [`diff`]: the semantic changes between two hierarchies, and how a
//!    change reads as one line;
//! 6. [`template`]: structural similarity, clustering and templates of a
//!    site's pages;
//! 7. [`extract`]: article, record and keyword-region extraction;
//! 8. [`store`]: snapshots, change events, watch and threshold state, the
//!    outbox, in SQLite, and the pool the daemon shares;
//! 9. [`config`]: watch files and the daemon file, read and validated in
//!    two phases; schedules; starter YAML;
//! 10. [`notify`]: notifiers (email, webhooks, chat services, files) that
//!     deliver one alert;
//! 11. [`monitor`]: one check of one watch (compare, thresholds, layout);
//! 12. [`serve`]: the HTTP clip server, status pages, API and metrics;
//! 13. [`daemon`]: `semclip run`: the scheduler, the outbox deliverer, the
//!     demo site, signals and reloads;
//! 14. [`cli`] and [`commands`]: the command line and one module per
//!     subcommand.

pub mod sync;

pub mod page;

pub mod hierarchy;

pub mod xpath;

pub mod diff;

pub mod template;

pub mod extract;

pub mod store;

pub mod config;

pub mod notify;

pub mod monitor;

pub mod serve;

pub mod daemon;

pub mod cli;
pub mod commands;

/// The version of the hierarchy vocabulary written into every document's
/// `version` attribute. Bump it only on purpose (see docs/hierarchy.md, "The vocabulary (version 2)").
/// 2: rows keyed by the column that names them (issue 30), labels without
/// pictures' alt text or navigation chrome, side-by-side blocks as rows.
/// One digit: the packed form's tag carries it ([`hierarchy::packed::FORMAT`]).
pub const VOCABULARY_VERSION: &str = "2";

/// An error and its causes on one line, `a: b: c`, leaving out a cause
/// whose text its parent already holds.
///
/// semclip's own errors do not repeat their source (a chain of them reads
/// the same through anyhow's `{:#}`), but some of the libraries' do:
/// lettre's SMTP error appends its source to its own message. This helper
/// stays for the texts that reach a user whole and once: a watch's
/// `last_error` from a failed fetch, an SMTP delivery failure, a skipped
/// page in `semclip learn`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// An error and its causes as a log field: `error = %ErrorChain(&error)`.
///
/// Every error a log line carries goes through this one adapter: a plain
/// `%error` prints the top error only and loses its causes (a thiserror
/// `Display` does not repeat its source, and `{:#}` is anyhow's, not
/// theirs). The text is [`error_chain`]'s, `a: b: c`.
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'a));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&error_chain(self.0))
    }
}
