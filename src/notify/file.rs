//! File notifier: one JSON line per alert, `{"version":"1", ...alert}`
//! (with its `link` when the daemon has a public URL), appended to a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use tokio::sync::Mutex;

use super::links::Links;
use super::{Alert, Delivered, DeliveryError, Line, PAYLOAD_VERSION};

/// Appends alerts to a JSON lines file.
#[derive(Debug)]
pub struct FileNotifier {
    name: String,
    path: PathBuf,
    /// One append at a time from this notifier (O_APPEND already keeps
    /// writers from other processes from interleaving inside a line).
    lock: Mutex<()>,
    /// Each alert's `link`.
    links: Links,
}

impl FileNotifier {
    pub(super) fn new(name: &str, path: &Path, links: Links) -> FileNotifier {
        FileNotifier {
            name: name.to_owned(),
            path: path.to_owned(),
            lock: Mutex::new(()),
            links,
        }
    }

    /// The notifier's name in the daemon file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file the alerts go to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) async fn deliver(&self, alerts: &[Alert]) -> Result<(), DeliveryError> {
        let mut lines = Vec::new();
        for alert in alerts {
            serde_json::to_writer(
                &mut lines,
                &Line {
                    version: PAYLOAD_VERSION,
                    alert: Delivered::new(alert, &self.links),
                },
            )
            .map_err(|e| {
                DeliveryError::permanent(format!("cannot encode alert {}: {e}", alert.id))
            })?;
            lines.push(b'\n');
        }
        let _guard = self.lock.lock().await;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || append(&path, &lines))
            .await
            .map_err(|e| DeliveryError::transient(format!("file writer task: {e}")))?
    }
}

/// Creates the parent directories and the file, then appends `bytes` with a
/// single `write_all`, so a reader never sees half a line.
fn append(path: &Path, bytes: &[u8]) -> Result<(), DeliveryError> {
    // Disk full, permissions and the like can be fixed without a restart:
    // all transient, the outbox gives up after `give_up_after`.
    let fail = |what: &str, e: std::io::Error| {
        DeliveryError::transient(format!("{what} {}: {e}", path.display()))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| fail("cannot create the directory of", e))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| fail("cannot open", e))?;
    file.write_all(bytes).map_err(|e| fail("cannot write", e))?;
    file.flush().map_err(|e| fail("cannot flush", e))
}
