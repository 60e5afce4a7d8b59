//! Real servers on loopback for the notification and daemon tests: an SMTP
//! server (`tests/smtp_server.py`, aiosmtpd) and a webhook receiver (axum).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::util::root;

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A Python interpreter that can import aiosmtpd: `$SEMCLIP_PYTHON`, then
/// `python3` on PATH, then `/usr/bin/python3` (Debian's python3-aiosmtpd
/// lives there even when PATH has another python3 first).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let mut candidates = Vec::new();
        if let Ok(p) = std::env::var("SEMCLIP_PYTHON") {
            candidates.push(p);
        }
        candidates.push("python3".to_owned());
        candidates.push("/usr/bin/python3".to_owned());
        for candidate in &candidates {
            let ok = Command::new(candidate)
                .args(["-c", "import aiosmtpd"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return candidate.clone();
            }
        }
        panic!(
            "the SMTP tests need Python 3 with aiosmtpd, found in none of {candidates:?}: \
             install it with `apt-get install python3-aiosmtpd` (CI does), or set \
             SEMCLIP_PYTHON to an interpreter that has it"
        )
    })
}

/// One message the SMTP server accepted.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    /// The message as received (after DATA).
    pub raw: Vec<u8>,
    /// The envelope sender (MAIL FROM).
    pub mail_from: String,
    /// The envelope recipients (RCPT TO).
    pub rcpt_tos: Vec<String>,
    /// The user that authenticated, if any.
    pub login: Option<String>,
}

impl ReceivedMail {
    /// The parsed message.
    pub fn parsed(&self) -> mail_parser::Message<'_> {
        mail_parser::MessageParser::default()
            .parse(&self.raw)
            .expect("the received message parses")
    }
}

/// `tests/smtp_server.py` on a loopback port; killed on drop.
pub struct SmtpServer {
    port: u16,
    dir: tempfile::TempDir,
    auth: Option<String>,
    child: Option<Child>,
}

impl SmtpServer {
    /// Starts a server that takes mail from anyone.
    pub fn start() -> SmtpServer {
        SmtpServer::launch(None)
    }

    /// Starts a server that requires AUTH (PLAIN or LOGIN) as `user`/`password`.
    pub fn start_with_auth(user: &str, password: &str) -> SmtpServer {
        SmtpServer::launch(Some(format!("{user}:{password}")))
    }

    fn launch(auth: Option<String>) -> SmtpServer {
        let mut server = SmtpServer {
            port: free_port(),
            dir: tempfile::tempdir().expect("temp dir"),
            auth,
            child: None,
        };
        server.run();
        server
    }

    /// The port it listens on (127.0.0.1), the same across restarts.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Where received messages are stored.
    pub fn maildir(&self) -> PathBuf {
        self.dir.path().join("mail")
    }

    /// Kills the server; connections are refused until [`restart`](Self::restart).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, keeping the received mail.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }

    fn run(&mut self) {
        let log_path = self.dir.path().join("server.log");
        // The port may be held for a moment after a kill: try a few times.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.spawn_once(&log_path) {
                Ok(child) => {
                    self.child = Some(child);
                    return;
                }
                Err(why) if Instant::now() < deadline => {
                    eprintln!("smtp_server.py did not start ({why}), retrying");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(why) => panic!(
                    "smtp_server.py did not start on port {}: {why}\n{}",
                    self.port,
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                ),
            }
        }
    }

    fn spawn_once(&self, log_path: &Path) -> Result<Child, String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .expect("server log");
        let mut command = Command::new(python());
        command
            .arg(root().join("tests/smtp_server.py"))
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--maildir")
            .arg(self.maildir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        if let Some(auth) = &self.auth {
            command.arg("--auth").arg(auth);
        }
        let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.trim() == "ready" => Ok(child),
            Ok(line) => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                Err(format!("said {line:?} and exited with {status}"))
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err("no \"ready\" within 20 s".to_owned())
            }
        }
    }

    /// Every message received so far, oldest first.
    pub fn messages(&self) -> Vec<ReceivedMail> {
        let Ok(entries) = std::fs::read_dir(self.maildir()) else {
            return Vec::new();
        };
        let mut emls: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .collect();
        emls.sort();
        emls.iter()
            .map(|eml| {
                let meta: serde_json::Value = serde_json::from_slice(
                    &std::fs::read(eml.with_extension("json")).expect("envelope file"),
                )
                .expect("envelope JSON");
                ReceivedMail {
                    raw: std::fs::read(eml).expect("message file"),
                    mail_from: meta["mail_from"].as_str().unwrap_or_default().to_owned(),
                    rcpt_tos: meta["rcpt_tos"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|v| v.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                    login: meta["login"].as_str().map(str::to_owned),
                }
            })
            .collect()
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How the webhook receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Answer with this status (and a short body).
    Status(u16),
    /// Never answer (the client has to time out).
    Hang,
}

/// One request the webhook receiver got.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// The method.
    pub method: Method,
    /// The path and query.
    pub uri: Uri,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
    /// Whether `X-Semclip-Signature` is `sha256=<hex HMAC-SHA256(secret,
    /// body)>`; `None` when the receiver has no secret.
    pub signature_valid: Option<bool>,
}

impl ReceivedRequest {
    /// A header's value as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

struct ReceiverState {
    secret: Option<Vec<u8>>,
    requests: Mutex<Vec<ReceivedRequest>>,
    reply: Mutex<Reply>,
}

/// An HTTP server on 127.0.0.1 (axum) that records every request, checks
/// its signature and answers as told (200 by default). It runs on the
/// current tokio runtime and stops with it or on drop.
pub struct WebhookReceiver {
    addr: SocketAddr,
    state: Arc<ReceiverState>,
    task: tokio::task::JoinHandle<()>,
}

impl WebhookReceiver {
    /// Starts a receiver; with a secret it verifies signatures.
    pub async fn start(secret: Option<&str>) -> WebhookReceiver {
        let state = Arc::new(ReceiverState {
            secret: secret.map(|s| s.as_bytes().to_vec()),
            requests: Mutex::new(Vec::new()),
            reply: Mutex::new(Reply::Status(200)),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the webhook receiver");
        let addr = listener.local_addr().expect("receiver address");
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("webhook receiver");
        });
        WebhookReceiver { addr, state, task }
    }

    /// `http://127.0.0.1:PORT/hook`.
    pub fn url(&self) -> url::Url {
        url::Url::parse(&format!("http://{}/hook", self.addr)).expect("receiver URL")
    }

    /// Answers every following request this way.
    pub fn reply(&self, reply: Reply) {
        *self.state.reply.lock().expect("reply lock") = reply;
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        self.state.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receive(
    State(state): State<Arc<ReceiverState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let signature_valid = state.secret.as_ref().map(|secret| {
        let Some(hex_mac) = headers
            .get("x-semclip-signature")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("sha256="))
        else {
            return false;
        };
        let Ok(mac_bytes) = hex::decode(hex_mac) else {
            return false;
        };
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC key");
        mac.update(&body);
        mac.verify_slice(&mac_bytes).is_ok()
    });
    state
        .requests
        .lock()
        .expect("requests lock")
        .push(ReceivedRequest {
            method,
            uri,
            headers,
            body: body.to_vec(),
            signature_valid,
        });
    let reply = *state.reply.lock().expect("reply lock");
    match reply {
        Reply::Status(code) => (
            StatusCode::from_u16(code).expect("a valid status"),
            "receiver says so",
        ),
        Reply::Hang => std::future::pending().await,
    }
}
