//! Writes small instances of the hostile page shapes (the generators of
//! `tests/it/shapes.rs`) into the fuzz target's seed corpus, so that the
//! fuzzer starts from the amplifying shapes found by hand and mutates
//! their counts: `cargo run --example hostile_corpus [DIR]` (default
//! `fuzz/seeds/hierarchy`).

#![allow(clippy::unwrap_used, reason = "a developer tool")]

#[allow(dead_code, reason = "the tests use the attack-size generators")]
#[path = "../tests/it/shapes.rs"]
mod shapes;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/seeds/hierarchy".to_owned());
    std::fs::create_dir_all(&dir).unwrap();
    for (name, page) in shapes::seeds() {
        let path = std::path::Path::new(&dir).join(format!("hostile-{name}.html"));
        std::fs::write(&path, page).unwrap();
        println!("{}", path.display());
    }
}
