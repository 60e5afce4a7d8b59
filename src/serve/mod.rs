//! The clip server: clips, feeds, the JSON API and the status pages over HTTP.

pub mod render;
pub mod view;
