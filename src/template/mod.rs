//! Page templates (docs/algorithms.md, "Template clustering" and "RTDM
//! and ne-patterns"): what a site's pages have in
//! common (the template) and what varies (the data), learned without
//! per-site rules.
//!
//! - [`tree`]: the simplified page tree every measure works on;
//! - [`seq`]: pre-order `tag+depth` sequences with repeated records
//!   collapsed by a suffix array ("Repeated records");
//! - [`elcs`]: depth-weighted LCS similarity in O(n) memory ("Similarity");
//! - [`minhash`]: path-shingle min-hash sketches for constant-time
//!   comparison of many pages ("Cheap similarity measures");
//! - [`rtdm`]: the restricted top-down mapping edit distance with its
//!   mapping ("RTDM");
//! - [`ted`]: exact (Zhang–Shasha) tree edit distance, the oracle RTDM is
//!   checked against;
//! - [`pattern`]: ne-patterns with wildcards, merged by the function `f`
//!   and matched against pages ("ne-patterns");
//! - [`cluster`]: agglomerative clustering with a distance threshold,
//!   medoids, and per-cluster templates of essential and optional nodes.

pub mod cluster;
pub mod elcs;
pub mod minhash;
pub mod pattern;
pub mod rtdm;
pub mod seq;
pub mod ted;
pub mod tree;
