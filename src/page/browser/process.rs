//! The browser as a process: its command line, the DevTools pipe bridge,
//! its profile directories and the reaping of what a killed run left, its
//! process group, and the memory of its process tree.

use super::*;
/// The browser's command line: headless, a throw-away profile, nothing
/// running in the background, no throttling of tabs not in front, a
/// bounded page heap, and no sandbox when running as root (Chromium
/// refuses to start sandboxed as root).
pub(super) fn browser_args(dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless=new",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--disable-sync",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        // Frames stay in their page's process, so that the tab's `Fetch`
        // interception sees their requests (an out-of-process frame is a
        // target of its own).
        "--disable-site-isolation-trials",
        "--disable-features=Translate,MediaRouter,OptimizationHints,IsolateOrigins,site-per-process",
        NO_WEBSOCKETS[0],
        NO_WEBSOCKETS[1],
        "--password-store=basic",
        "--use-mock-keychain",
        "--mute-audio",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    args.push(format!("--js-flags=--max-old-space-size={PAGE_HEAP_MIB}"));
    args.push(format!("--user-data-dir={}", dir.display()));
    if rustix::process::geteuid().is_root() {
        args.push("--no-sandbox".to_owned());
    }
    args.push("about:blank".to_owned());
    args
}

/// The browser's proxy rules, which leave a rendered page no WebSocket:
/// http and https go direct (each request judged by the fence first, the
/// `Fetch` domain), and every other scheme, WebSockets among them (Chromium
/// sends `ws:` and `wss:` to the fallback proxy first), to a SOCKS proxy
/// on loopback port 9 (discard), where nothing answers. Loopback is not
/// exempt (`<-loopback>`), so a WebSocket to the daemon's own host fails
/// too. Decision: a WebSocket's address cannot be judged before the
/// browser connects, and semclip reads a settled page, not a stream; a
/// page whose data comes over a WebSocket (most fall back to HTTP polling,
/// which is judged) is not a page for `render: browser`.
pub(super) const NO_WEBSOCKETS: [&str; 2] = [
    "--proxy-server=http=direct://;https=direct://;socks=socks5://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
];

/// The bridge between the driver, which speaks DevTools over a WebSocket
/// only, and the browser's pipe: a WebSocket endpoint on loopback at a
/// path holding 128 random bits, that accepts one connection (the
/// driver's, made at once) and then closes, so no port is open while the
/// browser runs. Each text message goes to the browser followed by a NUL;
/// each NUL-ended message from the browser comes back as a text message.
pub(super) struct PipeBridge;

impl PipeBridge {
    /// The endpoint's URL and the tasks that accept the driver and then
    /// carry its messages (stopped by aborting them).
    pub(super) async fn start(
        to_browser: std::io::PipeWriter,
        from_browser: std::io::PipeReader,
    ) -> std::io::Result<(String, Vec<JoinHandle<()>>)> {
        use tokio::io::AsyncWriteExt;
        let to_browser = tokio::net::unix::pipe::Sender::from_owned_fd(to_browser.into())?;
        let from_browser = tokio::net::unix::pipe::Receiver::from_owned_fd(from_browser.into())?;
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let token = format!("{:032x}", rand::random::<u128>());
        let path = format!("/devtools/browser/{token}");
        let url = format!("ws://{}{path}", listener.local_addr()?);
        let (ws_tx, ws_rx) = tokio::sync::oneshot::channel();
        let accept = tokio::spawn(async move {
            let accepted = tokio::time::timeout(LAUNCH_TIMEOUT, async {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    // Only the path with the token: a local process that
                    // races the driver gets a 404 and the endpoint stays.
                    // The error type is tungstenite's (its `Callback`).
                    #[allow(
                        clippy::result_large_err,
                        reason = "the error type is tungstenite's handshake callback's"
                    )]
                    let check = |request: &async_tungstenite::tungstenite::handshake::server::Request,
                                 response| {
                        if request.uri().path() == path {
                            Ok(response)
                        } else {
                            let mut refused = async_tungstenite::tungstenite::handshake::server::ErrorResponse::new(None);
                            *refused.status_mut() = async_tungstenite::tungstenite::http::StatusCode::NOT_FOUND;
                            Err(refused)
                        }
                    };
                    let config = async_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                        .max_message_size(None)
                        .max_frame_size(None);
                    if let Ok(ws) = async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(config)).await {
                        return ws;
                    }
                }
            })
            .await;
            // The listener is dropped here: the port closes.
            if let Ok(ws) = accepted {
                let _ = ws_tx.send(ws);
            }
        });
        let carry = tokio::spawn(async move {
            let Ok(ws) = ws_rx.await else {
                return;
            };
            let (mut sink, mut stream) = ws.split();
            let mut to_browser = to_browser;
            let inbound = async move {
                while let Some(Ok(message)) = stream.next().await {
                    let bytes = match message {
                        async_tungstenite::tungstenite::Message::Text(text) => {
                            text.as_bytes().to_vec()
                        }
                        async_tungstenite::tungstenite::Message::Binary(bytes) => bytes.to_vec(),
                        async_tungstenite::tungstenite::Message::Close(_) => break,
                        _ => continue,
                    };
                    if to_browser.write_all(&bytes).await.is_err()
                        || to_browser.write_all(&[0]).await.is_err()
                    {
                        break;
                    }
                }
            };
            let outbound = async move {
                let mut reader = BufReader::new(from_browser);
                let mut message = Vec::new();
                loop {
                    message.clear();
                    match reader.read_until(0, &mut message).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    if message.last() == Some(&0) {
                        message.pop();
                    }
                    let text = String::from_utf8_lossy(&message).into_owned();
                    if sink
                        .send(async_tungstenite::tungstenite::Message::text(text))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                let _ = sink.close(None).await;
            };
            // Either side ending ends the bridge: the driver then sees its
            // connection close, as it would the browser's own socket.
            tokio::select! {
                () = inbound => {}
                () = outbound => {}
            }
        });
        Ok((url, vec![accept, carry]))
    }
}

