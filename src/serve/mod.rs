//! The clip server: clips, feeds, the JSON API and the status pages over HTTP.

pub mod pages;
pub mod view;
