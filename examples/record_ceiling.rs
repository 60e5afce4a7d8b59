//! How far record extraction on next-eval can go with the regions the
//! extractor finds: the F1 an oracle would reach by choosing perfectly
//! among them, against what the page filter chooses.
//!
//! ```sh
//! cargo run --release --example record_ceiling
//! ```
//!
//! Corpus: `../shared/corpus/records/next-eval` (`SEMCLIP_CORPUS` overrides
//! `../shared/corpus`); skipped with a message when it is absent.
//!
//! For each page, [`records::candidates`] lists every region the
//! bottom-up choice takes (module documentation of `extract::records`,
//! step 3), kept by the page filter or not. Scored with the data set's
//! scoring (`examples/support/record_scoring.rs`), micro over all records:
//!
//! - **shipped**: the kept regions, at the shipped record level;
//! - **oracle regions**: every region at least half of whose records are
//!   true records, at the shipped level; no rule choosing among these
//!   regions can do better;
//! - **oracle regions and level**: the same, but each region at whichever
//!   wrapper level (the member, or a wrapper below it) matches the most
//!   true records.

use std::collections::HashSet;
use std::path::PathBuf;

use semclip::extract::records;
use semclip::page::dom::Dom;

#[path = "support/record_scoring.rs"]
mod scoring;

use scoring::{f1, matched_overlap};

/// Micro totals: matched overlap, predicted and true records.
#[derive(Default)]
struct Totals {
    matched: f64,
    predicted: usize,
    truth: usize,
}

impl Totals {
    fn add(&mut self, pred: &[Vec<String>], truth: &[Vec<String>]) {
        self.matched += matched_overlap(pred, truth);
        self.predicted += pred.len();
        self.truth += truth.len();
    }

    fn line(&self, name: &str) -> String {
        let p = self.matched / self.predicted.max(1) as f64;
        let r = self.matched / self.truth.max(1) as f64;
        format!(
            "{name:<28} P {p:.4}  R {r:.4}  F1 {:.4}  ({} predicted)",
            f1(p, r),
            self.predicted
        )
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::var_os("SEMCLIP_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/corpus"));
    let dir = root.join("records/next-eval");
    if !dir.join("html").is_dir() {
        eprintln!(
            "skipped: {} is absent (set SEMCLIP_CORPUS to the corpus folder)",
            dir.display()
        );
        return Ok(());
    }
    let mut pages: Vec<(u32, PathBuf)> = std::fs::read_dir(dir.join("html"))?
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let n = path.file_stem()?.to_str()?.parse().ok()?;
            Some((n, path))
        })
        .collect();
    pages.sort();
    let (mut shipped, mut oracle, mut oracle_level) =
        (Totals::default(), Totals::default(), Totals::default());
    for (n, path) in &pages {
        let bytes = std::fs::read(path)?;
        let html = semclip::page::source::decode(&bytes, None, None).text;
        let truth: Vec<Vec<String>> = serde_json::from_str(&std::fs::read_to_string(
            dir.join(format!("groundTruth/{n}.json")),
        )?)?;
        let true_xpaths: HashSet<&str> = truth.iter().flatten().map(String::as_str).collect();
        let share = |xs: &mut dyn Iterator<Item = &String>| {
            let (hits, all) = xs.fold((0usize, 0usize), |(h, a), x| {
                (h + usize::from(true_xpaths.contains(x.as_str())), a + 1)
            });
            hits as f64 / all.max(1) as f64
        };
        let (mut s, mut o, mut ol) = (Vec::new(), Vec::new(), Vec::new());
        for c in records::candidates(&Dom::parse(&html)) {
            let at_shipped = share(&mut c.records.iter());
            if c.kept {
                s.extend(c.records.iter().map(|x| vec![x.clone()]));
            }
            if at_shipped >= 0.5 {
                o.extend(c.records.iter().map(|x| vec![x.clone()]));
            }
            // The best wrapper level: depth k of every record's chain
            // (the innermost one where a chain is shorter).
            let deepest = c.levels.iter().map(Vec::len).max().unwrap_or(0);
            let at_level = |k: usize| -> Vec<String> {
                c.levels
                    .iter()
                    .filter_map(|chain| chain.get(k.min(chain.len().saturating_sub(1))).cloned())
                    .collect()
            };
            let best = (0..deepest)
                .map(|k| {
                    let xs = at_level(k);
                    (share(&mut xs.iter()), xs)
                })
                .fold((0.0, Vec::new()), |a, b| if b.0 > a.0 { b } else { a });
            if best.0 >= 0.5 {
                ol.extend(best.1.into_iter().map(|x| vec![x]));
            }
        }
        shipped.add(&s, &truth);
        oracle.add(&o, &truth);
        oracle_level.add(&ol, &truth);
    }
    println!("next-eval, {} pages, micro:", pages.len());
    println!("{}", shipped.line("shipped"));
    println!("{}", oracle.line("oracle regions"));
    println!("{}", oracle_level.line("oracle regions and level"));
    Ok(())
}