/// The profile directories made by this process and not removed yet.
pub(super) static PROFILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A fresh profile directory under the temporary directory.
pub(super) fn profile_dir() -> std::io::Result<PathBuf> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "semclip-browser-{}-{}-{:08x}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    ));
    // Its owner's alone: it holds the pages' cookies and storage.
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&dir)?;
    lock(&PROFILES).push(dir.clone());
    // The proof of ownership a later start reads (`reap_leftovers`): this
    // process, by pid and start time (a pid alone may be reused).
    let me = std::process::id();
    let started = start_time(me).unwrap_or(0);
    std::fs::write(dir.join(OWNER_FILE), format!("{me} {started}\n"))?;
    Ok(dir)
}

/// The file in a profile directory naming the process that made it.
pub(super) const OWNER_FILE: &str = "semclip-owner";
/// The prefix of the profile directories' names.
pub(super) const PROFILE_PREFIX: &str = "semclip-browser-";

/// The start time of `pid` (clock ticks after boot, /proc's field 22).
pub(super) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Removes what an earlier run left under the temporary directory (one
/// killed before it could clean up): each profile directory whose owner
/// file names a process no longer running (pid and start time), and,
/// first, every process whose command line names that directory as its
/// profile (`--user-data-dir=DIR`: a browser of that run, orphaned).
/// A directory without an owner file, or whose owner runs, is left
/// alone: it cannot be proven a leftover. Gives the directories removed.
pub fn reap_leftovers() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PROFILE_PREFIX) {
            continue;
        }
        let dir = entry.path();
        let Ok(owner) = std::fs::read_to_string(dir.join(OWNER_FILE)) else {
            continue;
        };
        let mut fields = owner.split_whitespace().map(str::parse::<u64>);
        let (Some(Ok(pid)), Some(Ok(started))) = (fields.next(), fields.next()) else {
            continue;
        };
        let Ok(pid) = u32::try_from(pid) else {
            continue;
        };
        if running(pid) && start_time(pid) == Some(started) {
            continue;
        }
        let argument = format!("--user-data-dir={}", dir.display());
        let orphans = processes_with_argument(&argument);
        for &orphan in &orphans {
            if let Some(p) = rustix::process::Pid::from_raw(orphan as i32) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        let deadline = std::time::Instant::now() + CLOSE_TIMEOUT;
        while orphans.iter().any(|&p| running(p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {
                tracing::info!(dir = %dir.display(), owner = pid, killed = orphans.len(), "removed a browser profile an earlier run left");
                removed.push(dir);
            }
            Err(error) => {
                tracing::warn!(dir = %dir.display(), error = %crate::ErrorChain(&error), "cannot remove a browser profile an earlier run left");
            }
        }
    }
    removed
}

/// The running processes one of whose arguments is exactly `argument`.
pub(super) fn processes_with_argument(argument: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            cmdline
                .split(|b| *b == 0)
                .any(|a| a == argument.as_bytes())
                .then_some(pid)
        })
        .filter(|&pid| pid != std::process::id() && running(pid))
        .collect()
}

/// Removes the profile directory `dir` (gone already counts as removed).
pub(super) fn remove_profile(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!(dir = %dir.display(), error = %crate::ErrorChain(&error), "cannot remove a browser profile");
        }
        _ => lock(&PROFILES).retain(|d| d != dir),
    }
}

