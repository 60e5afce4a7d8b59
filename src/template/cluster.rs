//! (placeholder until the similarity branch lands)

use serde::{Deserialize, Serialize};

use super::tree::PageTree;
use crate::dom::NodeId;

/// Templates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TemplateSet {}

impl TemplateSet {
    /// Nearest template.
    pub fn nearest_tree(&self, _tree: &PageTree) -> Option<(usize, f64)> {
        None
    }
    /// Data roots.
    pub fn data_roots(&self, _index: usize, _tree: &PageTree) -> Vec<NodeId> {
        Vec::new()
    }
}
