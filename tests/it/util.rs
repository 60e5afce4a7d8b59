//! Shared test helpers: corpus location, fixture paths, running the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The project root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures").join(name)
}

/// `../shared/corpus`, or `None` (with a message on stderr) when absent.
pub fn corpus(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SEMCLIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/corpus"));
    if dir.is_dir() {
        Some(dir)
    } else if ci() {
        // CI lays `shared/` beside the clone: a missing corpus there is a
        // broken set-up, not a reason to pass.
        panic!(
            "{test}: corpus not found at {} and CI is set (set SEMCLIP_CORPUS)",
            dir.display()
        );
    } else {
        eprintln!(
            "SKIPPED {test}: corpus not found at {} (set SEMCLIP_CORPUS)",
            dir.display()
        );
        None
    }
}

/// Whether a missing test input fails the test: under `CI`, where every
/// input is provided, a missing one is a broken set-up, not a reason to pass.
pub fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Reports that `test` cannot run without `what`: panics under `CI`,
/// else prints `SKIPPED` on stderr (the caller then returns).
pub fn missing(test: &str, what: &str) {
    assert!(!ci(), "{test}: {what}, and CI is set");
    eprintln!("SKIPPED {test}: {what}");
}

/// Debian's Chromium, if installed. Without it `test` is skipped with a
/// message, or fails under `CI` (`.ci/run` installs it).
pub fn chromium(test: &str) -> Option<&'static str> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if found.is_none() {
        missing(
            test,
            "no Chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)",
        );
    }
    found
}

/// `dir` when it is a directory; else [`missing`] and `None`.
pub fn require_dir(test: &str, dir: PathBuf) -> Option<PathBuf> {
    if dir.is_dir() {
        Some(dir)
    } else {
        missing(test, &format!("{} not found", dir.display()));
        None
    }
}

/// The address a `semclip run` or `semclip serve` logging to `log` bound
/// its clip server to (the `addr` of its "clip server listening" line),
/// waiting up to `timeout` for the line. Tests give `listen:
/// 127.0.0.1:0` and read the port here rather than racing for a port
/// freed beforehand.
pub fn bound_addr(log: &Path, timeout: std::time::Duration) -> std::net::SocketAddr {
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text
            .lines()
            .filter(|l| l.contains(semclip::serve::listen::LISTENING))
            .find_map(|l| {
                let (_, rest) = l
                    .split_once("addr=")
                    .or_else(|| l.split_once("\"addr\":\""))?;
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '"')
                    .unwrap_or(rest.len());
                rest[..end].parse().ok()
            });
        if let Some(addr) = found {
            return addr;
        }
        assert!(
            start.elapsed() < timeout,
            "no {:?} line with an addr in {} within {timeout:?}:\n{text}",
            semclip::serve::listen::LISTENING,
            log.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Every `*.html` file under `dir`, recursively, sorted.
pub fn html_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html" || x == "htm") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The real pages of the corpus used by whole-corpus tests: articles,
/// changes and records (several hundred pages).
pub fn corpus_pages(corpus: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for sub in ["articles", "changes", "records", "tables"] {
        v.extend(html_files(&corpus.join(sub)));
    }
    // The change pairs and captures carry no extension.
    for sub in [
        "changes/web-monitoring-diff/example_data",
        "changes/web-monitoring-diff/versions",
    ] {
        if let Ok(entries) = std::fs::read_dir(corpus.join(sub)) {
            let mut files: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            v.extend(files);
        }
    }
    assert!(
        !v.is_empty(),
        "no pages under {}: a corpus without its pages would pass every test over it",
        corpus.display()
    );
    v
}

/// Decodes a page file the way the CLI does.
pub fn read_page(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let url = url::Url::from_file_path(path).ok();
    semclip::page::source::decode(&bytes, None, url.as_ref()).text
}

/// Runs the built `semclip` binary with `args` (and optional stdin).
pub fn semclip(args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semclip"));
    cmd.args(args)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(data) = stdin {
        let mut s = child.stdin.take().unwrap();
        s.write_all(data).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Describes a finished command for assertion messages.
pub fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "semclip {}\nstatus: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
