//! Integration tests for `semclip::page::source`: takes pages in many encodings,
//! from files, `file:` URLs and a loopback HTTP server started by each test
//! (canned responses: redirects, errors, stalls, gzip bombs), and checks that
//! they load within their limits and decode to exactly the text they hold.
//! Nothing here leaves 127.0.0.1.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on unexpected values"
)]

use std::fmt::Write as _;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use encoding_rs::{
    Encoding, GBK, KOI8_R, KOI8_U, SHIFT_JIS, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1251,
};
use semclip::page::source::{
    DEFAULT_MAX_BODY_BYTES, EncodingSource, FetchOptions, RawPage, SourceError, USER_AGENT, decode,
    http_client, load,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

// ---------------------------------------------------------------------------
// Pages

/// Russian, four sentences.
const RUSSIAN: &str = "Вчера вечером в нашем городе прошёл сильный дождь, и улицы \
    опустели до самой ночи. Мы остались дома, читали старые книги и пили горячий чай \
    с малиновым вареньем. Соседи рассказывали, что река поднялась почти на метр. \
    Завтра синоптики обещают солнечную погоду, поэтому мы поедем за город.";

/// Chinese (simplified), four sentences.
const CHINESE: &str = "今天天气很好，我们一起去公园散步。公园里有很多人在跑步、打太极拳和放风筝。\
    孩子们在草地上玩耍，老人们坐在长椅上聊天。傍晚的时候，我们在湖边的小饭馆吃了一顿美味的晚饭。";

/// Japanese, four sentences.
const JAPANESE: &str = "今日はとても良い天気でした。私たちは朝早く起きて、近くの公園まで散歩に行きました。\
    公園ではたくさんの子供たちが元気に遊んでいて、桜の花もきれいに咲いていました。\
    帰りに駅前の喫茶店でコーヒーを飲みながら、週末の予定について話し合いました。";

/// Several scripts at once: only a Unicode encoding holds them all.
const MIXED: &str = "Grüße aus Köln und Zürich — привет из Москвы — 你好，世界 — \
    こんにちは — Ελληνικά — café, naïve, façade. The quick brown fox jumps over the lazy dog.";

/// An encoding to test, the label to name it by, and text it can hold.
struct Sample {
    label: &'static str,
    encoding: &'static Encoding,
    text: &'static str,
    /// A top-level domain where the text would be at home.
    tld: &'static str,
    /// What detection may call it: KOI8-U decodes Russian as KOI8-R does.
    detected_as: Vec<&'static Encoding>,
}

fn samples() -> Vec<Sample> {
    vec![
        Sample {
            label: "windows-1251",
            encoding: WINDOWS_1251,
            text: RUSSIAN,
            tld: "ru",
            detected_as: vec![WINDOWS_1251],
        },
        Sample {
            label: "koi8-r",
            encoding: KOI8_R,
            text: RUSSIAN,
            tld: "ru",
            detected_as: vec![KOI8_R, KOI8_U],
        },
        Sample {
            label: "gbk",
            encoding: GBK,
            text: CHINESE,
            tld: "cn",
            detected_as: vec![GBK],
        },
        Sample {
            label: "shift_jis",
            encoding: SHIFT_JIS,
            text: JAPANESE,
            tld: "jp",
            detected_as: vec![SHIFT_JIS],
        },
        Sample {
            label: "utf-8",
            encoding: UTF_8,
            text: MIXED,
            tld: "com",
            detected_as: vec![UTF_8],
        },
        Sample {
            label: "utf-16le",
            encoding: UTF_16LE,
            text: MIXED,
            tld: "com",
            detected_as: vec![UTF_16LE],
        },
    ]
}

/// An HTML page with `head` markup and `text` as its one paragraph.
fn page(head: &str, text: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n<head>\n{head}<title>Test page</title>\n</head>\n\
         <body>\n<h1>Test</h1>\n<p>{text}</p>\n</body>\n</html>\n"
    )
}

/// `text` in `encoding`; UTF-16LE gets a byte order mark (encoding_rs only
/// encodes to ASCII-compatible encodings, so UTF-16 is built by hand).
fn encode(encoding: &'static Encoding, text: &str) -> Vec<u8> {
    if encoding == UTF_16LE {
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        return bytes;
    }
    let (bytes, used, unmappable) = encoding.encode(text);
    assert_eq!(used, encoding);
    assert!(!unmappable, "{} cannot hold the text", encoding.name());
    bytes.into_owned()
}

/// How a page with a byte order mark is decoded whatever its labels say.
fn expected_how(sample: &Sample, otherwise: EncodingSource) -> EncodingSource {
    if sample.encoding == UTF_16LE {
        EncodingSource::Bom
    } else {
        otherwise
    }
}

// ---------------------------------------------------------------------------
// Decoding

#[test]
fn pages_labelled_by_the_http_header_decode_exactly() {
    for sample in samples() {
        let html = page("", sample.text);
        let bytes = encode(sample.encoding, &html);
        let content_type = format!("text/html; charset={}", sample.label);
        let decoded = decode(&bytes, Some(&content_type), None);
        assert_eq!(decoded.text, html, "{}", sample.label);
        assert_eq!(decoded.encoding, sample.encoding, "{}", sample.label);
        assert_eq!(
            decoded.how,
            expected_how(&sample, EncodingSource::HttpHeader),
            "{}",
            sample.label
        );
    }
}

#[test]
fn pages_labelled_by_meta_charset_decode_exactly() {
    for sample in samples() {
        let html = page(
            &format!("<meta charset=\"{}\">\n", sample.label),
            sample.text,
        );
        let bytes = encode(sample.encoding, &html);
        let decoded = decode(&bytes, Some("text/html"), None);
        assert_eq!(decoded.text, html, "{}", sample.label);
        assert_eq!(decoded.encoding, sample.encoding, "{}", sample.label);
        assert_eq!(
            decoded.how,
            expected_how(&sample, EncodingSource::MetaPrescan),
            "{}",
            sample.label
        );
    }
}

