//! Runs one stage on the generated quote page, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/profile generate|parse|hierarchy|xml`.
#[path = "../benches/quote_page.rs"]
mod quote_page;

fn main() {
    let html = quote_page::quote_page(4, 330);
    match std::env::args().nth(1).as_deref() {
        Some("generate") => println!("{}", html.len()),
        Some("parse") => println!("{}", semclip::page::dom::Dom::parse(&html).len()),
        Some("xml") => {
            let h = semclip::hierarchy::Hierarchy::from_html(&html, None);
            println!(
                "{}",
                semclip::hierarchy::write::to_xml(&h, Default::default()).len()
            );
        }
        _ => println!(
            "{}",
            semclip::hierarchy::Hierarchy::from_html(&html, None).size()
        ),
    }
}