/// Removes every profile directory this process made and has not removed.
pub(super) fn remove_profiles() {
    let dirs: Vec<PathBuf> = lock(&PROFILES).clone();
    for dir in dirs {
        remove_profile(&dir);
    }
}

/// Waits, at most `timeout`, until no process of the group `pgid` runs.
pub(super) fn wait_group_gone(pgid: u32, timeout: Duration) {
    let deadline = std::time::Instant::now() + timeout;
    while group_running(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills every process group in `groups`.
/// Gives the descendants that had left their group, killed too.
pub(super) fn kill_groups(groups: &Mutex<Vec<u32>>) -> Vec<u32> {
    let pids = std::mem::take(&mut *lock(groups));
    pids.into_iter().flat_map(kill_group).collect()
}

/// Kills the process group led by `pid` and any descendant that left it;
/// gives those descendants (whose end a caller waiting for the group
/// would not see).
pub(super) fn kill_group(pid: u32) -> Vec<u32> {
    let Some(leader) = rustix::process::Pid::from_raw(pid as i32) else {
        return Vec::new();
    };
    let strays: Vec<u32> = descendants(pid)
        .into_iter()
        .filter(|&p| process_group(p) != Some(pid))
        .collect();
    let _ = rustix::process::kill_process_group(leader, rustix::process::Signal::KILL);
    for &stray in &strays {
        if let Some(p) = rustix::process::Pid::from_raw(stray as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
    strays
}

/// The state and process group of `pid`, from /proc.
pub(super) fn state_and_group(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.to_owned();
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

pub(super) fn process_group(pid: u32) -> Option<u32> {
    state_and_group(pid).map(|(_, group)| group)
}

/// Whether `pid` still runs (a zombie does not).
pub(super) fn running(pid: u32) -> bool {
    state_and_group(pid).is_some_and(|(state, _)| state != "Z")
}

/// Whether a process of the group `pgid` still runs (zombies, dead and
/// waiting to be reaped, do not count).
pub(super) fn group_running(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let pid = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok());
        pid.and_then(state_and_group)
            .is_some_and(|(state, group)| state != "Z" && group == pgid)
    })
}

/// The processes under `root` (children, grandchildren, ...), from /proc.
pub(super) fn descendants(root: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // The command name may hold spaces and parentheses: the fields
            // follow the last ')'.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while let Some(&p) = found.get(i) {
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// The proportional set size (PSS) of `root` and its descendants, in
/// bytes: each process's `Pss` from `/proc/PID/smaps_rollup`, pages
/// shared between processes divided among them, so the sum is what the
/// tree really holds (Chromium's processes share much: their RSS summed
/// is 2 to 3 times this). A process whose rollup cannot be read counts
/// its `VmRSS` instead.
pub fn tree_pss(root: u32) -> u64 {
    tree_memory(root).iter().map(|p| p.pss).sum()
}

/// One process of a browser's tree, as the memory watchdog sees it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ProcessMemory {
    pub(super) pid: u32,
    /// PSS in bytes (or `VmRSS` when the rollup cannot be read).
    pub(super) pss: u64,
    /// A renderer (`--type=renderer`): one page's process.
    pub(super) renderer: bool,
}

/// The memory of `root` and each of its descendants.
pub(super) fn tree_memory(root: u32) -> Vec<ProcessMemory> {
    let field = |path: String, name: &str| -> Option<u64> {
        let text = std::fs::read_to_string(path).ok()?;
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    std::iter::once(root)
        .chain(descendants(root))
        .filter_map(|pid| {
            let pss = field(format!("/proc/{pid}/smaps_rollup"), "Pss:")
                .or_else(|| field(format!("/proc/{pid}/status"), "VmRSS:"))?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let renderer = cmdline.split(|b| *b == 0).any(|a| a == b"--type=renderer");
            Some(ProcessMemory { pid, pss, renderer })
        })
        .collect()
}

/// What the memory watchdog does about a browser whose processes hold
/// `tree` against the cap `cap`: `None` under the cap; else the renderer
/// to kill, when killing the largest one brings the browser under the cap
/// and it holds at least a third of it (one page grew: only its render
/// fails, as a renderer crash), or `Some(None)`: the whole browser goes.
pub(super) fn over_cap(tree: &[ProcessMemory], cap: u64) -> Option<Option<u32>> {
    let total: u64 = tree.iter().map(|p| p.pss).sum();
    if total <= cap {
        return None;
    }
    let Some(largest) = tree.iter().filter(|p| p.renderer).max_by_key(|p| p.pss) else {
        return Some(None);
    };
    let alone = total - largest.pss <= cap && largest.pss >= cap / 3;
    Some(alone.then_some(largest.pid))
}
