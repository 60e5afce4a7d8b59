//! Validation: raw structures in, the validated types of [`super`] out, and
//! every problem found as a [`Diagnostic`].
//!
//! This module holds what [`super`] calls: the loaders
//! ([`load_daemon_file`], [`load_watch_dir`]) and the built-in defaults
//! ([`daemon_defaults`]). The context of one file ([`Ctx`]: its
//! diagnostics, its directory for relative paths, and the checks of
//! durations, byte sizes, secrets, header values, URLs, XPaths and notifier
//! names) is in [`ctx`], which the chat channels ([`super::channels`]) check
//! with too. The sections are checked one file each:
//!
//! - [`daemon`](mod@daemon): the daemon file's top level (`database`,
//!   `listen`, `demo`), `server`, `tokens`, the `fetch` defaults and the
//!   fence, `limits`, `alerts`, `retention` and `browser`;
//! - [`notifiers`]: `smtp`, and the email, webhook and file notifiers
//!   (the chat and push ones are checked by their own units in
//!   [`super::channels`]);
//! - [`sessions`]: sessions, their logins and login steps;
//! - [`watch`](mod@watch): a watch file: id, url, schedule, clips,
//!   thresholds, `on_change`, `failures`, `layout`, `session` and `keys`;
//! - [`fetch`]: the fetch settings both files share, a watch's `fetch`
//!   section and its render options;
//! - [`secrets`]: secrets read from an environment variable or a file.
//!
//! The section files import from here and from earlier stages; between
//! them only downward: [`daemon`](mod@daemon) uses [`notifiers`],
//! [`sessions`] and [`fetch`], [`notifiers`] uses [`super::channels`], and
//! [`watch`](mod@watch) uses [`fetch`].

pub(super) mod ctx;
mod daemon;
mod fetch;
mod notifiers;
mod secrets;
mod sessions;
mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::lenient::{self, Read};
use super::raw::{Pos, RawDaemon, RawWatch, Sp};
use super::tree::DOCUMENT;
use super::{
    AlertSettings, DaemonConfig, Database, Diagnostic, FetchDefaults, Limits, Secrets,
    ServerConfig, Watch,
};
use crate::page::browser::BrowserSettings;
use crate::page::fence::Fence;
use crate::store::Retention;

use ctx::Ctx;
use daemon::daemon;
pub use secrets::{secret_from_env, secret_from_file};
use watch::watch;

/// The reason of an I/O error, without the OS error number.
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::InvalidData => "not valid UTF-8".to_owned(),
        _ => e.to_string(),
    }
}

/// A watch id, notifier name: `[A-Za-z0-9._-]+`.
fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The XPaths of the list `key` (`ignore`, `blocked`) that compile.
fn xpath_list(list: Option<&Sp<Vec<Sp<String>>>>, key: &str, cx: &mut Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for (i, x) in list.iter().flat_map(|l| l.value.iter()).enumerate() {
        if cx.xpath(x, &format!("{key}[{i}]")).is_some() {
            out.push(x.value.clone());
        }
    }
    out
}

/// What loading the daemon file gave.
pub(crate) struct DaemonOutcome {
    /// The configuration (defaults where the file was wrong).
    pub config: DaemonConfig,
    /// The notifier names the file defines, when it parsed: watch files are
    /// checked against them only then.
    pub notifier_names: Option<BTreeSet<String>>,
    /// Where the watches directory was set (file, position), for a diagnostic
    /// when it is missing.
    pub watches_at: Option<(PathBuf, Pos)>,
}

impl DaemonOutcome {
    /// The built-in defaults.
    pub(crate) fn defaults() -> DaemonOutcome {
        DaemonOutcome {
            config: daemon_defaults(None, Path::new("")),
            notifier_names: Some(BTreeSet::new()),
            watches_at: None,
        }
    }
}

/// `$STATE_DIRECTORY` (its first entry), if set.
fn state_directory() -> Option<PathBuf> {
    let v = std::env::var_os("STATE_DIRECTORY")?;
    let s = v.to_string_lossy();
    let first = s.split(':').next().unwrap_or("");
    (!first.is_empty()).then(|| PathBuf::from(first))
}

/// The defaults, relative paths resolved against `base`.
pub(crate) fn daemon_defaults(path: Option<PathBuf>, base: &Path) -> DaemonConfig {
    DaemonConfig {
        path,
        database: Database::Sqlite(
            state_directory().map_or_else(|| base.join("semclip.db"), |d| d.join("semclip.db")),
        ),
        watches_dir: base.join("watches"),
        listen: None,
        server: ServerConfig::defaults(base),
        smtp: None,
        notifiers: BTreeMap::new(),
        tokens: BTreeMap::new(),
        fetch: FetchDefaults::default(),
        limits: Limits::default(),
        alerts: AlertSettings::default(),
        browser: BrowserSettings::default(),
        retention: Retention::default(),
        demo: None,
        sessions: BTreeMap::new(),
    }
}

/// Reads a file as UTF-8 text, or a diagnostic.
fn read_text(file: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(file).map_err(|e| Diagnostic {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        path: "(file)".to_owned(),
        message: format!("cannot read: {}", io_reason(&e)),
    })
}

