//! Diffs two revisions of the generated quote page (for profilers).
#[path = "../benches/quote_page.rs"]
mod quote_page;
fn main() {
    let a = semclip::hierarchy::Hierarchy::from_html(&quote_page::quote_page(1, 300), None);
    let b = semclip::hierarchy::Hierarchy::from_html(
        &quote_page::quote_page_revision(1, 300, 1, 10),
        None,
    );
    let mut n = 0;
    for _ in 0..5 {
        n += semclip::diff::diff(&a, &b).len();
    }
    println!("{n}");
}
