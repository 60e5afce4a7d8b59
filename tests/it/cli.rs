//! The binary: output formats and exit codes of `hierarchy` and `xpath`,
//! sources from files, stdin and a loopback HTTP server.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::util::{describe, fixture, semclip};

fn html4() -> String {
    fixture("html4-merged-cells.html").display().to_string()
}

#[test]
fn hierarchy_xml_matches_the_golden_document_plus_url() {
    let path = html4();
    let args = ["hierarchy", path.as_str()];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let golden = std::fs::read_to_string(fixture("html4-merged-cells.xml")).unwrap();
    let url = url::Url::from_file_path(fixture("html4-merged-cells.html")).unwrap();
    let expected = golden.replacen(
        "<page label=\"HTML 4 merged cells\" lang",
        &format!("<page label=\"HTML 4 merged cells\" url=\"{url}\" lang"),
        1,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn hierarchy_json_and_outline() {
    let path = html4();
    let args = ["hierarchy", path.as_str(), "--format", "json"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], semclip::VOCABULARY_VERSION);
    let cell = &v["page"]["children"][0]["children"][0]["children"][2];
    assert_eq!(cell["type"], "cell");
    assert_eq!(cell["col"], "Red eyes");
    assert_eq!(cell["text"], "40%");
    assert_eq!(cell["num"], "40");
    assert_eq!(
        cell["xpath"],
        "/page/table[@label='A test table with merged cells.']/row[@key='males']/cell[@col='Red eyes']"
    );

    let args = ["hierarchy", path.as_str(), "-f", "outline"];
    let out = semclip(&args, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTML 4 merged cells\n  table A test table with merged cells.\n    row males\n      cell [Average height]: 1.9\n"), "{}", describe(&args, &out));
}

#[test]
fn hierarchy_reads_stdin() {
    let args = ["hierarchy", "-", "-f", "outline"];
    let out = semclip(
        &args,
        Some(b"<title>T</title><h1>Head</h1><p>Body text</p>"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "T\n  section Head\n    text Body text\n"
    );
}

#[test]
fn a_windows_1251_file_with_meta_charset_comes_out_right() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ru.html");
    let html = "<html lang=ru><head><meta charset=windows-1251><title>Котировки</title></head>\
                <body><table><tr><th>Эмитент<th>Цена<tr><td>Газпром<td>1 234,56</table>";
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(html);
    std::fs::write(&path, &bytes).unwrap();
    let p = path.display().to_string();
    let args = [
        "xpath",
        p.as_str(),
        "//row[@key='Газпром']/cell[@col='Цена']/@num",
    ];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("\t1234.56\n"), "{}", describe(&args, &out));
}

#[test]
fn xpath_prints_ids_and_values_and_typed_results() {
    let path = html4();
    let expr = "//row[@key='males']/cell[@col='Red eyes']";
    let args = ["xpath", path.as_str(), expr];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "/page/table[@label='A test table with merged cells.']/row[@key='males']/cell[@col='Red eyes']\t40%\n"
    );
    for (expr, expected) in [
        ("'10' > 9", "true\n"),
        ("count(//row)", "2\n"),
        ("sum(//cell[@col='Red eyes']/@num)", "83\n"),
        ("string(/page/@label)", "HTML 4 merged cells\n"),
        (
            "//row[@key='females']/cell[@col='Red eyes']/@num > 42",
            "true\n",
        ),
    ] {
        let args = ["xpath", path.as_str(), expr];
        let out = semclip(&args, None);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "{}",
            describe(&args, &out)
        );
    }
    let args = ["xpath", path.as_str(), "--json", "count(//cell)"];
    let out = semclip(&args, None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, serde_json::json!({"type": "number", "value": 6.0}));
}

#[test]
fn xpath_exit_codes() {
    let path = html4();
    // No match and false are negative answers: exit 1.
    for expr in ["//row[@key='nobody']", "1 > 2"] {
        let args = ["xpath", path.as_str(), expr];
        let out = semclip(&args, None);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&args, &out));
    }
    // A bad expression is trouble: exit 2, with the column and a caret.
    let args = ["xpath", path.as_str(), "//row[@key='GAZP'/cell"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("column") && err.contains('^'),
        "{}",
        describe(&args, &out)
    );
    // Unknown functions are named.
    let args = ["xpath", path.as_str(), "frobnicate(1)"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("frobnicate"),
        "{}",
        describe(&args, &out)
    );
}