#[test]
fn pages_labelled_by_meta_http_equiv_decode_exactly() {
    for sample in samples() {
        let head = format!(
            "<meta name=\"viewport\" content=\"width=device-width\">\n\
             <meta http-equiv=\"Content-Type\" content=\"text/html; charset={}\">\n",
            sample.label
        );
        let html = page(&head, sample.text);
        let bytes = encode(sample.encoding, &html);
        let decoded = decode(&bytes, None, None);
        assert_eq!(decoded.text, html, "{}", sample.label);
        assert_eq!(decoded.encoding, sample.encoding, "{}", sample.label);
        assert_eq!(
            decoded.how,
            expected_how(&sample, EncodingSource::MetaPrescan),
            "{}",
            sample.label
        );
    }
}

#[test]
fn unlabelled_pages_are_detected_and_decode_exactly() {
    for sample in samples() {
        let html = page("", sample.text);
        let bytes = encode(sample.encoding, &html);
        let at_home = Url::parse(&format!("https://www.example.{}/page", sample.tld)).unwrap();
        for url in [None, Some(&at_home)] {
            let decoded = decode(&bytes, None, url);
            assert_eq!(decoded.text, html, "{} at {url:?}", sample.label);
            assert!(
                sample.detected_as.contains(&decoded.encoding),
                "{} at {url:?} detected as {}",
                sample.label,
                decoded.encoding.name()
            );
            assert_eq!(
                decoded.how,
                expected_how(&sample, EncodingSource::Detected),
                "{} at {url:?}",
                sample.label
            );
        }
    }
}

