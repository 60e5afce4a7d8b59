//! What real pages cost against the page budget (`limits.page`): every
//! HTML page of `../shared/corpus/` (or the folders given) parsed and built
//! under unlimited limits, the largest figure of each measure printed with
//! its page, and its share of the default limit.
//!
//! `cargo run --release --example page_costs [DIR ...]`

#![allow(clippy::unwrap_used, reason = "a measuring tool")]

use std::path::{Path, PathBuf};

use semclip::hierarchy::build_within;
use semclip::page::budget::{Budget, PageLimits};
use semclip::page::dom::Dom;

fn pages(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            pages(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("html") || x.eq_ignore_ascii_case("htm"))
        {
            out.push(p);
        }
    }
}

/// The measures in table order, CPU in microseconds.
fn measures(m: &PageLimits) -> [u64; 7] {
    [
        m.dom_nodes,
        m.dom_bytes,
        m.cells,
        m.nodes,
        m.text_bytes,
        m.id_bytes,
        u64::try_from(m.cpu.as_micros()).unwrap_or(u64::MAX),
    ]
}

fn main() {
    let dirs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let dirs = if dirs.is_empty() {
        vec![PathBuf::from("../shared/corpus")]
    } else {
        dirs
    };
    let mut files = Vec::new();
    for d in &dirs {
        pages(d, &mut files);
    }
    files.sort();
    let mut worst: Vec<(&str, u64, u64, PathBuf)> = Vec::new();
    let names = [
        "dom_nodes",
        "dom_bytes",
        "cells",
        "nodes",
        "text_bytes",
        "id_bytes",
        "cpu_us",
    ];
    let limits = names.into_iter().zip(measures(&PageLimits::default()));
    for (name, limit) in limits {
        worst.push((name, 0, limit, PathBuf::new()));
    }
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let text = semclip::page::source::decode(&bytes, None, None).text;
        let budget = Budget::new(PageLimits::unlimited());
        let dom = Dom::parse_within(&text, &budget);
        let _h = build_within(&dom, None, &budget);
        let values = measures(&budget.costs());
        for (w, v) in worst.iter_mut().zip(values) {
            if v > w.1 {
                w.1 = v;
                w.3 = f.clone();
            }
        }
    }
    println!("{} pages", files.len());
    println!("| measure | largest | share of default limit | page |");
    println!("|---|---:|---:|---|");
    for (name, v, limit, page) in worst {
        println!(
            "| {name} | {v} | {:.3} | {} |",
            v as f64 / limit as f64,
            page.display()
        );
    }
}
