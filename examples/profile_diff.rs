//! Diffs two revisions of the generated quote page (for profilers):
//! `profile_diff [ROWS]`, 300 issuers by default.
#[path = "../benches/quote_page.rs"]
mod quote_page;
fn main() {
    let rows = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let a = semclip::hierarchy::Hierarchy::from_html(&quote_page::quote_page(1, rows), None);
    let b = semclip::hierarchy::Hierarchy::from_html(
        &quote_page::quote_page_revision(1, rows, 1, 10),
        None,
    );
    let mut n = 0;
    for _ in 0..5 {
        n += semclip::diff::diff(&a, &b).len();
    }
    println!("{n}");
}