/// Loads the daemon file at `file`, pushing its diagnostics.
pub(crate) fn load_daemon_file(
    file: &Path,
    secrets: Secrets,
    out: &mut Vec<Diagnostic>,
) -> DaemonOutcome {
    let base = file.parent().unwrap_or(Path::new(""));
    // A file that cannot be read whole: the watch files are checked against
    // the built-in defaults, not against its notifiers and sessions.
    let failed = |out: &mut Vec<Diagnostic>, mut diags: Vec<Diagnostic>| {
        diags.sort_by_key(|d| (d.line, d.column));
        out.append(&mut diags);
        DaemonOutcome {
            config: daemon_defaults(Some(file.to_path_buf()), base),
            notifier_names: None,
            watches_at: None,
        }
    };
    let text = match read_text(file) {
        Ok(t) => t,
        Err(d) => return failed(out, vec![d]),
    };
    // Unknown keys and wrong-typed values are reported and skipped, so the
    // rest is still checked.
    let mut reading = Vec::new();
    let Ok(Read {
        value: raw,
        replaced,
    }) = lenient::from_str::<Option<Sp<RawDaemon>>>(file, &text, &mut reading)
    else {
        return failed(out, reading);
    };
    let Some(raw) = raw else {
        out.append(&mut reading);
        return DaemonOutcome {
            config: daemon_defaults(Some(file.to_path_buf()), base),
            notifier_names: Some(BTreeSet::new()),
            watches_at: Some((file.to_path_buf(), Pos::START)),
        };
    };
    let mut cx = Ctx::new(file, secrets);
    let outcome = daemon(raw, &mut cx);
    cx.diags.retain(|d| replaced.keeps(d));
    cx.diags.append(&mut reading);
    cx.finish(out);
    if !replaced.any() {
        return outcome;
    }
    // A wrong value stood in for: the watch files are checked as against a
    // file that cannot be read, but looked for where this one says, unless
    // that is what was wrong.
    let mut failed = failed(out, Vec::new());
    if !replaced.has("watches") {
        failed.config.watches_dir = outcome.config.watches_dir;
        failed.watches_at = outcome.watches_at;
    }
    failed
}

/// Loads every watch file directly in `dir`, sorted by id.
pub(crate) fn load_watch_dir(
    dir: &Path,
    daemon: &DaemonConfig,
    known: Option<&BTreeSet<String>>,
    dir_at: Option<(PathBuf, Pos)>,
    secrets: Secrets,
    out: &mut Vec<Diagnostic>,
) -> Vec<Watch> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            let message = if e.kind() == std::io::ErrorKind::NotFound {
                format!("the watches directory {} does not exist", dir.display())
            } else {
                format!(
                    "cannot read the watches directory {}: {}",
                    dir.display(),
                    io_reason(&e)
                )
            };
            let (file, at) = dir_at.unwrap_or_else(|| (dir.to_path_buf(), Pos::default()));
            out.push(Diagnostic {
                file,
                line: at.line,
                column: at.column,
                path: "watches".to_owned(),
                message,
            });
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml") && p.is_file())
        .collect();
    files.sort();
    let mut watches: Vec<Watch> = Vec::new();
    let mut ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    let fence = daemon.fence();
    for file in &files {
        let Some((watch, id_at)) = load_watch_file(file, daemon, &fence, known, secrets, out)
        else {
            continue;
        };
        if let Some(first) = ids.get(&watch.id) {
            out.push(Diagnostic {
                file: file.clone(),
                line: id_at.line,
                column: id_at.column,
                path: "id".to_owned(),
                message: format!(
                    "watch id `{}` is already used by {}",
                    watch.id,
                    first.display()
                ),
            });
            continue;
        }
        ids.insert(watch.id.clone(), file.clone());
        watches.push(watch);
    }
    watches.sort_by(|a, b| a.id.cmp(&b.id));
    watches
}

/// Loads one watch file: the watch and where its id was set, or `None` after
/// pushing its diagnostics.
fn load_watch_file(
    file: &Path,
    daemon: &DaemonConfig,
    fence: &Fence,
    known: Option<&BTreeSet<String>>,
    secrets: Secrets,
    out: &mut Vec<Diagnostic>,
) -> Option<(Watch, Pos)> {
    let text = match read_text(file) {
        Ok(t) => t,
        Err(d) => {
            out.push(d);
            return None;
        }
    };
    // Unknown keys and wrong-typed values are reported and skipped, so the
    // rest is still checked.
    let mut reading = Vec::new();
    let (raw, replaced) = match lenient::from_str::<Option<Sp<RawWatch>>>(file, &text, &mut reading)
    {
        Ok(Read {
            value: Some(raw),
            replaced,
        }) => (raw, replaced),
        Ok(Read { value: None, .. }) => {
            out.append(&mut reading);
            out.push(Diagnostic {
                file: file.to_path_buf(),
                line: 1,
                column: 1,
                path: DOCUMENT.to_owned(),
                message: "the watch file is empty (it needs at least url and schedule)".to_owned(),
            });
            return None;
        }
        Err(()) => {
            reading.sort_by_key(|d| (d.line, d.column));
            out.append(&mut reading);
            return None;
        }
    };
    let mut cx = Ctx::new(file, secrets);
    let watch = watch(raw, daemon, fence, known, &mut cx);
    cx.diags.retain(|d| replaced.keeps(d));
    cx.diags.append(&mut reading);
    let ok = cx.diags.is_empty();
    cx.finish(out);
    if ok { watch } else { None }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(valid_id("demo-quotes.v2_x"));
        assert!(!valid_id(""));
        assert!(!valid_id("a b"));
        assert!(!valid_id("котировки"));
    }
}
