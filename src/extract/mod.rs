//! Extraction without hand-written XPath: the main article of a page, the
//! repeated data records of a list page, and the data region around a few
//! keywords (DEIP). Each result becomes part of the page's semantic
//! hierarchy (see docs/watch-files.md, "Extraction and templates"), so
//! thresholds, diffs and the clip server work on it unchanged.

use serde::Serialize;

pub mod article;
pub mod names;
pub mod records;
pub mod region;
pub mod vocabulary;

/// Whitespace runs collapsed to one space, trimmed (case kept).
fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The main article of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Article {
    /// The headline.
    pub title: Option<String>,
    /// The author line, as the page writes it.
    pub byline: Option<String>,
    /// The publication date as the page writes it (ISO 8601 when the page
    /// gives a machine-readable one).
    pub date: Option<String>,
    /// The body's paragraphs (plain text, whitespace collapsed), in order.
    #[serde(skip)]
    pub paragraphs: Vec<String>,
    /// The index XPath ([`crate::page::dom::Dom::index_xpath`]) of the element
    /// holding the body, when one element holds it.
    pub xpath: Option<String>,
    /// How title and body were found.
    pub method: Method,
}

/// How an [`Article`] was extracted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// From the page alone ([`article::extract`]).
    #[default]
    SinglePage,
    /// By the ne-pattern of the site's learned template
    /// ([`article::extract_by_template`]).
    Template,
}

impl Method {
    /// The name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::SinglePage => "single-page",
            Method::Template => "template",
        }
    }
}

impl Article {
    /// The body as plain text, paragraphs separated by blank lines.
    pub fn body(&self) -> String {
        self.paragraphs.join("\n\n")
    }
}

/// One field of a record: a piece of text (or a link, an image) inside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    /// The field's name, the same for the same field in every record of a
    /// region, unique within it: what the page says about the field (a
    /// column header, a `dt`, `aria-label`, `itemprop`, a class token such
    /// as `price`), else what its texts are (`title`, `date`, `price`,
    /// `rank`, `link`, `image`), else its position (`f3`); see
    /// [`records`]. A DEIP region names fields by position only.
    pub name: String,
    /// Its text, whitespace collapsed.
    pub text: String,
    /// A link target (`href`) or an image source (`src`), as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// The index XPath of the node the field came from.
    pub xpath: String,
}

/// One data record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Its fields in document order.
    pub fields: Vec<Field>,
    /// The source-page elements the record is made of, as index XPaths
    /// (`/body[1]/div[3]/ul[1]/li[2]`), usually one element, several when a
    /// record is a run of siblings (e.g. `<dt>`+`<dd>`, or two `<tr>`s).
    pub xpaths: Vec<String>,
}

/// The repeated data records of a list page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Records {
    /// The records, in document order.
    pub records: Vec<Record>,
}

/// A data region found from keywords (docs/algorithms.md, "DEIP data regions").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Region {
    /// The index XPath of the region's root element.
    pub xpath: String,
    /// The wrapper: the child-index path from `<body>` to the region root,
    /// then the child indices of the record elements under it, reusable on
    /// later versions of the page ([`region::apply`]).
    pub wrapper: region::Wrapper,
    /// The region's records.
    pub records: Vec<Record>,
}
