//! `semclip hierarchy SOURCE`: prints a page's semantic hierarchy as XML,
//! JSON or an outline.

use std::io::Write;

use super::{Outcome, load_hierarchy};
use crate::cli::{Format, HierarchyArgs};
use crate::hierarchy::write::{XmlOptions, to_json, to_outline, to_xml};

/// Runs the command, writing to `out`.
pub async fn run(args: &HierarchyArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let h = load_hierarchy(&args.source).await?;
    let text = match args.format {
        Format::Xml => to_xml(&h, XmlOptions::default()),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&to_json(&h))?;
            s.push('\n');
            s
        }
        Format::Outline => to_outline(&h),
    };
    out.write_all(text.as_bytes())?;
    Ok(Outcome::Success)
}
