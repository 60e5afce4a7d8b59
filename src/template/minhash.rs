//! (placeholder until the similarity branch lands)

use serde::{Deserialize, Serialize};

use super::tree::PageTree;

/// A min-hash sketch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sketch {
    /// Minima.
    pub mins: Vec<u32>,
}

impl Sketch {
    /// The sketch of a tree.
    pub fn of_tree(tree: &PageTree, _only: Option<&[u32]>) -> Sketch {
        Sketch {
            mins: vec![tree.len() as u32],
        }
    }

    /// Estimated Jaccard.
    pub fn similarity(&self, other: &Sketch) -> f64 {
        f64::from(u8::from(self == other))
    }
}
