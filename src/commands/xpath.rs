//! `semclip xpath SOURCE EXPR`: evaluates an XPath 1.0 expression over a
//! page's hierarchy and prints the matching nodes' ids and text, or the
//! number, boolean or string result.

use std::io::Write;

use serde_json::json;

use super::{Outcome, load_hierarchy};
use crate::cli::XpathArgs;
use crate::hierarchy::write::{XmlOptions, to_xml};
use crate::xpath::{HierarchyDoc, XPathValue, check_syntax};

/// Runs the command, writing to `out`.
pub async fn run(args: &XpathArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    // A bad expression is reported before anything is fetched.
    check_syntax(&args.expr)?;
    let h = load_hierarchy(&args.source).await?;
    let expr = args.expr.clone();
    let json = args.json;
    // libxml2 documents are not Send: parse and query on one blocking thread.
    let (text, outcome) =
        tokio::task::spawn_blocking(move || -> anyhow::Result<(String, Outcome)> {
            let xml = to_xml(&h, XmlOptions::default());
            let doc = HierarchyDoc::parse(&xml)?;
            let value = doc.evaluate(&expr)?;
            Ok(render(&value, json))
        })
        .await??;
    out.write_all(text.as_bytes())?;
    Ok(outcome)
}

/// Formats a result; the outcome is negative for an empty node-set or false.
pub fn render(value: &XPathValue, as_json: bool) -> (String, Outcome) {
    let outcome = match value {
        XPathValue::Nodes(n) if n.is_empty() => Outcome::Negative,
        XPathValue::Boolean(false) => Outcome::Negative,
        _ => Outcome::Success,
    };
    let text = if as_json {
        let v = match value {
            XPathValue::Nodes(nodes) => json!({
                "type": "nodes",
                "nodes": nodes.iter().map(|n| json!({"xpath": n.id, "name": n.name, "value": n.value})).collect::<Vec<_>>(),
            }),
            XPathValue::Number(x) => json!({"type": "number", "value": number_json(*x)}),
            XPathValue::Boolean(b) => json!({"type": "boolean", "value": b}),
            XPathValue::String(s) => json!({"type": "string", "value": s}),
        };
        format!("{v:#}\n")
    } else {
        match value {
            XPathValue::Nodes(nodes) => nodes
                .iter()
                .map(|n| {
                    format!(
                        "{}\t{}\n",
                        n.id.as_deref().unwrap_or("-"),
                        n.value.replace('\n', " ")
                    )
                })
                .collect(),
            XPathValue::Number(x) => format!("{}\n", format_number(*x)),
            XPathValue::Boolean(b) => format!("{b}\n"),
            XPathValue::String(s) => format!("{s}\n"),
        }
    };
    (text, outcome)
}

/// An XPath number as XPath's `string()` writes it (`NaN`, `Infinity`, no `.0`).
pub fn format_number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn number_json(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        json!(format_number(x))
    }
}
