//! `semclip diff OLD NEW`: prints the semantic changes between two pages as
//! text (for people), JSON or XML (for programs). Exit status as diff(1).

use std::fmt::Write as _;
use std::io::Write;

use super::{Outcome, load_hierarchy};
use crate::cli::{DiffArgs, DiffFormat};
use crate::diff::{Change, diff_ignoring, ignored_ids};
use crate::xpath::check_syntax;

/// Runs the command, writing to `out`.
pub async fn run(args: &DiffArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    for expr in &args.ignore {
        check_syntax(expr)?;
    }
    let (old, new) = tokio::try_join!(async { load_hierarchy(&args.old).await }, async {
        load_hierarchy(&args.new).await
    },)?;
    let ignore = args.ignore.clone();
    let format = args.format;
    let (text, changed) = tokio::task::spawn_blocking(move || -> anyhow::Result<(String, bool)> {
        let old_ignored = ignored_ids(&old, &ignore)?;
        let new_ignored = ignored_ids(&new, &ignore)?;
        let changes = diff_ignoring(&old, &new, &old_ignored, &new_ignored);
        Ok((render(&changes, format)?, !changes.is_empty()))
    })
    .await??;
    out.write_all(text.as_bytes())?;
    Ok(if changed {
        Outcome::Negative
    } else {
        Outcome::Success
    })
}

/// Formats changes.
pub fn render(changes: &[Change], format: DiffFormat) -> anyhow::Result<String> {
    Ok(match format {
        DiffFormat::Text => changes.iter().map(|c| format!("{}\n", c.line())).collect(),
        DiffFormat::Json => {
            let v = serde_json::json!({ "version": "1", "changes": changes });
            format!("{}\n", serde_json::to_string_pretty(&v)?)
        }
        DiffFormat::Xml => to_changes_xml(changes),
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The XML form: `<changes version="1">` with a `<change kind=...>` per change.
pub fn to_changes_xml(changes: &[Change]) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(s, "<changes version=\"1\" count=\"{}\">", changes.len());
    for c in changes {
        let _ = write!(s, "  <change kind=\"{}\"", c.kind.name());
        for (name, v) in [
            ("old-xpath", &c.old_xpath),
            ("new-xpath", &c.new_xpath),
            ("old-num", &c.old_num),
            ("new-num", &c.new_num),
            ("delta", &c.delta),
        ] {
            if let Some(v) = v {
                let _ = write!(s, " {name}=\"{}\"", esc(v));
            }
        }
        if let Some(n) = c.size {
            let _ = write!(s, " size=\"{n}\"");
        }
        s.push_str(">\n    <context>");
        for l in &c.context {
            let _ = write!(s, "<label>{}</label>", esc(l));
        }
        s.push_str("</context>\n");
        if let Some(nc) = &c.new_context {
            s.push_str("    <new-context>");
            for l in nc {
                let _ = write!(s, "<label>{}</label>", esc(l));
            }
            s.push_str("</new-context>\n");
        }
        if let Some(o) = &c.old {
            let _ = writeln!(s, "    <old>{}</old>", esc(o));
        }
        if let Some(n) = &c.new {
            let _ = writeln!(s, "    <new>{}</new>", esc(n));
        }
        s.push_str("  </change>\n");
    }
    s.push_str("</changes>\n");
    s
}
