//! (placeholder until the similarity branch lands)

use serde::{Deserialize, Serialize};

use super::seq::Interner;
use super::tree::PageTree;
use crate::dom::NodeId;

/// Default threshold.
pub const DEFAULT_THRESHOLD: f64 = 0.4;

/// Features.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PageFeatures {}

impl PageFeatures {
    /// Features of a tree.
    pub fn new(_tree: &PageTree, _interner: &mut Interner) -> PageFeatures {
        PageFeatures {}
    }
}

/// A template.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Template {}

impl Template {
    /// One line.
    pub fn describe(&self, _names: &[String]) -> String {
        String::new()
    }
}

/// Templates.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TemplateSet {
    /// Templates.
    pub templates: Vec<Template>,
    /// Pending.
    pub pending: Vec<PageFeatures>,
}

impl TemplateSet {
    /// Learns.
    pub fn learn(
        _interner: Interner,
        _pages: Vec<PageFeatures>,
        _threshold: f64,
        _min: usize,
    ) -> TemplateSet {
        TemplateSet::default()
    }
    /// Nearest template.
    pub fn nearest_tree(&self, _tree: &PageTree) -> Option<(usize, f64)> {
        None
    }
    /// Data roots.
    pub fn data_roots(&self, _index: usize, _tree: &PageTree) -> Vec<NodeId> {
        Vec::new()
    }
}
