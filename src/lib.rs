//! semclip: semantic web clipping and monitoring.
//!
//! The library takes a web page (bytes from a file, stdin or a URL) and gives
//! its *semantic hierarchy*: an XML document of the page's data, every node
//! labelled with its own XPath. Modules follow the pipeline:
//!
//! - [`source`]: load a page from a path, stdin or a URL and decode it to text;
//! - [`fence`]: the daemon's fence around local files and internal hosts;
//! - [`fetch`]: the daemon's polite fetching (retries, per-host limits, redirects through the fence);
//! - [`dom`]: parse HTML with html5ever into an owned, spec-compliant tree;
//! - [`hierarchy`]: turn the tree into the semantic hierarchy (ALGORITHMS.md §1);
//! - [`number`]: read numbers the way the page's locale writes them;
//! - [`output`]: serialise a hierarchy as XML, JSON or an outline;
//! - [`xpath`]: check and evaluate XPath 1.0 over the hierarchy document;
//! - [`diff`]: the semantic changes between two hierarchies (ALGORITHMS.md §2);
//! - [`document`]: read a saved hierarchy document back;
//! - [`starter`]: starter YAML for a node or a page (the status tree's snippets, `semclip init`);
//! - [`store`]: keep each watch's current hierarchy, its change history and retention in SQLite;
//! - [`template`]: structural similarity, clustering and templates of a site's pages (ALGORITHMS.md §4, §5);
//! - [`extract`]: article, record and keyword-region extraction (ALGORITHMS.md §5, §6).

pub mod budget;
pub mod check;
pub mod cli;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod diff;
pub mod document;
pub mod dom;
pub mod extract;
pub mod fence;
pub mod fetch;
pub mod hierarchy;
pub mod layout;
pub mod metrics;
pub mod notify;
pub mod number;
pub mod outbox;
pub mod output;
pub mod refresh;
pub mod schedule;
pub mod serve;
pub mod source;
pub mod starter;
pub mod store;
pub mod template;
pub mod threshold;
pub mod xpath;

/// The version of the hierarchy vocabulary written into every document's
/// `version` attribute. Bump it only on purpose (see README, "Vocabulary").
pub const VOCABULARY_VERSION: &str = "1";

/// An error and its causes on one line, `a: b: c`, leaving out a cause
/// whose text its parent already holds (many wrap their source's message).
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
