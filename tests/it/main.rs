//! semclip's integration tests: one binary (link time on two cores), one
//! module per area. Tests that need `../shared/corpus/` (or a part of it)
//! or Chromium skip with a message when it is absent, and fail when `CI` is
//! set (CI always has them): see `util::missing`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on purpose"
)]
#![allow(
    unreachable_pub,
    reason = "a test binary: nothing is reachable from outside, a `pub` item is one the test modules share"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "a test's lock().unwrap() fails loudly on purpose; the daemon's poison recovery (semclip::sync::lock) is the library's"
)]
#![allow(
    clippy::too_many_lines,
    reason = "a test is a scenario told in order; the function budget is the library's"
)]

mod alerts;
mod articles;
mod browser;
mod browser_sessions;
mod channels;
mod cli;
mod complete;
mod config;
mod corpus;
mod daemon;
mod data;
mod diff;
mod docs;
mod fixture;
mod handlers;
mod harness;
mod hostile;
mod identity;
mod layers;
mod layout;
mod markup;
mod migrate;
mod notify;
mod pg;
mod props;
mod record_changes;
mod records;
mod refresh;
mod region;
mod replica_news;
mod replicas;
mod rtdm;
mod series;
mod serve;
mod sessions;
mod shapes;
mod source;
mod store;
mod tables;
mod templates;
mod util;
mod xpath_diff;
mod xpath_native;