#[test]
fn a_byte_order_mark_overrides_a_wrong_header_and_meta() {
    let html = page("<meta charset=\"koi8-r\">\n", MIXED);
    let wrong = Some("text/html; charset=windows-1251");

    let mut utf8 = b"\xEF\xBB\xBF".to_vec();
    utf8.extend_from_slice(html.as_bytes());
    let decoded = decode(&utf8, wrong, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (UTF_8, EncodingSource::Bom)
    );
    assert_eq!(decoded.text, html);

    let utf16le = encode(UTF_16LE, &html);
    let decoded = decode(&utf16le, wrong, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (UTF_16LE, EncodingSource::Bom)
    );
    assert_eq!(decoded.text, html);

    let mut utf16be = vec![0xFE, 0xFF];
    utf16be.extend(html.encode_utf16().flat_map(u16::to_be_bytes));
    let decoded = decode(&utf16be, wrong, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (UTF_16BE, EncodingSource::Bom)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn utf16_without_a_bom_needs_the_header() {
    let html = page("", MIXED);
    let bytes: Vec<u8> = html.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let decoded = decode(&bytes, Some("text/html; charset=utf-16le"), None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (UTF_16LE, EncodingSource::HttpHeader)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn a_meta_utf16_label_on_an_ascii_compatible_page_means_utf8() {
    let html = page("<meta charset=\"utf-16\">\n", MIXED);
    let decoded = decode(html.as_bytes(), None, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (UTF_8, EncodingSource::MetaPrescan)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn a_meta_beyond_the_first_1024_bytes_is_ignored() {
    // The meta says KOI8-R, but it comes too late: detection finds the truth.
    let padding = format!("<!-- {} -->\n", "padding ".repeat(140));
    assert!(padding.len() > 1024);
    let html = page(&format!("{padding}<meta charset=\"koi8-r\">\n"), RUSSIAN);
    let bytes = encode(WINDOWS_1251, &html);
    let decoded = decode(&bytes, None, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (WINDOWS_1251, EncodingSource::Detected)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn a_meta_inside_a_comment_is_ignored() {
    let head = "<!-- <meta charset=\"koi8-r\"> -->\n<meta charset=\"windows-1251\">\n";
    let html = page(head, RUSSIAN);
    let decoded = decode(&encode(WINDOWS_1251, &html), None, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (WINDOWS_1251, EncodingSource::MetaPrescan)
    );
    assert_eq!(decoded.text, html);

    // With only the commented-out meta, detection decides.
    let html = page("<!-- <meta charset=\"koi8-r\"> -->\n", RUSSIAN);
    let decoded = decode(&encode(WINDOWS_1251, &html), None, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (WINDOWS_1251, EncodingSource::Detected)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn wrong_labels_fall_through() {
    // A header label that names nothing falls through to the meta…
    let html = page("<meta charset=\"gbk\">\n", CHINESE);
    let bytes = encode(GBK, &html);
    let decoded = decode(&bytes, Some("text/html; charset=klingon"), None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (GBK, EncodingSource::MetaPrescan)
    );
    assert_eq!(decoded.text, html);

    // …and a meta label that names nothing falls through to detection.
    let html = page("<meta charset=\"klingon\">\n", JAPANESE);
    let bytes = encode(SHIFT_JIS, &html);
    let decoded = decode(&bytes, Some("text/html; charset=klingon"), None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (SHIFT_JIS, EncodingSource::Detected)
    );
    assert_eq!(decoded.text, html);
}

#[test]
fn an_xml_declaration_labels_a_page_without_meta() {
    let html = format!(
        "<?xml version=\"1.0\" encoding=\"koi8-r\"?>\n{}",
        page("", RUSSIAN)
    );
    let decoded = decode(&encode(KOI8_R, &html), None, None);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (KOI8_R, EncodingSource::MetaPrescan)
    );
    assert_eq!(decoded.text, html);
}

// ---------------------------------------------------------------------------
// A loopback HTTP server with canned answers

/// What the test server answers.
#[derive(Clone, Default)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

/// A reply's body.
#[derive(Clone, Default)]
enum Body {
    #[default]
    Empty,
    /// Sent whole, with a `Content-Length` unless the headers have one.
    Bytes(Vec<u8>),
    /// Sent, then the connection is held open, silent, for ten seconds.
    Stall(Vec<u8>),
    /// No response at all: the connection is held open, silent.
    Silence,
    /// `head`, then `segment` `repeat` times, no `Content-Length`; the server
    /// records how many bytes it managed to send.
    Repeat {
        head: Vec<u8>,
        segment: Vec<u8>,
        repeat: usize,
    },
}

impl Reply {
    fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Bytes(body.into()),
        }
    }

    fn status(status: u16) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: Body::Bytes(format!("status {status}").into_bytes()),
        }
    }

    fn redirect(location: &str) -> Self {
        Self {
            status: 302,
            headers: vec![("Location".into(), location.into())],
            body: Body::Empty,
        }
    }

    fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A test HTTP/1.1 server on 127.0.0.1; one request per connection. Its
/// tasks die with the test's runtime, and every stall ends by itself.
struct TestServer {
    addr: SocketAddr,
    /// The request heads received, in order.
    requests: Arc<Mutex<Vec<String>>>,
    /// Bytes sent by `Body::Repeat` replies.
    repeat_sent: Arc<AtomicU64>,
    /// Whether a `Body::Repeat` reply has ended (sent, or cut off).
    repeat_done: Arc<AtomicBool>,
}

impl TestServer {
    async fn start(route: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = Self {
            addr: listener.local_addr().unwrap(),
            requests: Arc::default(),
            repeat_sent: Arc::default(),
            repeat_done: Arc::default(),
        };
        let route = Arc::new(route);
        let requests = Arc::clone(&server.requests);
        let sent = Arc::clone(&server.repeat_sent);
        let done = Arc::clone(&server.repeat_done);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let route = Arc::clone(&route);
                let requests = Arc::clone(&requests);
                let sent = Arc::clone(&sent);
                let done = Arc::clone(&done);
                tokio::spawn(async move {
                    serve(stream, &*route, &requests, &sent, &done).await;
                });
            }
        });
        server
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The value of header `name` in request `index`.
    fn request_header(&self, index: usize, name: &str) -> Option<String> {
        let requests = self.requests.lock().unwrap();
        requests.get(index)?.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }
}

/// Answers the one request on `stream`.
async fn serve(
    mut stream: TcpStream,
    route: &(dyn Fn(&str) -> Reply + Send + Sync),
    requests: &Mutex<Vec<String>>,
    repeat_sent: &AtomicU64,
    repeat_done: &AtomicBool,
) {
    let mut head = Vec::new();
    let mut buffer = [0; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    requests.lock().unwrap().push(head);
    let reply = route(&path);

    if matches!(reply.body, Body::Silence) {
        tokio::time::sleep(Duration::from_secs(10)).await;
        return;
    }
    let mut out = format!("HTTP/1.1 {} Canned\r\nConnection: close\r\n", reply.status);
    for (name, value) in &reply.headers {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    let has_length = reply
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
    match &reply.body {
        Body::Bytes(bytes) | Body::Stall(bytes) if !has_length => {
            let _ = write!(out, "Content-Length: {}\r\n", bytes.len());
        }
        Body::Empty if !has_length => out.push_str("Content-Length: 0\r\n"),
        _ => {}
    }
    out.push_str("\r\n");
    if stream.write_all(out.as_bytes()).await.is_err() {
        return;
    }
    match reply.body {
        Body::Empty | Body::Silence => {}
        Body::Bytes(bytes) => {
            let _ = stream.write_all(&bytes).await;
        }
        Body::Stall(bytes) => {
            let _ = stream.write_all(&bytes).await;
            let _ = stream.flush().await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        Body::Repeat {
            head,
            segment,
            repeat,
        } => {
            if stream.write_all(&head).await.is_ok() {
                for _ in 0..repeat {
                    if stream.write_all(&segment).await.is_err() {
                        break;
                    }
                    repeat_sent.fetch_add(segment.len() as u64, Ordering::SeqCst);
                }
            }
            repeat_done.store(true, Ordering::SeqCst);
        }
    }
    let _ = stream.shutdown().await;
}

/// A gzip member's 10-byte header (no name, no time, unknown OS).
const GZIP_HEADER: [u8; 10] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF];

/// One MiB of zeros, deflated and fully flushed: a byte-aligned run of
/// blocks that refers to nothing before it, so copies of it can follow one
/// another in a deflate stream. About a kilobyte.
fn deflated_zero_mebibyte() -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut compressor = flate2::Compress::new(flate2::Compression::best(), false);
    let mut segment = Vec::with_capacity(64 * 1024);
    compressor
        .compress_vec(&zeros, &mut segment, flate2::FlushCompress::Full)
        .unwrap();
    assert_eq!(compressor.total_in(), 1 << 20);
    assert!(
        segment.len() < 8 * 1024,
        "segment is {} bytes",
        segment.len()
    );
    segment
}

/// A complete gzip file of `mebibytes` MiB of zeros, built from repeated
/// segments (compressing tens of megabytes in a debug build is slow).
fn gzip_zeros(mebibytes: usize) -> Vec<u8> {
    let segment = deflated_zero_mebibyte();
    let mut gzip = GZIP_HEADER.to_vec();
    let mut crc = flate2::Crc::new();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..mebibytes {
        gzip.extend_from_slice(&segment);
        crc.update(&zeros);
    }
    // The last block: empty and final.
    let mut finisher = flate2::Compress::new(flate2::Compression::best(), false);
    let mut last = Vec::with_capacity(64);
    finisher
        .compress_vec(&[], &mut last, flate2::FlushCompress::Finish)
        .unwrap();
    gzip.extend_from_slice(&last);
    gzip.extend_from_slice(&crc.sum().to_le_bytes());
    gzip.extend_from_slice(&crc.amount().to_le_bytes());
    gzip
}

/// A client and options with a short request timeout.
fn quick(opts: FetchOptions) -> (reqwest::Client, FetchOptions) {
    (http_client(&opts).unwrap(), opts)
}

fn short_timeouts() -> FetchOptions {
    FetchOptions {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
        ..FetchOptions::default()
    }
}

fn cp1251_page() -> String {
    page("", RUSSIAN)
}

// ---------------------------------------------------------------------------
// HTTP

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_windows_1251_page_over_http_decodes_right() {
    let server = TestServer::start(|_| {
        Reply::ok(
            "text/html; charset=windows-1251",
            encode(WINDOWS_1251, &cp1251_page()),
        )
    })
    .await;
    let (client, opts) = quick(short_timeouts());
    let url = server.url("/ru/page.html");
    let raw = load(&url, &client, &opts).await.unwrap();
    assert_eq!(
        raw.content_type.as_deref(),
        Some("text/html; charset=windows-1251")
    );
    assert_eq!(raw.url.as_ref().map(Url::as_str), Some(url.as_str()));
    let decoded = raw.decode();
    assert_eq!(decoded.text, cp1251_page());
    assert_eq!(
        (decoded.encoding, decoded.how),
        (WINDOWS_1251, EncodingSource::HttpHeader)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzipped_page_is_decompressed() {
    let html = page("", CHINESE);
    let gbk = encode(GBK, &html);
    let mut encoder = flate2::read::GzEncoder::new(&gbk[..], flate2::Compression::default());
    let mut gzipped = Vec::new();
    encoder.read_to_end(&mut gzipped).unwrap();
    let server = TestServer::start(move |_| {
        Reply::ok("text/html; charset=GBK", gzipped.clone()).with_header("Content-Encoding", "gzip")
    })
    .await;
    let (client, opts) = quick(short_timeouts());
    let raw = load(&server.url("/"), &client, &opts).await.unwrap();
    assert_eq!(raw.bytes, gbk);
    assert_eq!(raw.decode().text, html);
    let accepted = server.request_header(0, "accept-encoding").unwrap();
    for coding in ["gzip", "br", "deflate"] {
        assert!(accepted.contains(coding), "{accepted}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_is_an_error_naming_the_status() {
    let server = TestServer::start(|_| Reply::status(404)).await;
    let (client, opts) = quick(short_timeouts());
    let url = server.url("/missing");
    let error = load(&url, &client, &opts).await.unwrap_err();
    match &error {
        SourceError::Status { url: at, status } => {
            assert_eq!(status.as_u16(), 404);
            assert_eq!(at.as_str(), url);
        }
        other => panic!("expected a status error, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains("404"), "{message}");
    assert!(message.contains(&url), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_non_2xx_statuses_are_errors() {
    let server = TestServer::start(|path| match path {
        "/500" => Reply::status(500),
        "/410" => Reply::status(410),
        _ => Reply::status(304),
    })
    .await;
    let (client, opts) = quick(short_timeouts());
    for status in [500, 410, 304] {
        let result = load(&server.url(&format!("/{status}")), &client, &opts).await;
        assert!(
            matches!(&result, Err(SourceError::Status { status: got, .. }) if got.as_u16() == status),
            "{status}: {result:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_cut_off_at_the_limit() {
    // 50 MiB of zeros in about 50 KiB of gzip, against a 1 MB limit.
    let bomb = gzip_zeros(50);
    assert!(bomb.len() < 200 * 1024, "bomb is {} bytes", bomb.len());
    let server = TestServer::start(move |_| {
        Reply::ok("text/html", bomb.clone()).with_header("Content-Encoding", "gzip")
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        max_body_bytes: 1_000_000,
        ..short_timeouts()
    });
    let url = server.url("/bomb");
    let error = load(&url, &client, &opts).await.unwrap_err();
    match &error {
        SourceError::TooLarge { url: at, limit } => {
            assert_eq!(*limit, 1_000_000);
            assert_eq!(at.as_str(), url);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&url) && message.contains("1000000"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bomb_builder_makes_real_gzip() {
    // The bomb test means something only if the bomb is valid gzip: under a
    // higher limit, a small one loads whole.
    let small = gzip_zeros(3);
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&small[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated, vec![0; 3 << 20]);
    let server = TestServer::start(move |_| {
        Reply::ok("text/html", small.clone()).with_header("Content-Encoding", "gzip")
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        max_body_bytes: 4 << 20,
        ..short_timeouts()
    });
    let raw = load(&server.url("/"), &client, &opts).await.unwrap();
    assert_eq!(raw.bytes.len(), 3 << 20);
    assert!(raw.bytes.iter().all(|&b| b == 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_gzip_bomb_stops_early_without_reading_it_all() {
    // 64 GiB of zeros (about 64 MiB of gzip, never finished): holding it, or
    // even inflating it all, is out of the question. The server counts what
    // it got to send before the client hung up.
    let segment = deflated_zero_mebibyte();
    let repeat = 64 * 1024;
    let total = (segment.len() * repeat) as u64;
    let server = TestServer::start(move |_| Reply {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Encoding".into(), "gzip".into()),
        ],
        body: Body::Repeat {
            head: GZIP_HEADER.to_vec(),
            segment: segment.clone(),
            repeat,
        },
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        max_body_bytes: 1_000_000,
        request_timeout: Duration::from_secs(15),
        ..FetchOptions::default()
    });
    let started = Instant::now();
    let result = load(&server.url("/endless"), &client, &opts).await;
    assert!(
        matches!(
            result,
            Err(SourceError::TooLarge {
                limit: 1_000_000,
                ..
            })
        ),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The hang-up reaches the server once the socket buffers fill.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.repeat_done.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(server.repeat_done.load(Ordering::SeqCst));
    let sent = server.repeat_sent.load(Ordering::SeqCst);
    assert!(sent < total / 2, "server sent {sent} of {total} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announced_oversized_body_is_refused_before_reading() {
    // The server announces 10 MB, sends a little and stalls: waiting for the
    // rest would end in a timeout, so a TooLarge proves the early refusal.
    let server = TestServer::start(|_| Reply {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Length".into(), "10000000".into()),
        ],
        body: Body::Stall(b"<p>hello".to_vec()),
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        max_body_bytes: 1_000_000,
        ..short_timeouts()
    });
    let started = Instant::now();
    let result = load(&server.url("/big"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::TooLarge { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_at_the_limit_is_accepted_and_one_byte_more_is_not() {
    let server = TestServer::start(|path| {
        let size = if path == "/at" { 1000 } else { 1001 };
        // No Content-Length: only the streamed count can tell.
        Reply {
            status: 200,
            headers: vec![("Transfer-Encoding".into(), "chunked".into())],
            body: Body::Bytes(chunked(&vec![b'x'; size])),
        }
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        max_body_bytes: 1000,
        ..short_timeouts()
    });
    let raw = load(&server.url("/at"), &client, &opts).await.unwrap();
    assert_eq!(raw.bytes.len(), 1000);
    let result = load(&server.url("/over"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::TooLarge { limit: 1000, .. })),
        "{result:?}"
    );
}

/// `body` in HTTP/1.1 chunked encoding, in 300-byte chunks.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in body.chunks(300) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_finishes_the_body_times_out() {
    let server = TestServer::start(|_| Reply {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Length".into(), "1000".into()),
        ],
        body: Body::Stall(b"<html><body>slow".to_vec()),
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        request_timeout: Duration::from_millis(500),
        ..short_timeouts()
    });
    let url = server.url("/slow");
    let started = Instant::now();
    let error = load(&url, &client, &opts).await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(&error, SourceError::Timeout { url: at, .. } if at.as_str() == url),
        "{error:?}"
    );
    assert!(error.to_string().contains(&url), "{error}");
    assert!(
        elapsed >= Duration::from_millis(450) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    let server = TestServer::start(|_| Reply {
        body: Body::Silence,
        ..Reply::default()
    })
    .await;
    let (client, opts) = quick(FetchOptions {
        request_timeout: Duration::from_millis(500),
        ..short_timeouts()
    });
    let result = load(&server.url("/silent"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::Timeout { .. })),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_timeout_in_the_options_applies_to_any_client() {
    // A client built with the defaults (30 s) still honours a shorter
    // timeout passed to `load`.
    let server = TestServer::start(|_| Reply {
        body: Body::Silence,
        ..Reply::default()
    })
    .await;
    let client = http_client(&FetchOptions::default()).unwrap();
    let opts = FetchOptions {
        request_timeout: Duration::from_millis(300),
        ..FetchOptions::default()
    };
    let started = Instant::now();
    let result = load(&server.url("/"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::Timeout { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Answers `/r/N` with a redirect to `/r/N-1`, `/r/0` with a page, and
/// `/loop` with a redirect to itself.
fn redirect_chain(path: &str) -> Reply {
    if path == "/loop" {
        return Reply::redirect("/loop");
    }
    match path.strip_prefix("/r/").and_then(|n| n.parse::<u32>().ok()) {
        Some(0) => Reply::ok("text/html; charset=utf-8", "<p>arrived</p>"),
        Some(n) => Reply::redirect(&format!("/r/{}", n - 1)),
        None => Reply::status(404),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_up_to_the_limit() {
    let server = TestServer::start(redirect_chain).await;
    let (client, opts) = quick(FetchOptions {
        max_redirects: 3,
        ..short_timeouts()
    });
    let raw = load(&server.url("/r/3"), &client, &opts).await.unwrap();
    assert_eq!(raw.bytes, b"<p>arrived</p>");
    assert_eq!(
        raw.url.as_ref().map(Url::as_str),
        Some(server.url("/r/0").as_str())
    );

    let url = server.url("/r/4");
    let error = load(&url, &client, &opts).await.unwrap_err();
    assert!(
        matches!(&error, SourceError::TooManyRedirects { url: at, limit: 3, .. } if at.as_str() == url),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("redirects") && message.contains(&url),
        "{message}"
    );

    let result = load(&server.url("/loop"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::TooManyRedirects { .. })),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_redirect_is_followed_when_the_limit_is_zero() {
    let server = TestServer::start(redirect_chain).await;
    let (client, opts) = quick(FetchOptions {
        max_redirects: 0,
        ..short_timeouts()
    });
    assert!(load(&server.url("/r/0"), &client, &opts).await.is_ok());
    let result = load(&server.url("/r/1"), &client, &opts).await;
    assert!(
        matches!(result, Err(SourceError::TooManyRedirects { limit: 0, .. })),
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_sees_the_semclip_user_agent() {
    let server = TestServer::start(|_| Reply::ok("text/html", "<p>hi</p>")).await;
    let (client, opts) = quick(short_timeouts());
    load(&server.url("/ua"), &client, &opts).await.unwrap();
    let agent = server.request_header(0, "user-agent").unwrap();
    assert_eq!(agent, format!("semclip/{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(agent, USER_AGENT);
    let accept = server.request_header(0, "accept").unwrap();
    assert!(accept.starts_with("text/html"), "{accept}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_fetch_error_naming_the_url() {
    // Bind, note the port, close: nothing listens there now.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/gone");
    let (client, opts) = quick(short_timeouts());
    let error = load(&url, &client, &opts).await.unwrap_err();
    assert!(matches!(error, SourceError::Fetch { .. }), "{error:?}");
    assert!(error.to_string().contains(&url), "{error}");
    // The cause is kept, and does not repeat the URL.
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert!(!cause.contains(&url), "{cause}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_serves_concurrent_loads_across_threads() {
    let server = Arc::new(
        TestServer::start(|_| {
            Reply::ok(
                "text/html; charset=windows-1251",
                encode(WINDOWS_1251, &cp1251_page()),
            )
        })
        .await,
    );
    let (client, opts) = quick(short_timeouts());
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            let opts = opts.clone();
            let url = server.url(&format!("/page/{i}"));
            tokio::spawn(async move { load(&url, &client, &opts).await })
        })
        .collect();
    for task in tasks {
        let raw: RawPage = task.await.unwrap().unwrap();
        assert_eq!(raw.decode().text, cp1251_page());
    }
    assert_eq!(server.requests.lock().unwrap().len(), 8);
}

// ---------------------------------------------------------------------------
// Files, file: URLs and bad specs

#[tokio::test]
async fn a_path_loads_with_its_file_url() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("страница.html");
    let html = page("<meta charset=\"koi8-r\">\n", RUSSIAN);
    std::fs::write(&path, encode(KOI8_R, &html)).unwrap();
    let client = http_client(&FetchOptions::default()).unwrap();
    let opts = FetchOptions::default();

    let raw = load(path.to_str().unwrap(), &client, &opts).await.unwrap();
    assert_eq!(raw.content_type, None);
    assert_eq!(raw.url, Some(Url::from_file_path(&path).unwrap()));
    let decoded = raw.decode();
    assert_eq!(decoded.text, html);
    assert_eq!(
        (decoded.encoding, decoded.how),
        (KOI8_R, EncodingSource::MetaPrescan)
    );
}

#[tokio::test]
async fn a_file_url_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("page with spaces.html");
    let html = page("", JAPANESE);
    std::fs::write(&path, encode(SHIFT_JIS, &html)).unwrap();
    let url = Url::from_file_path(&path).unwrap();
    assert!(url.as_str().contains("%20"));
    let client = http_client(&FetchOptions::default()).unwrap();

    let raw = load(url.as_str(), &client, &FetchOptions::default())
        .await
        .unwrap();
    assert_eq!(raw.url.as_ref(), Some(&url));
    assert_eq!(raw.decode().text, html);

    // `file://localhost/…` is the same file.
    let localhost = url.as_str().replacen("file://", "file://localhost", 1);
    let raw = load(&localhost, &client, &FetchOptions::default())
        .await
        .unwrap();
    assert_eq!(raw.decode().text, html);
}

#[tokio::test]
async fn a_missing_file_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-page.html");
    let spec = path.to_str().unwrap();
    let client = http_client(&FetchOptions::default()).unwrap();
    let error = load(spec, &client, &FetchOptions::default())
        .await
        .unwrap_err();
    match &error {
        SourceError::Read { path: at, source } => {
            assert_eq!(at, &path);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected a read error, got {other:?}"),
    }
    assert!(error.to_string().contains(spec), "{error}");

    // The same through a file: URL.
    let url = Url::from_file_path(&path).unwrap();
    let error = load(url.as_str(), &client, &FetchOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SourceError::Read { path: at, .. } if at == &path),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_directory_is_not_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let client = http_client(&FetchOptions::default()).unwrap();
    let error = load(
        dir.path().to_str().unwrap(),
        &client,
        &FetchOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, SourceError::Read { .. }), "{error:?}");
}

#[tokio::test]
async fn files_over_the_limit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.html");
    std::fs::write(&path, vec![b'a'; 2000]).unwrap();
    let client = http_client(&FetchOptions::default()).unwrap();
    let opts = FetchOptions {
        max_body_bytes: 1999,
        ..FetchOptions::default()
    };
    let error = load(path.to_str().unwrap(), &client, &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SourceError::FileTooLarge { path: at, limit: 1999 } if at == &path),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(path.to_str().unwrap()),
        "{error}"
    );

    let opts = FetchOptions {
        max_body_bytes: 2000,
        ..FetchOptions::default()
    };
    let raw = load(path.to_str().unwrap(), &client, &opts).await.unwrap();
    assert_eq!(raw.bytes.len(), 2000);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_endless_special_file_is_cut_off() {
    // /dev/zero reports a length of 0 and never ends.
    let client = http_client(&FetchOptions::default()).unwrap();
    let opts = FetchOptions {
        max_body_bytes: 1 << 20,
        ..FetchOptions::default()
    };
    let result = load("/dev/zero", &client, &opts).await;
    assert!(
        matches!(
            result,
            Err(SourceError::FileTooLarge {
                limit: 1_048_576,
                ..
            })
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn unsupported_schemes_are_refused_clearly() {
    let client = http_client(&FetchOptions::default()).unwrap();
    for (spec, scheme) in [
        ("ftp://x", "ftp"),
        ("data:text/html,hi", "data"),
        ("Gopher://x/y", "gopher"),
    ] {
        let error = load(spec, &client, &FetchOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&error, SourceError::UnsupportedScheme { scheme: s, spec: given } if s == scheme && given == spec),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("unsupported URL scheme"), "{message}");
        assert!(message.contains(spec), "{message}");
    }
}

#[tokio::test]
async fn malformed_urls_and_remote_file_urls_are_refused() {
    let client = http_client(&FetchOptions::default()).unwrap();
    let opts = FetchOptions::default();
    for spec in ["http://", "https://exa mple.com/", "http://[::1/"] {
        let error = load(spec, &client, &opts).await.unwrap_err();
        assert!(
            matches!(&error, SourceError::InvalidUrl { spec: given, .. } if given == spec),
            "{spec}: {error:?}"
        );
        assert!(error.to_string().contains(spec), "{error}");
    }
    let error = load("file://example.com/etc/hosts", &client, &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(error, SourceError::NotLocalFile { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("example.com"), "{error}");
}

#[test]
fn the_default_limit_is_20_mib() {
    assert_eq!(DEFAULT_MAX_BODY_BYTES, 20 * 1024 * 1024);
    assert_eq!(
        FetchOptions::default().max_body_bytes,
        DEFAULT_MAX_BODY_BYTES
    );
}

// ---------------------------------------------------------------------------
// The daemon's fetcher behind its fence (`semclip::page::fetch`, `semclip::page::fence`)

mod fenced {
    use super::*;
    use semclip::page::fence::{AllowHost, Fence, FenceError};
    use semclip::page::fetch::{Clients, Credentials, Fetched, HostLimiter, PageRequest, fetch};

    fn request(url: &str) -> PageRequest {
        PageRequest {
            url: Url::parse(url).unwrap(),
            opts: short_timeouts(),
            retries: 2,
            headers: vec![("X-Team".into(), "ops".into())],
            headers_cross_origin: false,
            cookies: vec![("session".into(), "abc".into())],
            jar: None,
            credentials: Some(Credentials::Bearer("t0ken".into())),
            etag: None,
            last_modified: None,
        }
    }

    async fn get(fence: Fence, url: &str) -> Result<Fetched, SourceError> {
        let clients = Clients::new(Arc::new(fence));
        fetch(
            &clients,
            &HostLimiter::new(4, Duration::ZERO),
            &request(url),
        )
        .await
    }

    fn body(fetched: Fetched) -> Vec<u8> {
        match fetched {
            Fetched::Page { page, .. } => page.bytes,
            Fetched::NotModified => panic!("304"),
        }
    }

    /// A page server, and a server that redirects everything to `to`.
    async fn redirecting_to(
        to: impl Fn(u16) -> String + Send + Sync + 'static,
    ) -> (TestServer, TestServer) {
        let target = TestServer::start(|_| Reply::ok("text/html", "<p>internal</p>")).await;
        let port = target.addr.port();
        let redirector = TestServer::start(move |path| {
            if path == "/same" {
                return Reply::redirect("/landed");
            }
            if path == "/landed" {
                return Reply::ok("text/html", "<p>same origin</p>");
            }
            Reply::redirect(&to(port))
        })
        .await;
        (target, redirector)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_redirect_to_127_0_0_1_on_another_port_is_refused_by_default() {
        let (target, redirector) =
            redirecting_to(|port| format!("http://127.0.0.1:{port}/admin")).await;
        let error = get(Fence::default(), &redirector.url("/page"))
            .await
            .unwrap_err();
        let target_url = format!("http://127.0.0.1:{}/admin", target.addr.port());
        assert!(
            matches!(&error, SourceError::Fenced(FenceError::PrivateAddress { redirect: true, url, kind: "loopback", .. }) if url.as_str() == target_url),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "refused redirect to private address 127.0.0.1 (loopback) at {target_url}: admit it with fetch.allow_private or fetch.allow_hosts in the daemon file"
            )
        );
        assert!(
            target.requests.lock().unwrap().is_empty(),
            "the target was never asked"
        );
        assert_eq!(
            redirector.requests.lock().unwrap().len(),
            1,
            "not retried: it would not help"
        );
        // The watch's own host and port stay trusted through a redirect.
        let page = get(Fence::default(), &redirector.url("/same"))
            .await
            .unwrap();
        assert_eq!(body(page), b"<p>same origin</p>");

        // Admitted by allow_private, or by naming the address and port.
        let open = Fence {
            allow_private: true,
            ..Fence::default()
        };
        assert_eq!(
            body(get(open, &redirector.url("/page")).await.unwrap()),
            b"<p>internal</p>"
        );
        let listed = Fence {
            allow_hosts: vec![
                AllowHost::parse(&format!("127.0.0.1:{}", target.addr.port())).unwrap(),
            ],
            ..Fence::default()
        };
        assert_eq!(
            body(get(listed, &redirector.url("/page")).await.unwrap()),
            b"<p>internal</p>"
        );
        // Credentials, cookies and the watch's own headers went to the
        // watch's origin only.
        let requests = target.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 2);
        for head in &requests {
            let lower = head.to_ascii_lowercase();
            assert!(
                !lower.contains("authorization") && !lower.contains("cookie"),
                "{head}"
            );
            assert!(!lower.contains("x-team"), "{head}");
        }
        // A watch may let its headers follow, never its credentials.
        let clients = Clients::new(Arc::new(Fence {
            allow_private: true,
            ..Fence::default()
        }));
        let follow = PageRequest {
            headers_cross_origin: true,
            headers: vec![
                ("X-Team".into(), "ops".into()),
                ("Authorization".into(), "Bearer h34der".into()),
            ],
            credentials: None,
            ..request(&redirector.url("/page"))
        };
        fetch(&clients, &HostLimiter::new(4, Duration::ZERO), &follow)
            .await
            .unwrap();
        let head = target.requests.lock().unwrap()[2].to_ascii_lowercase();
        assert!(head.contains("x-team: ops"), "{head}");
        assert!(
            !head.contains("authorization") && !head.contains("cookie"),
            "{head}"
        );
        assert_eq!(
            redirector.request_header(0, "authorization").as_deref(),
            Some("Bearer t0ken")
        );
        assert_eq!(
            redirector.request_header(0, "cookie").as_deref(),
            Some("session=abc")
        );
    }

    /// A session cookie set by one port of a host goes back to that port
    /// only: not to another port directly, nor after a redirect.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_cookie_stays_with_the_port_that_set_it() {
        let other = TestServer::start(|_| Reply::ok("text/html", "<p>other</p>")).await;
        let other_port = other.addr.port();
        let login = TestServer::start(move |path| match path {
            "/login" => {
                Reply::ok("text/html", "<p>in</p>").with_header("set-cookie", "sid=s3ss10n; Path=/")
            }
            "/away" => Reply::redirect(&format!("http://127.0.0.1:{other_port}/landed")),
            _ => Reply::ok("text/html", "<p>page</p>"),
        })
        .await;
        let clients = Clients::new(Arc::new(Fence {
            allow_private: true,
            ..Fence::default()
        }));
        let limiter = HostLimiter::new(4, Duration::ZERO);
        let jar = semclip::page::session::Jar::new();
        let with_jar = |url: &str| PageRequest {
            jar: Some(jar.clone()),
            headers: Vec::new(),
            cookies: Vec::new(),
            credentials: None,
            ..request(url)
        };
        for path in ["/login", "/page"] {
            fetch(&clients, &limiter, &with_jar(&login.url(path)))
                .await
                .unwrap();
        }
        assert_eq!(
            login.request_header(1, "cookie").as_deref(),
            Some("sid=s3ss10n")
        );
        // Directly, and after a redirect from the port that set it.
        fetch(&clients, &limiter, &with_jar(&other.url("/direct")))
            .await
            .unwrap();
        fetch(&clients, &limiter, &with_jar(&login.url("/away")))
            .await
            .unwrap();
        let heads = other.requests.lock().unwrap().clone();
        assert_eq!(heads.len(), 2);
        for head in &heads {
            assert!(!head.to_ascii_lowercase().contains("cookie"), "{head}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_name_is_judged_by_the_address_it_resolves_to() {
        let (target, redirector) =
            redirecting_to(|port| format!("http://localhost:{port}/admin")).await;
        let error = get(Fence::default(), &redirector.url("/page"))
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(
                &error,
                SourceError::Fenced(FenceError::PrivateAddress {
                    redirect: true,
                    kind: "loopback",
                    ..
                })
            ),
            "{error:?}"
        );
        assert!(
            message.starts_with("refused redirect to private address ")
                && message.contains(&format!("at http://localhost:{}/admin", target.addr.port())),
            "{message}"
        );
        assert!(target.requests.lock().unwrap().is_empty());
        // A name on the allow-list resolves as usual.
        let listed = Fence {
            allow_hosts: vec![AllowHost::parse("localhost").unwrap()],
            ..Fence::default()
        };
        assert_eq!(
            body(get(listed, &redirector.url("/page")).await.unwrap()),
            b"<p>internal</p>"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redirects_to_other_schemes_are_refused() {
        let (_target, redirector) = redirecting_to(|_| "file:///etc/passwd".to_owned()).await;
        for fence in [
            Fence::default(),
            Fence {
                allow_private: true,
                ..Fence::default()
            },
        ] {
            let error = get(fence, &redirector.url("/page")).await.unwrap_err();
            assert!(
                matches!(&error, SourceError::Fenced(FenceError::Scheme { url }) if url.as_str() == "file:///etc/passwd"),
                "{error:?}"
            );
        }
        // The CLI's client does not follow it either.
        let (client, opts) = quick(short_timeouts());
        assert!(
            load(&redirector.url("/page"), &client, &opts)
                .await
                .is_err()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_redirect_limit_covers_the_chain() {
        let server = TestServer::start(redirect_chain).await;
        let mut req = request(&server.url("/r/3"));
        req.opts.max_redirects = 3;
        let clients = Clients::new(Arc::new(Fence::default()));
        let limiter = HostLimiter::new(4, Duration::ZERO);
        assert_eq!(
            body(fetch(&clients, &limiter, &req).await.unwrap()),
            b"<p>arrived</p>"
        );
        let req = PageRequest {
            url: Url::parse(&server.url("/loop")).unwrap(),
            ..req
        };
        let error = fetch(&clients, &limiter, &req).await.unwrap_err();
        assert!(
            matches!(&error, SourceError::TooManyRedirects { limit: 3, url, .. } if url.as_str() == server.url("/loop")),
            "{error:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn untrusted_watch_urls_keep_to_the_redirect_rule() {
        let server = TestServer::start(|_| Reply::ok("text/html", "<p>hi</p>")).await;
        let fence = Fence {
            trust_watch_urls: false,
            ..Fence::default()
        };
        let error = get(fence, &server.url("/")).await.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("refused watch URL at private address 127.0.0.1 (loopback)"),
            "{error}"
        );
        assert!(server.requests.lock().unwrap().is_empty());
        assert!(get(Fence::default(), &server.url("/")).await.is_ok());
    }

    #[tokio::test]
    async fn file_watches_read_under_the_roots_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("page.html"), "<p>local</p>").unwrap();
        let fence = Fence {
            file_roots: vec![dir.path().to_owned()],
            ..Fence::default()
        };
        let url = Url::from_file_path(dir.path().join("page.html")).unwrap();
        assert_eq!(
            body(get(fence.clone(), url.as_str()).await.unwrap()),
            b"<p>local</p>"
        );
        for outside in ["file:///etc/passwd", "file:///proc/self/environ"] {
            let error = get(fence.clone(), outside).await.unwrap_err();
            assert!(
                matches!(error, SourceError::Fenced(FenceError::OutsideRoots { .. })),
                "{outside}: {error:?}"
            );
        }
        // Swapped for a symlink after validation: still refused.
        std::fs::remove_file(dir.path().join("page.html")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("page.html")).unwrap();
        #[cfg(unix)]
        assert!(matches!(
            get(fence, url.as_str()).await,
            Err(SourceError::Fenced(FenceError::OutsideRoots { .. }))
        ));
    }
}
