//! DEIP data regions (to be written).

use serde::{Deserialize, Serialize};

use super::Region;
use crate::dom::Dom;

/// A region's wrapper: where its root is and which of its children are
/// records, as child indices over elements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wrapper {
    /// Element-child indices (0-based) from `<body>` to the region root.
    pub root: Vec<u32>,
}

/// Why no region was found.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// No text node contains any of the keywords.
    #[error("no text on the page contains any of the keywords")]
    NoMatch,
}

/// Finds the main data region holding `keywords`.
pub fn find(_dom: &Dom, _keywords: &[String]) -> Result<Region, RegionError> {
    Err(RegionError::NoMatch)
}

/// Applies a learned wrapper to a (later version of the) page.
pub fn apply(_dom: &Dom, _wrapper: &Wrapper) -> Option<Region> {
    None
}
