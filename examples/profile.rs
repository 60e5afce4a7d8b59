//! Builds the generated quote page repeatedly (for profilers).
#[path = "../benches/quote_page.rs"]
mod quote_page;
fn main() {
    let html = quote_page::quote_page(4, 330);
    let dom = semclip::dom::Dom::parse(&html);
    let mut n = 0;
    for _ in 0..20 {
        n += semclip::hierarchy::build(&dom, None).size();
    }
    println!("{n}");
}