#[test]
fn missing_sources_and_bad_usage_exit_2() {
    let args = ["hierarchy", "/nonexistent/page.html"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/page.html"));
    let args = ["hierarchy", "ftp://example.org/x"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ftp"));
    let args = ["hierarchy", "x", "--format", "yaml"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
}

/// Serves one canned HTTP response on a loopback port; returns the URL.
fn serve_once(content_type: &'static str, body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}/quotes")
}

#[test]
fn hierarchy_over_http_uses_the_header_charset() {
    let html = "<html lang=ru><title>Котировки</title><h1>Акции</h1><p>Цена 1 234,5</p>";
    let (bytes, _, _) = encoding_rs::KOI8_R.encode(html);
    let url = serve_once("text/html; charset=koi8-r", bytes.into_owned());
    let args = ["hierarchy", url.as_str(), "-f", "outline"];
    let out = semclip(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Котировки\n  section Акции\n    text Цена 1 234,5\n"
    );
}

#[test]
fn readme_usage_matches_help() {
    let readme = std::fs::read_to_string(crate::util::root().join("README.md")).unwrap();
    let usage = readme
        .split("## Usage")
        .nth(1)
        .expect("README has a Usage section");
    let block = usage
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a text block");
    let out = semclip(&["--help"], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        block,
        String::from_utf8_lossy(&out.stdout),
        "README usage differs from --help"
    );
}

/// The page's own markup errors, which html5ever logs as warnings, stay
/// off stderr at the default level and show at debug.
#[test]
fn page_markup_errors_are_not_warnings() {
    let page: &[u8] = b"<table><tr>stray text<td>1</table>";
    let quiet = crate::util::semclip(&["hierarchy", "-"], Some(page));
    assert!(quiet.status.success());
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(!stderr.contains("foster parenting"), "{stderr}");
    let loud = crate::util::semclip(&["--log-level", "debug", "hierarchy", "-"], Some(page));
    assert!(String::from_utf8_lossy(&loud.stderr).contains("foster parenting"));
}

/// A missing source is named once, with the reason; a broken saved
/// hierarchy is named too. Both exit 2.
#[test]
fn unreadable_sources_are_named_once() {
    let out = semclip(&["hierarchy", "/no/such/page.html"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("/no/such/page.html").count(), 1, "{stderr}");
    assert!(stderr.contains("No such file"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("broken.xml");
    std::fs::write(
        &saved,
        r#"<?xml version="1.0"?><page version="1" xpath="/page"><broken"#,
    )
    .unwrap();
    let out = semclip(&["hierarchy", saved.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("broken.xml is not a readable saved hierarchy"),
        "{stderr}"
    );
}

#[test]
fn debug_logging_does_not_dump_the_page() {
    let page = "<html><body><table><caption>Shares</caption><tr><td>GAZP</td>\
                <td>Xylophone-secret-7731</td></tr></table>\
                <p>Quietly-unlogged-text <b>markup</b></body></html>";
    for (level, rust_log) in [("debug", None), ("trace", None), ("info", Some("debug"))] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_semclip"));
        cmd.args(["--log-level", level, "hierarchy", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        match rust_log {
            Some(v) => cmd.env("RUST_LOG", v),
            None => cmd.env_remove("RUST_LOG"),
        };
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(page.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let args = ["--log-level", level, "hierarchy", "-"];
        assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("Xylophone-secret-7731"), "{stdout}");
        // Something is logged at this level, but not the page's text.
        assert!(
            stderr.contains("read standard input"),
            "{level} {rust_log:?}: {stderr}"
        );
        for text in ["Xylophone-secret-7731", "Quietly-unlogged-text"] {
            assert!(
                !stderr.contains(text),
                "{level} {rust_log:?} logs the page:\n{stderr}"
            );
        }
    }
}

#[test]
fn init_writes_a_starter_watch_that_validate_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("quotes.html");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("site/quotes.html"),
        &page,
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("watches")).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_semclip"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // A path, to stdout.
    let args = ["init", "quotes.html"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("url: \"file://"), "{text}");
    assert!(text.contains("  shares:\n    xpath: \""), "{text}");
    assert!(text.contains("# thresholds:"), "{text}");
    assert!(text.contains("/@num\""), "{text}");

    // A file:// URL, to a file, which validates as written.
    let url = url::Url::from_file_path(&page).unwrap().to_string();
    let args = ["init", url.as_str(), "-o", "watches/quotes.yaml"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    let args = ["validate"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&args, &out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok: 1 watch"));
    // Never over a file someone wrote.
    let args = ["init", "quotes.html", "-o", "watches/quotes.yaml"];
    assert_eq!(run(&args).status.code(), Some(2));
    // Outside the fence's file roots: refused, as a watch of it would be.
    let args = ["init", "/etc/hostname"];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&args, &out));
}
