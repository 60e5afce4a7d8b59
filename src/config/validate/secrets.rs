//! Secrets read from an environment variable or a file (`{env: NAME}`,
//! `{file: PATH}`): a variable's name is well formed, a file is a regular
//! file of at most [`MAX_SECRET_FILE`] bytes, never a kernel file.

use std::path::Path;

use super::io_reason;
use crate::config::{MAX_SECRET_FILE, Secret};
use crate::page::fence::FencedRead;

/// Why `name` cannot name an environment variable, if it cannot: it is
/// empty, or holds `=` or NUL.
pub(super) fn env_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("an empty environment variable name: write {env: NAME}".to_owned())
    } else if name.contains(['=', '\0']) {
        Some(format!(
            "`{}` cannot name an environment variable (it holds = or NUL)",
            name.escape_debug()
        ))
    } else {
        None
    }
}

/// A secret from environment variable `name`, or why there is none.
pub fn secret_from_env(name: &str) -> Result<Secret, String> {
    if let Some(problem) = env_name_problem(name) {
        return Err(problem);
    }
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(Secret(v)),
        Ok(_) => Err(format!("environment variable {name} is empty")),
        Err(std::env::VarError::NotPresent) => {
            Err(format!("environment variable {name} is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("environment variable {name} is not valid UTF-8"))
        }
    }
}

/// A secret from the file at `full` (one trailing line break dropped), or
/// why there is none.
pub fn secret_from_file(full: &Path) -> Result<Secret, String> {
    // Kernel files are nobody's secret: `/proc/self/environ` would hand the
    // daemon's whole environment (every `{env:}` secret) to one field, and
    // reading them is never what a watch means. Judged by the real path, so
    // a link elsewhere to them is refused too.
    if let Ok(real) = std::fs::canonicalize(full)
        && let Some(root) = ["/proc", "/sys"].iter().find(|root| real.starts_with(root))
    {
        return Err(format!(
            "cannot read secret file {}: a kernel file (under {root}), not a secret",
            full.display()
        ));
    }
    let read = crate::page::fence::read_regular(full, MAX_SECRET_FILE).and_then(|bytes| {
        String::from_utf8(bytes)
            .map_err(|_| FencedRead::Io(std::io::Error::from(std::io::ErrorKind::InvalidData)))
    });
    match read {
        Ok(mut text) => {
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            if text.is_empty() {
                return Err(format!("secret file {} is empty", full.display()));
            }
            Ok(Secret(text))
        }
        Err(e) => {
            let reason = match e {
                FencedRead::Io(e) => io_reason(&e),
                FencedRead::TooLarge => format!("larger than {} KiB", MAX_SECRET_FILE / 1024),
                FencedRead::Fence(e) => match e {
                    crate::page::fence::FenceError::NotRegular { kind, .. } => {
                        format!("a {kind}, not a regular file")
                    }
                    other => other.to_string(),
                },
            };
            Err(format!(
                "cannot read secret file {}: {reason}",
                full.display()
            ))
        }
    }
}
