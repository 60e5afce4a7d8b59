//! Times parsing and building on one file (development aid).
fn main() {
    let p = std::env::args().nth(1).unwrap_or_default();
    let bytes = std::fs::read(&p).unwrap_or_default();
    let html = String::from_utf8_lossy(&bytes);
    let t = std::time::Instant::now();
    let dom = semclip::dom::Dom::parse(&html);
    let parse = t.elapsed();
    let h = semclip::hierarchy::build(&dom, None);
    let build = t.elapsed() - parse;
    eprintln!("parse {parse:?} build {build:?}");
    print!("{}", semclip::output::to_xml(&h, Default::default()));
}
