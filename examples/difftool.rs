//! Development aid: prints the semantic diff of two HTML files.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let read = |p: &str| {
        let b = std::fs::read(p).unwrap_or_default();
        semclip::hierarchy::Hierarchy::from_html(
            &semclip::source::decode(&b, None, None).text,
            None,
        )
    };
    let (a, b) = (read(&args[1]), read(&args[2]));
    for c in semclip::diff::diff(&a, &b) {
        println!("{:?} {:?}: {:?} -> {:?}", c.kind, c.context, c.old, c.new);
    }
}
