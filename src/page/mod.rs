//! Stage 1, the page: a spec (path, `-`, URL) in, decoded text and an owned
//! DOM out, inside the page budget.
//!
//! - [`source`]: load a page from a path, stdin or a URL and decode it to text;
//! - [`fence`]: which files and addresses the daemon may reach;
//! - [`fetch`]: the daemon's polite fetching (conditional GET, retries,
//!   per-host limits, redirects through the fence);
//! - [`session`]: cookie jars, `cookies.txt` and login forms of sessions
//!   that stay logged in;
//! - [`dom`]: parse HTML with html5ever into an owned, spec-compliant tree;
//! - [`budget`]: bounds on what one page may make semclip build and spend;
//! - [`browser`]: rendering JavaScript pages in one supervised local
//!   Chromium.
//!
//! Nothing here knows about hierarchies, watches' data or the store.

pub mod blocked;
pub mod browser;
pub mod budget;
pub mod dom;
pub mod fence;
pub mod fetch;
pub mod session;
pub mod source;
