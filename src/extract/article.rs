//! Article extraction (to be written).

use super::Article;
use crate::dom::Dom;

/// The main article of a single page.
pub fn extract(_dom: &Dom, _url: Option<&str>) -> Article {
    Article::default()
}
