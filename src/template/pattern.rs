//! ne-patterns (Reis et al.; docs/algorithms.md, "ne-patterns"): what the pages
//! of one cluster share, with wildcards where they differ; matching a page
//! against a pattern; the text passages the wildcards capture; and the
//! title/body labelling heuristic.
//!
//! Takes simplified pages ([`PageTree`] with their [`Dom`]). Gives a
//! [`Pattern`] (a tree whose leaves may be wildcards: SINGLE `·` exactly
//! one subtree, PLUS `+` one or more, OPTION `?` zero or one, KLEENE `*`
//! zero or more), learned by folding [`Pattern::merge`] over a cluster's
//! pages; [`Pattern::match_page`] (captures per wildcard, a cost and a
//! similarity); [`Pattern::captured_text`] (the passages `(t_k, p_k)`) and
//! [`Pattern::label`] (title and body).
//!
//! Decisions beyond the sources:
//! - Structure is text-insensitive: every text leaf is one `#text` label
//!   when patterns are merged and matched, so two pages of one template
//!   align however their texts differ. A pattern text node remembers its
//!   text's hash when it was the same in every training page
//!   (boilerplate: "Home", "Copyright"); one whose text varied is *data*
//!   and its text is captured like a wildcard's. (In the paper text nodes
//!   with different texts become `·`; this keeps the same information
//!   without letting a changed word break the structure.)
//! - Merging uses wildcard-aware RTDM costs ([`merge`](Pattern::merge)):
//!   a wildcard maps to anything for free, a subtree next to a `*`/`+` is
//!   absorbed for free, optional wildcards vanish for free; otherwise unit
//!   costs. The thesis gives these costs for matching only; using them
//!   when merging keeps an existing `+` from being renamed away.
//! - Post-processing counts the "3 non-wildcard nodes" between wildcards
//!   as nodes (subtree sizes), not siblings, so a large literal block
//!   between two `?` is never swallowed into a wildcard.
//! - Matching offers the paper's strict costs (anything not explained by
//!   a wildcard is infinite: no match) and soft costs (1 per node out of
//!   place), whose total gives a similarity to tell "fits the template"
//!   from "layout drifted".

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use crate::page::dom::{Dom, NodeData};
use crate::template::rtdm::{Context, Rtdm, RtdmCosts, similarity};
use crate::template::ted::{Cost, INFINITE, LTree, Labels, TextLabels, TreeError, text_hash_hex};
use crate::template::tree::{PageTree, TEXT};

/// Wildcards at most this many non-wildcard nodes apart are folded
/// together by the post-processing of a merge (docs/algorithms.md, "ne-patterns").
pub const FOLD_GAP: usize = 3;

/// A passage is the body only with more than this many words
/// (docs/algorithms.md, "Labelling title and body").
pub const BODY_MIN_WORDS: usize = 100;

/// A title passage has at most this many words (and at least one).
pub const TITLE_MAX_WORDS: usize = 20;

/// The four wildcard kinds of an ne-pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wildcard {
    /// `·`: exactly one subtree.
    Single,
    /// `+`: one or more sibling subtrees.
    Plus,
    /// `?`: zero or one subtree.
    Optional,
    /// `*`: zero or more sibling subtrees.
    Kleene,
}

impl Wildcard {
    /// The symbol used in the sources and in [`Pattern::to_bracket`].
    pub fn symbol(self) -> &'static str {
        match self {
            Wildcard::Single => "·",
            Wildcard::Plus => "+",
            Wildcard::Optional => "?",
            Wildcard::Kleene => "*",
        }
    }

    /// True for `+` and `*`, which stand for a run of siblings.
    pub fn repeats(self) -> bool {
        matches!(self, Wildcard::Plus | Wildcard::Kleene)
    }

    /// True for `?` and `*`, which may match nothing.
    pub fn optional(self) -> bool {
        matches!(self, Wildcard::Optional | Wildcard::Kleene)
    }

    fn from_symbol(s: &str) -> Option<Wildcard> {
        Some(match s {
            "·" | "." => Wildcard::Single,
            "+" => Wildcard::Plus,
            "?" => Wildcard::Optional,
            "*" => Wildcard::Kleene,
            _ => return None,
        })
    }

    /// The interned label of this wildcard: a control character first, so
    /// it can never equal a tag name or `#text`.
    fn key(self) -> &'static str {
        match self {
            Wildcard::Single => "\u{1}·",
            Wildcard::Plus => "\u{1}+",
            Wildcard::Optional => "\u{1}?",
            Wildcard::Kleene => "\u{1}*",
        }
    }

    const ALL: [Wildcard; 4] = [
        Wildcard::Single,
        Wildcard::Plus,
        Wildcard::Optional,
        Wildcard::Kleene,
    ];
}

/// What a pattern node is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatLabel {
    /// An element with this tag name.
    Element(String),
    /// A text leaf; `constant` is the hash ([`text_hash_hex`]) of its text
    /// when that text was the same in every page merged so far, `None`
    /// when it varied (data).
    Text {
        /// Hash of the shared text, if any.
        constant: Option<String>,
    },
    /// A wildcard leaf.
    Wildcard(Wildcard),
}

impl PatLabel {
    /// The wildcard, if this is one.
    pub fn wildcard(&self) -> Option<Wildcard> {
        match self {
            PatLabel::Wildcard(w) => Some(*w),
            _ => None,
        }
    }

    /// The label as the structure sees it (text content ignored).
    fn key(&self) -> &str {
        match self {
            PatLabel::Element(name) => name,
            PatLabel::Text { .. } => TEXT,
            PatLabel::Wildcard(w) => w.key(),
        }
    }
}

/// The merging function `f` (docs/algorithms.md, "ne-patterns"; symmetric): the label of the
/// merged node for two mapped nodes. An unmapped node `a` merges as
/// `merge_label(a, ?)`.
///
/// `f(*,x)=*`; `f(+,+)=+`, `f(+,·)=+`, `f(+,?)=*`, `f(+,n)=+`;
/// `f(·,·)=·`, `f(·,?)=?`, `f(·,n)=·`; `f(?,?)=?`, `f(?,n)=?`;
/// `f(n1,n2)=n1` for the same label, else `·`. Two text leaves have the
/// same label; the result keeps the text hash only if both had the same.
pub fn merge_label(a: &PatLabel, b: &PatLabel) -> PatLabel {
    use Wildcard::*;
    let w = match (a.wildcard(), b.wildcard()) {
        (Some(Kleene), _) | (_, Some(Kleene)) => Kleene,
        (Some(Plus), Some(Optional)) | (Some(Optional), Some(Plus)) => Kleene,
        (Some(Plus), _) | (_, Some(Plus)) => Plus,
        (Some(Optional), _) | (_, Some(Optional)) => Optional,
        (Some(Single), _) | (_, Some(Single)) => Single,
        (None, None) => {
            return match (a, b) {
                (PatLabel::Text { constant: x }, PatLabel::Text { constant: y }) => {
                    PatLabel::Text {
                        constant: if x == y { x.clone() } else { None },
                    }
                }
                (PatLabel::Element(x), PatLabel::Element(y)) if x == y => a.clone(),
                _ => PatLabel::Wildcard(Single),
            };
        }
    };
    PatLabel::Wildcard(w)
}

/// One node of a pattern, in pre-order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatNode {
    /// What the node is.
    pub label: PatLabel,
    /// Depth below the root (the root is 0).
    pub depth: u32,
}

/// Why a stored pattern is not a valid pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The depths do not describe one rooted tree.
    #[error("pattern nodes do not form a tree")]
    Shape(#[source] TreeError),
    /// Wildcards must be leaves.
    #[error("wildcard at node {0} has children")]
    WildcardWithChildren(usize),
}

/// The stored form of a [`Pattern`] (validated when read back).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RawPattern {
    pages: u32,
    nodes: Vec<PatNode>,
}

/// An ne-pattern: a labelled ordered tree whose leaves may be wildcards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPattern", into = "RawPattern")]
pub struct Pattern {
    nodes: Vec<PatNode>,
    /// Subtree ends, derived from the depths.
    end: Vec<u32>,
    /// Number of pages merged into it.
    pages: u32,
}

impl TryFrom<RawPattern> for Pattern {
    type Error = PatternError;
    fn try_from(raw: RawPattern) -> Result<Pattern, PatternError> {
        LTree::from_depths(raw.nodes.iter().map(|n| (0, n.depth))).map_err(PatternError::Shape)?;
        let p = Pattern::from_nodes(raw.nodes, raw.pages);
        if let Some(i) =
            (0..p.len()).find(|&i| p.nodes[i].label.wildcard().is_some() && p.end(i) > i + 1)
        {
            return Err(PatternError::WildcardWithChildren(i));
        }
        Ok(p)
    }
}

impl From<Pattern> for RawPattern {
    fn from(p: Pattern) -> RawPattern {
        RawPattern {
            pages: p.pages,
            nodes: p.nodes,
        }
    }
}

/// Subtree ends of a pre-order node list, from the depths (defined for
/// any depth sequence).
fn ends(nodes: &[PatNode]) -> Vec<u32> {
    let mut end = vec![nodes.len() as u32; nodes.len()];
    let mut open: Vec<usize> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        while let Some(&top) = open.last() {
            if nodes[top].depth >= n.depth {
                end[top] = i as u32;
                open.pop();
            } else {
                break;
            }
        }
        open.push(i);
    }
    end
}

/// The wildcard label ids of one [`Labels`] interner.
#[derive(Debug, Clone, Copy)]
struct WildIds([u32; 4]);

impl WildIds {
    fn new(labels: &mut Labels) -> WildIds {
        WildIds(Wildcard::ALL.map(|w| labels.intern(w.key())))
    }

    fn kind(&self, label: u32) -> Option<Wildcard> {
        self.0
            .iter()
            .position(|&id| id == label)
            .map(|k| Wildcard::ALL[k])
    }

    fn of(&self, t: &LTree, i: usize) -> Option<Wildcard> {
        self.kind(t.label(i))
    }
}

/// RTDM costs for merging two patterns (wildcards in either tree).
struct MergeCosts {
    wild: WildIds,
}

impl MergeCosts {
    /// A subtree of one pattern that the other can leave out for free:
    /// an optional wildcard, or anything under a wildcard or right after
    /// a `*`/`+` of the other pattern.
    fn free(&self, this: &LTree, i: usize, other: &LTree, at: Context) -> bool {
        self.wild.of(this, i).is_some_and(Wildcard::optional)
            || at.parent.is_some_and(|p| self.wild.of(other, p).is_some())
            || at
                .left
                .is_some_and(|l| self.wild.of(other, l).is_some_and(Wildcard::repeats))
    }
}

impl RtdmCosts for MergeCosts {
    fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        let same = t1.label(i) == t2.label(j);
        Cost::from(!same && self.wild.of(t1, i).is_none() && self.wild.of(t2, j).is_none())
    }
    fn delete(&self, t1: &LTree, i: usize, t2: &LTree, at: Context) -> Cost {
        if self.free(t1, i, t2, at) {
            0
        } else {
            t1.size(i) as Cost
        }
    }
    fn insert(&self, t1: &LTree, t2: &LTree, j: usize, at: Context) -> Cost {
        if self.free(t2, j, t1, at) {
            0
        } else {
            t2.size(j) as Cost
        }
    }
}

/// Costs of matching a page against a pattern with RTDM (docs/algorithms.md,
/// "Matching a page against a pattern"): replacing a pattern wildcard by a page subtree is free;
/// inserting a page subtree is free below a wildcard or right after a
/// `*`/`+`; deleting a `*`, `+` or `?` is free. Everything else costs the
/// amounts here, per node (so [`INFINITE`] forbids it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchCosts {
    /// A literal pattern node mapped to a page node with another label.
    pub mismatch: Cost,
    /// Per node of a pattern subtree with no page counterpart.
    pub missing: Cost,
    /// Per node of a page subtree no wildcard explains.
    pub extra: Cost,
}

impl MatchCosts {
    /// The paper's costs: the page matches only if the pattern explains
    /// every node.
    pub const STRICT: MatchCosts = MatchCosts {
        mismatch: INFINITE,
        missing: INFINITE,
        extra: INFINITE,
    };

    /// One per node out of place: a cost that grows with the drift.
    pub const SOFT: MatchCosts = MatchCosts {
        mismatch: 1,
        missing: 1,
        extra: 1,
    };
}

struct MatchModel {
    costs: MatchCosts,
    wild: WildIds,
}

impl RtdmCosts for MatchModel {
    fn replace(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        if self.wild.of(t1, i).is_some() || t1.label(i) == t2.label(j) {
            0
        } else {
            self.costs.mismatch
        }
    }
    fn delete(&self, t1: &LTree, i: usize, _: &LTree, _: Context) -> Cost {
        match self.wild.of(t1, i) {
            Some(Wildcard::Plus | Wildcard::Kleene | Wildcard::Optional) => 0,
            _ => self.costs.missing.saturating_mul(t1.size(i) as Cost),
        }
    }
    fn insert(&self, t1: &LTree, t2: &LTree, j: usize, at: Context) -> Cost {
        let under_wildcard = at.parent.is_some_and(|p| self.wild.of(t1, p).is_some());
        let after_repeat = at
            .left
            .is_some_and(|l| self.wild.of(t1, l).is_some_and(Wildcard::repeats));
        if under_wildcard || after_repeat {
            0
        } else {
            self.costs.extra.saturating_mul(t2.size(j) as Cost)
        }
    }
    fn insert_children(&self, t1: &LTree, i: usize, t2: &LTree, j: usize) -> Cost {
        if self.wild.of(t1, i).is_some() {
            0
        } else {
            self.costs.extra.saturating_mul(t2.size(j) as Cost - 1)
        }
    }
}

/// What one wildcard (or data text node) of a pattern captured in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Pre-order index of the pattern node.
    pub pattern_node: u32,
    /// The wildcard, or `None` for a pattern text node whose text varies.
    pub wildcard: Option<Wildcard>,
    /// Page nodes (pre-order indices in the [`PageTree`]) whose subtrees
    /// it captured, in document order; empty when an optional wildcard
    /// matched nothing.
    pub nodes: Vec<u32>,
}

/// The result of matching a page against a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternMatch {
    /// RTDM cost under the costs used (0: the pattern explains the page).
    pub cost: Cost,
    /// `1 - cost / (pattern size + page size)`, in `[0, 1]`.
    pub similarity: f64,
    /// One entry per wildcard and per data text node, in pattern order.
    pub captures: Vec<Capture>,
    /// Mapped pairs `(pattern node, page node)`.
    pub mapping: Vec<(u32, u32)>,
}

impl PatternMatch {
    /// True when the pattern explains every node of the page (the paper's
    /// "finite cost under strict costs").
    pub fn fits(&self) -> bool {
        self.cost == 0
    }
}

/// A text passage captured by a pattern node: the sources' `(t_k, p_k)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// The captured text (captured subtrees separated by blank lines).
    pub text: String,
    /// The pattern node that captured it (pre-order index): the position
    /// `p_k` distances are measured in.
    pub position: usize,
    /// Number of words.
    pub words: usize,
    /// The page nodes it came from.
    pub nodes: Vec<u32>,
}

/// Title and body among a page's passages (indices into them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labelling {
    /// The title passage.
    pub title: Option<usize>,
    /// The longest passage of more than [`BODY_MIN_WORDS`] words.
    pub body: Option<usize>,
    /// The passages that make up the body (its region), in order.
    pub body_region: Vec<usize>,
}

/// Title and body text of a page matched against a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    /// The title, if one was found.
    pub title: Option<String>,
    /// The body, passages separated by blank lines.
    pub body: Option<String>,
    /// The match it came from.
    pub matched: PatternMatch,
}

impl Pattern {
    fn from_nodes(nodes: Vec<PatNode>, pages: u32) -> Pattern {
        let end = ends(&nodes);
        Pattern { nodes, end, pages }
    }

    /// The pattern of one page: its simplified tree, no wildcards, every
    /// text leaf constant (with its text hash).
    pub fn from_page(dom: &Dom, tree: &PageTree) -> Pattern {
        let nodes = tree
            .nodes
            .iter()
            .map(|n| PatNode {
                label: if n.is_text() {
                    PatLabel::Text {
                        constant: match &dom.node(n.dom).data {
                            NodeData::Text(t) => Some(text_hash_hex(t)),
                            _ => None,
                        },
                    }
                } else {
                    PatLabel::Element(n.tag.to_string())
                },
                depth: n.depth,
            })
            .collect();
        Pattern::from_nodes(nodes, 1)
    }

    /// Parses a pattern in bracket notation: `·` (or `.`), `+`, `?`, `*`
    /// are wildcards, `#text` a text leaf whose text varies, anything else
    /// an element. For tests and hand-written patterns.
    pub fn from_bracket(text: &str) -> Result<Pattern, PatternError> {
        let mut labels = Labels::new();
        let t = LTree::from_bracket(text, &mut labels).map_err(PatternError::Shape)?;
        let nodes = (0..t.len())
            .map(|i| {
                let name = labels.name(t.label(i)).unwrap_or("");
                PatNode {
                    label: match Wildcard::from_symbol(name) {
                        Some(w) => PatLabel::Wildcard(w),
                        None if name == TEXT => PatLabel::Text { constant: None },
                        None => PatLabel::Element(name.to_owned()),
                    },
                    depth: t.depth(i),
                }
            })
            .collect();
        Pattern::try_from(RawPattern { pages: 1, nodes })
    }

    /// The pattern in bracket notation (wildcards by their symbols, text
    /// leaves as `#text`).
    pub fn to_bracket(&self) -> String {
        let mut out = String::new();
        let mut open: Vec<usize> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            while open.last().is_some_and(|&top| i >= self.end(top)) {
                out.push('}');
                open.pop();
            }
            out.push('{');
            out.push_str(match &n.label {
                PatLabel::Element(name) => name,
                PatLabel::Text { .. } => TEXT,
                PatLabel::Wildcard(w) => w.symbol(),
            });
            open.push(i);
        }
        out.extend(open.iter().map(|_| '}'));
        out
    }

    /// The pattern of a cluster: the merge of all its pages, in order.
    /// `None` for no page.
    pub fn learn(pages: &[(&Dom, &PageTree)]) -> Option<Pattern> {
        let mut it = pages.iter();
        let &(dom, tree) = it.next()?;
        let mut p = Pattern::from_page(dom, tree);
        for &(dom, tree) in it {
            p = p.merge(&Pattern::from_page(dom, tree));
        }
        Some(p)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True for the empty pattern.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes in pre-order.
    pub fn nodes(&self) -> &[PatNode] {
        &self.nodes
    }

    /// Number of pages merged into this pattern.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// One past the last node of the subtree of `i`.
    pub fn end(&self, i: usize) -> usize {
        self.end[i] as usize
    }

    fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.end(i);
        std::iter::successors(Some(i + 1).filter(|&c| c < end), move |&c| {
            Some(self.end(c)).filter(|&n| n < end)
        })
    }

    /// The wildcard count of each kind: `[·, +, ?, *]`.
    pub fn wildcard_counts(&self) -> [usize; 4] {
        let mut out = [0; 4];
        for n in &self.nodes {
            if let Some(w) = n.label.wildcard()
                && let Some(k) = Wildcard::ALL.iter().position(|&x| x == w)
            {
                out[k] += 1;
            }
        }
        out
    }

    fn ltree(&self, labels: &mut Labels) -> LTree {
        let nodes: Vec<(u32, u32)> = self
            .nodes
            .iter()
            .map(|n| (labels.intern(n.label.key()), n.depth))
            .collect();
        // Patterns are built or validated as trees: this cannot fail.
        LTree::from_depths(nodes).unwrap_or_default()
    }

    /// Merges two patterns (docs/algorithms.md, "ne-patterns"): every tree either
    /// matches, the merge matches. Nodes mapped by RTDM merge by
    /// [`merge_label`], unmapped ones as `f(a, ?)`; then runs of `?` are
    /// folded ([`FOLD_GAP`]): with a neighbouring `·`/`+` into one `+`,
    /// with a neighbouring `?`/`*` into one `*`, two or more alone into
    /// one `*`.
    pub fn merge(&self, other: &Pattern) -> Pattern {
        let pages = self.pages.saturating_add(other.pages);
        if self.is_empty() || other.is_empty() {
            let p = if self.is_empty() { other } else { self };
            return Pattern { pages, ..p.clone() };
        }
        let mut labels = Labels::new();
        let wild = WildIds::new(&mut labels);
        let ta = self.ltree(&mut labels);
        let tb = other.ltree(&mut labels);
        let r = Rtdm::new().mapping(&ta, &tb, &MergeCosts { wild });
        let mut to_b: Vec<Option<u32>> = vec![None; self.len()];
        let mut to_a: Vec<Option<u32>> = vec![None; other.len()];
        for &(a, b) in &r.mapping {
            to_b[a as usize] = Some(b);
            to_a[b as usize] = Some(a);
        }
        enum Task {
            Pair(usize, usize, u32),
            OnlyA(usize, u32),
            OnlyB(usize, u32),
        }
        let optional = PatLabel::Wildcard(Wildcard::Optional);
        let mut out: Vec<PatNode> = Vec::with_capacity(self.len().max(other.len()));
        let mut stack = vec![Task::Pair(0, 0, 0)];
        let mut kids: Vec<Task> = Vec::new();
        while let Some(task) = stack.pop() {
            let (x, y, depth) = match task {
                Task::OnlyA(x, depth) => {
                    let label = merge_label(&self.nodes[x].label, &optional);
                    out.push(PatNode { label, depth });
                    continue;
                }
                Task::OnlyB(y, depth) => {
                    let label = merge_label(&other.nodes[y].label, &optional);
                    out.push(PatNode { label, depth });
                    continue;
                }
                Task::Pair(x, y, depth) => (x, y, depth),
            };
            let label = merge_label(&self.nodes[x].label, &other.nodes[y].label);
            let leaf = label.wildcard().is_some();
            out.push(PatNode { label, depth });
            if leaf {
                continue;
            }
            // Same label: merge the children lists along the mapping
            // (order-preserving, so a plain two-finger walk).
            let ca: Vec<usize> = self.children(x).collect();
            let cb: Vec<usize> = other.children(y).collect();
            let (mut i, mut j) = (0, 0);
            kids.clear();
            while i < ca.len() || j < cb.len() {
                let a = ca.get(i).copied();
                let b = cb.get(j).copied();
                match (a, b) {
                    (Some(a), Some(b)) if to_b[a] == Some(b as u32) => {
                        kids.push(Task::Pair(a, b, depth + 1));
                        i += 1;
                        j += 1;
                    }
                    (Some(a), _) if to_b[a].is_none() => {
                        kids.push(Task::OnlyA(a, depth + 1));
                        i += 1;
                    }
                    (_, Some(b)) if to_a[b].is_none() => {
                        kids.push(Task::OnlyB(b, depth + 1));
                        j += 1;
                    }
                    // Both mapped, not to each other: impossible for an
                    // order-preserving top-down mapping; keep both.
                    (Some(a), _) => {
                        kids.push(Task::OnlyA(a, depth + 1));
                        i += 1;
                    }
                    (None, Some(b)) => {
                        kids.push(Task::OnlyB(b, depth + 1));
                        j += 1;
                    }
                    (None, None) => break,
                }
            }
            stack.extend(kids.drain(..).rev());
        }
        fold(Pattern::from_nodes(out, pages))
    }

    /// Matches `page` with [`MatchCosts::SOFT`]: always a result for a
    /// non-empty pattern and page, with a cost that counts the nodes the
    /// pattern does not explain.
    pub fn match_page(&self, page: &PageTree) -> Option<PatternMatch> {
        self.match_with(page, MatchCosts::SOFT)
    }

    /// Matches `page` under `costs`; `None` when the cost is infinite (the
    /// page does not match under [`MatchCosts::STRICT`]) or either tree is
    /// empty.
    pub fn match_with(&self, page: &PageTree, costs: MatchCosts) -> Option<PatternMatch> {
        if self.is_empty() || page.is_empty() {
            return None;
        }
        let mut labels = Labels::new();
        let wild = WildIds::new(&mut labels);
        let pt = self.ltree(&mut labels);
        let tt = LTree::from_page(page, &mut labels, TextLabels::Uniform);
        let r = Rtdm::new().mapping(&pt, &tt, &MatchModel { costs, wild });
        if r.cost == INFINITE {
            return None;
        }
        // One capture per wildcard and per data text node, by pattern node.
        let mut slot: Vec<Option<usize>> = vec![None; self.len()];
        let mut captures: Vec<Capture> = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let wildcard = n.label.wildcard();
            if wildcard.is_some() || matches!(n.label, PatLabel::Text { .. }) {
                slot[i] = Some(captures.len());
                captures.push(Capture {
                    pattern_node: i as u32,
                    wildcard,
                    nodes: Vec::new(),
                });
            }
        }
        for &(a, b) in &r.mapping {
            if let Some(k) = slot[a as usize] {
                captures[k].nodes.push(b);
            }
        }
        for ins in &r.inserted {
            // A page subtree right after a `*`/`+` is one more of its run.
            if let Some(l) = ins.left
                && self.nodes[l as usize]
                    .label
                    .wildcard()
                    .is_some_and(Wildcard::repeats)
                && let Some(k) = slot[l as usize]
            {
                captures[k].nodes.push(ins.node);
            }
        }
        // Text nodes that matched nothing are not data in this page.
        captures.retain(|c| c.wildcard.is_some() || !c.nodes.is_empty());
        for c in &mut captures {
            c.nodes.sort_unstable();
        }
        Some(PatternMatch {
            cost: r.cost,
            similarity: similarity(r.cost, &pt, &tt),
            captures,
            mapping: r.mapping,
        })
    }

    /// The passages `(t_k, p_k)` of a match (docs/algorithms.md,
    /// "Labelling title and body"): the text of
    /// what each wildcard captured, and of each pattern text node whose
    /// text is data (it varied in training, or differs from the text
    /// every training page had). Empty texts are left out.
    pub fn captured_text(&self, dom: &Dom, tree: &PageTree, m: &PatternMatch) -> Vec<Passage> {
        let mut out = Vec::new();
        for c in &m.captures {
            let pos = c.pattern_node as usize;
            let mut text = String::new();
            for &n in &c.nodes {
                // Nodes of another tree or DOM than the match's: skipped.
                let Some(node) = tree.nodes.get(n as usize).filter(|x| x.dom < dom.len()) else {
                    continue;
                };
                if let (Some(PatLabel::Text { constant: Some(h) }), NodeData::Text(t)) = (
                    self.nodes.get(pos).map(|p| &p.label),
                    &dom.node(node.dom).data,
                ) && *h == text_hash_hex(t)
                {
                    continue;
                }
                let t = dom.text_content(node.dom);
                if t.is_empty() {
                    continue;
                }
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&t);
            }
            if text.is_empty() {
                continue;
            }
            out.push(Passage {
                words: text.split_whitespace().count(),
                text,
                position: pos,
                nodes: c.nodes.clone(),
            });
        }
        out
    }

    /// The parent of pattern node `i` (in pre-order, the nearest earlier
    /// node one level up).
    fn parent(&self, i: usize) -> Option<usize> {
        let depth = self.nodes.get(i)?.depth;
        (0..i).rev().find(|&a| self.nodes[a].depth + 1 == depth)
    }

    /// The body when no single passage is long enough: pages that write
    /// their body as paragraphs capture one passage per paragraph, each
    /// under 100 words. Passages are grouped by the element holding their
    /// paragraphs (the parent of a `<p>`, `<li>`, heading or quote that
    /// holds the text; else the text's own parent), never by the root; the
    /// group with most words, if more than [`BODY_MIN_WORDS`], is the body
    /// region. Gives the longest passage in it and the group's element.
    fn paragraph_run(&self, passages: &[Passage]) -> Option<(usize, Option<usize>)> {
        let mut words: FxHashMap<usize, usize> = FxHashMap::default();
        let mut keys = Vec::with_capacity(passages.len());
        for p in passages {
            let mut key = self.parent(p.position);
            if let Some(k) = key
                && let PatLabel::Element(name) = &self.nodes[k].label
                && matches!(
                    name.as_str(),
                    "p" | "li" | "h2" | "h3" | "h4" | "h5" | "h6" | "blockquote" | "pre" | "dd"
                )
            {
                key = self.parent(k);
            }
            let key = key.filter(|&k| k != 0);
            if let Some(k) = key {
                *words.entry(k).or_default() += p.words;
            }
            keys.push(key);
        }
        let (&group, &total) = words
            .iter()
            .max_by_key(|&(&k, &w)| (w, std::cmp::Reverse(k)))?;
        if total <= BODY_MIN_WORDS {
            return None;
        }
        let body = (0..passages.len())
            .filter(|&k| keys[k] == Some(group))
            .max_by_key(|&k| (passages[k].words, std::cmp::Reverse(k)))?;
        Some((body, Some(group)))
    }

    /// The labelling heuristic of docs/algorithms.md, "Labelling title and body". The body is the
    /// longest passage with more than [`BODY_MIN_WORDS`] words; its
    /// region is every passage under the same pattern parent (the body of
    /// a news page spans several sibling subtrees), unless that parent is
    /// the root, where the region would be the whole page. Without such a
    /// passage the body region is the longest run of paragraphs
    /// (`paragraph_run`; the thesis's pages were one text node per
    /// body, today's are one per paragraph). The title is
    /// the passage of 1 to [`TITLE_MAX_WORDS`] words outside the region
    /// whose share of words with the body, divided by its distance from
    /// the body passage (in pattern nodes), is highest and not zero.
    pub fn label(&self, passages: &[Passage]) -> Labelling {
        let body = passages
            .iter()
            .enumerate()
            .filter(|(_, p)| p.words > BODY_MIN_WORDS)
            .max_by_key(|&(k, p)| (p.words, std::cmp::Reverse(k)))
            .map(|(k, _)| k);
        let (body, parent) = match body {
            Some(body) => (body, self.parent(passages[body].position)),
            None => match self.paragraph_run(passages) {
                Some(found) => found,
                None => return Labelling::default(),
            },
        };
        let pos = passages[body].position;
        let body_region: Vec<usize> = match parent {
            Some(a) if a != 0 => (0..passages.len())
                .filter(|&k| passages[k].position > a && passages[k].position < self.end(a))
                .collect(),
            _ => vec![body],
        };
        let body_words: FxHashSet<String> = body_region
            .iter()
            .flat_map(|&k| words(&passages[k].text))
            .collect();
        let mut best: Option<(f64, usize)> = None;
        for (k, p) in passages.iter().enumerate() {
            if body_region.contains(&k) || p.words == 0 || p.words > TITLE_MAX_WORDS {
                continue;
            }
            let shared: FxHashSet<String> =
                words(&p.text).filter(|w| body_words.contains(w)).collect();
            let distance = p.position.abs_diff(pos).max(1) as f64;
            let score = shared.len() as f64 / distance;
            if score > 0.0 && best.is_none_or(|(s, _)| score > s) {
                best = Some((score, k));
            }
        }
        Labelling {
            title: best.map(|(_, k)| k),
            body: Some(body),
            body_region,
        }
    }

    /// Matches `tree` (soft costs), collects its passages and labels
    /// them: title and body text. `None` when nothing matched.
    pub fn extract(&self, dom: &Dom, tree: &PageTree) -> Option<Extraction> {
        let matched = self.match_page(tree)?;
        let passages = self.captured_text(dom, tree, &matched);
        let l = self.label(&passages);
        let body = (!l.body_region.is_empty()).then(|| {
            l.body_region
                .iter()
                .map(|&k| passages[k].text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        Some(Extraction {
            title: l.title.map(|k| passages[k].text.clone()),
            body,
            matched,
        })
    }
}

/// Lower-case alphanumeric words of `text`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A planned child of a folded children list.
enum Item {
    Keep(usize),
    Fold(Wildcard),
}

/// Post-processing of a merge: folds runs of `?` with their neighbouring
/// wildcard (see [`Pattern::merge`]) in every children list.
fn fold(p: Pattern) -> Pattern {
    if p.is_empty() {
        return p;
    }
    let mut out: Vec<PatNode> = Vec::with_capacity(p.len());
    enum Task {
        Node(usize),
        Leaf(Wildcard, u32),
    }
    let mut stack = vec![Task::Node(0)];
    let mut items: Vec<Item> = Vec::new();
    while let Some(t) = stack.pop() {
        let i = match t {
            Task::Leaf(w, depth) => {
                out.push(PatNode {
                    label: PatLabel::Wildcard(w),
                    depth,
                });
                continue;
            }
            Task::Node(i) => i,
        };
        out.push(p.nodes[i].clone());
        let kids: Vec<usize> = p.children(i).collect();
        plan(&p, &kids, &mut items);
        let depth = p.nodes[i].depth + 1;
        stack.extend(items.drain(..).rev().map(|it| match it {
            Item::Keep(c) => Task::Node(c),
            Item::Fold(w) => Task::Leaf(w, depth),
        }));
    }
    Pattern::from_nodes(out, p.pages)
}

/// Plans one children list: which runs of wildcards fold into one.
fn plan(p: &Pattern, kids: &[usize], items: &mut Vec<Item>) {
    // A group: children kids[first..=last] become one wildcard `kind`;
    // `chain` numbers runs of wildcards at most FOLD_GAP nodes apart.
    #[derive(Clone, Copy)]
    struct Group {
        first: usize,
        last: usize,
        kind: Wildcard,
        chain: usize,
        folded: bool,
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut chain = 0;
    let mut gap = 0usize;
    for (k, &c) in kids.iter().enumerate() {
        match p.nodes[c].label.wildcard() {
            Some(kind) => {
                if !groups.is_empty() && gap > FOLD_GAP {
                    chain += 1;
                }
                gap = 0;
                groups.push(Group {
                    first: k,
                    last: k,
                    kind,
                    chain,
                    folded: false,
                });
            }
            None => gap += p.end(c) - c,
        }
    }
    let towards = |w: Wildcard| match w {
        Wildcard::Single | Wildcard::Plus => Wildcard::Plus,
        Wildcard::Optional | Wildcard::Kleene => Wildcard::Kleene,
    };
    let mut merged: Vec<Group> = Vec::new();
    let mut t = 0;
    while t < groups.len() {
        let g = groups[t];
        if g.kind != Wildcard::Optional {
            merged.push(g);
            t += 1;
            continue;
        }
        let mut r = t + 1;
        while r < groups.len() && groups[r].kind == Wildcard::Optional && groups[r].chain == g.chain
        {
            r += 1;
        }
        let last_opt = groups[r - 1].last;
        if let Some(prev) = merged.last_mut().filter(|m| m.chain == g.chain) {
            prev.kind = towards(prev.kind);
            prev.last = last_opt;
            prev.folded = true;
            t = r;
        } else if r < groups.len() && groups[r].chain == g.chain {
            merged.push(Group {
                first: g.first,
                last: groups[r].last,
                kind: towards(groups[r].kind),
                chain: g.chain,
                folded: true,
            });
            t = r + 1;
        } else if r - t >= 2 {
            merged.push(Group {
                first: g.first,
                last: last_opt,
                kind: Wildcard::Kleene,
                chain: g.chain,
                folded: true,
            });
            t = r;
        } else {
            merged.push(g);
            t = r;
        }
    }
    items.clear();
    let mut k = 0;
    let mut next = merged.iter().filter(|g| g.folded).peekable();
    while k < kids.len() {
        match next.peek() {
            Some(g) if g.first == k => {
                items.push(Item::Fold(g.kind));
                k = g.last + 1;
                next.next();
            }
            _ => {
                items.push(Item::Keep(kids[k]));
                k += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> Pattern {
        Pattern::from_bracket(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn w(w: Wildcard) -> PatLabel {
        PatLabel::Wildcard(w)
    }

    fn el(name: &str) -> PatLabel {
        PatLabel::Element(name.to_owned())
    }

    #[test]
    fn merge_function_table_case_by_case() {
        use Wildcard::*;
        let (p, n, n2) = (el("p"), el("p"), el("div"));
        let cases: [(PatLabel, PatLabel, PatLabel); 16] = [
            (w(Kleene), w(Kleene), w(Kleene)),
            (w(Kleene), w(Plus), w(Kleene)),
            (w(Kleene), w(Optional), w(Kleene)),
            (w(Kleene), w(Single), w(Kleene)),
            (w(Kleene), p.clone(), w(Kleene)),
            (w(Plus), w(Plus), w(Plus)),
            (w(Plus), w(Single), w(Plus)),
            (w(Plus), w(Optional), w(Kleene)),
            (w(Plus), p.clone(), w(Plus)),
            (w(Single), w(Single), w(Single)),
            (w(Single), w(Optional), w(Optional)),
            (w(Single), p.clone(), w(Single)),
            (w(Optional), w(Optional), w(Optional)),
            (w(Optional), p.clone(), w(Optional)),
            (p.clone(), n.clone(), el("p")),
            (p.clone(), n2.clone(), w(Single)),
        ];
        for (a, b, want) in &cases {
            assert_eq!(&merge_label(a, b), want, "f({a:?}, {b:?})");
            assert_eq!(&merge_label(b, a), want, "f({b:?}, {a:?})");
        }
        // Text leaves: same structure label; the hash survives only if equal.
        let t = |c: Option<&str>| PatLabel::Text {
            constant: c.map(str::to_owned),
        };
        assert_eq!(merge_label(&t(Some("a")), &t(Some("a"))), t(Some("a")));
        assert_eq!(merge_label(&t(Some("a")), &t(Some("b"))), t(None));
        assert_eq!(merge_label(&t(None), &t(Some("b"))), t(None));
        assert_eq!(merge_label(&t(None), &el("p")), w(Single));
        // Unmapped nodes merge with `?`.
        assert_eq!(merge_label(&t(None), &w(Optional)), w(Optional));
    }

    #[test]
    fn merging_applies_f_along_the_mapping() {
        let m = |a: &str, b: &str| pat(a).merge(&pat(b)).to_bracket();
        assert_eq!(m("{r{h}{+}}", "{r{h}{·}}"), "{r{h}{+}}");
        assert_eq!(m("{r{h}{+}}", "{r{h}{?}}"), "{r{h}{*}}");
        assert_eq!(m("{r{h}{*}}", "{r{h}{p{#text}}}"), "{r{h}{*}}");
        assert_eq!(m("{r{h}{·}}", "{r{h}{div{p}}}"), "{r{h}{·}}");
        // Different labels mapped: `·` with nothing below.
        assert_eq!(m("{r{h}{p{#text}}}", "{r{h}{ul{li}}}"), "{r{h}{·}}");
        // An unmapped node becomes `?`; one alone is not folded.
        assert_eq!(m("{r{h}{x}{f}}", "{r{h}{f}}"), "{r{h}{?}{f}}");
        assert_eq!(m("{r{h}{f}}", "{r{h}{x}{f}}"), "{r{h}{?}{f}}");
        // Identical patterns merge to themselves; pages add up.
        let p = pat("{r{h{#text}}{+}{?}}");
        let q = p.merge(&p);
        assert_eq!(q.to_bracket(), "{r{h{#text}}{+}}");
        assert_eq!(q.pages(), 2);
    }

    #[test]
    fn post_processing_folds_optional_runs_into_neighbours() {
        let f = |s: &str| fold(pat(s)).to_bracket();
        // `·`/`+` then `?`s: one `+`.
        assert_eq!(f("{r{·}{?}{?}}"), "{r{+}}");
        assert_eq!(f("{r{+}{?}}"), "{r{+}}");
        // `?` or `*` then `?`s: one `*`.
        assert_eq!(f("{r{*}{?}{?}}"), "{r{*}}");
        assert_eq!(f("{r{?}{?}}"), "{r{*}}");
        // `?`s before a `+`/`*`.
        assert_eq!(f("{r{?}{+}}"), "{r{+}}");
        assert_eq!(f("{r{?}{?}{*}}"), "{r{*}}");
        // A lone `?` stays; so do two `·`.
        assert_eq!(f("{r{a}{?}{b}}"), "{r{a}{?}{b}}");
        assert_eq!(f("{r{·}{·}}"), "{r{·}{·}}");
        // Up to 3 non-wildcard nodes between: folded, with them.
        assert_eq!(f("{r{·}{a}{b{c}}{?}{z}}"), "{r{+}{z}}");
        // 4 nodes between: two separate chains.
        assert_eq!(f("{r{·}{a{b}{c}{d}}{?}{z}}"), "{r{·}{a{b}{c}{d}}{?}{z}}");
        // Runs are folded at every level.
        assert_eq!(f("{r{d{?}{?}}{e{+}{?}}}"), "{r{d{*}}{e{+}}}");
        // Then a following `·` stays its own.
        assert_eq!(f("{r{·}{?}{·}}"), "{r{+}{·}}");
    }

    #[test]
    fn patterns_round_trip_through_serde_and_reject_bad_shapes() {
        let p = pat("{body{h1{#text}}{div{p{#text}}{*}}{?}}");
        let json = serde_json::to_string(&p).unwrap_or_default();
        let back: Pattern = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(back, p);
        assert_eq!(back.to_bracket(), "{body{h1{#text}}{div{p{#text}}{*}}{?}}");
        assert!(json.contains("\"kleene\""));
        let bad = r#"{"pages":1,"nodes":[{"label":{"element":"a"},"depth":0},{"label":{"element":"b"},"depth":2}]}"#;
        assert!(serde_json::from_str::<Pattern>(bad).is_err());
        let wild = r#"{"pages":1,"nodes":[{"label":{"wildcard":"plus"},"depth":0},{"label":{"element":"b"},"depth":1}]}"#;
        let err = serde_json::from_str::<Pattern>(wild)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("wildcard at node 0 has children")));
    }

    #[test]
    fn strict_matching_needs_every_node_explained() {
        let p = pat("{body{h1{#text}}{div{p{#text}}{+}}{?}}");
        let page = |html: &str| PageTree::from_dom(&Dom::parse(html));
        let fits = page("<body><h1>T</h1><div><p>a</p><p>b</p><p>c</p></div></body>");
        let m = p
            .match_with(&fits, MatchCosts::STRICT)
            .unwrap_or_else(|| panic!("no match"));
        assert_eq!(m.cost, 0);
        assert!(m.fits());
        // The `+` took the second and third paragraph; `?` nothing.
        let plus = m
            .captures
            .iter()
            .find(|c| c.wildcard == Some(Wildcard::Plus))
            .unwrap_or_else(|| panic!("no + capture"));
        assert_eq!(plus.nodes, [6, 8]);
        let opt = m
            .captures
            .iter()
            .find(|c| c.wildcard == Some(Wildcard::Optional))
            .unwrap_or_else(|| panic!("no ? capture"));
        assert!(opt.nodes.is_empty());
        // A paragraph before the heading is explained by nothing.
        let drift = page("<body><p>x</p><h1>T</h1><div><p>a</p></div></body>");
        assert!(p.match_with(&drift, MatchCosts::STRICT).is_none());
        // Soft costs: one node pair (p and its text) out of place.
        let soft = p.match_page(&drift).unwrap_or_else(|| panic!("soft"));
        assert_eq!(soft.cost, 2);
        assert!(!soft.fits());
    }

    // ---- news-like pages ----

    const FILLER: [&str; 12] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima",
    ];

    /// A paragraph of `n` words about `topic`.
    fn para(topic: &str, k: usize, n: usize) -> String {
        let mut s = format!("The {topic} story continues");
        for i in 0..n.saturating_sub(s.split_whitespace().count()) {
            s.push(' ');
            s.push_str(FILLER[(i + k) % FILLER.len()]);
        }
        s
    }

    /// One news page of the site's layout.
    fn news(title: &str, topic: &str, byline: &str, paragraphs: usize) -> String {
        let body: String = (0..paragraphs)
            .map(|k| format!("<p>{}.</p>", para(topic, k, 40)))
            .collect();
        format!(
            "<html><head><title>{title}</title></head><body>\
             <div class=nav><a href=/>Home</a><a href=/w>World</a><a href=/s>Sport</a></div>\
             <div class=main><h1>{title}</h1><div class=meta>By {byline}</div>\
             <div class=content>{body}</div></div>\
             <div class=footer><p>Copyright News Ltd</p></div></body></html>"
        )
    }

    fn learn(pages: &[String]) -> Pattern {
        let doms: Vec<Dom> = pages.iter().map(|h| Dom::parse(h)).collect();
        let trees: Vec<PageTree> = doms.iter().map(PageTree::from_dom).collect();
        let refs: Vec<(&Dom, &PageTree)> = doms.iter().zip(&trees).collect();
        Pattern::learn(&refs).unwrap_or_else(|| panic!("no pages"))
    }

    fn training() -> Vec<String> {
        vec![
            news(
                "Harbour bridge reopens after repairs",
                "harbour bridge",
                "Ann Lee",
                3,
            ),
            news(
                "Council votes on new library budget",
                "library budget",
                "Bo Chan",
                5,
            ),
            news(
                "Storm floods coastal road overnight",
                "coastal road",
                "Cy Diaz",
                4,
            ),
            news(
                "Local team wins regional final",
                "regional final",
                "Di Eng",
                2,
            ),
        ]
    }

    #[test]
    fn learned_pattern_has_repeat_wildcards_where_paragraph_counts_vary() {
        let p = learn(&training());
        assert_eq!(p.pages(), 4);
        // Navigation, heading and footer stay literal; the paragraphs
        // beyond the shortest page's two fold into one `*`.
        assert_eq!(
            p.to_bracket(),
            "{body{div{a{#text}}{a{#text}}{a{#text}}}\
             {div{h1{#text}}{div{#text}}{div{p{#text}}{p{#text}}{*}}}{div{p{#text}}}}"
        );
        // Boilerplate text is remembered as constant, the title is data.
        let texts: Vec<bool> = p
            .nodes()
            .iter()
            .filter_map(|n| match &n.label {
                PatLabel::Text { constant } => Some(constant.is_some()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, [true, true, true, false, false, false, false, true]);
    }

    #[test]
    fn matching_a_new_page_of_the_layout_captures_title_and_body() {
        let p = learn(&training());
        let html = news(
            "Harbour ferry timetable changes for summer",
            "ferry timetable",
            "Ed Fox",
            7,
        );
        let dom = Dom::parse(&html);
        let tree = PageTree::from_dom(&dom);
        let m = p.match_page(&tree).unwrap_or_else(|| panic!("no match"));
        assert!(m.fits(), "cost {}", m.cost);
        assert_eq!(m.similarity, 1.0);
        let kleene = m
            .captures
            .iter()
            .find(|c| c.wildcard == Some(Wildcard::Kleene))
            .unwrap_or_else(|| panic!("no *"));
        assert_eq!(kleene.nodes.len(), 5);
        let passages = p.captured_text(&dom, &tree, &m);
        // Title, byline, two literal paragraphs and the `*` run; the
        // navigation and footer are boilerplate and give no passage.
        assert_eq!(passages.len(), 5);
        assert_eq!(passages[4].words, 5 * 40);
        let l = p.label(&passages);
        assert_eq!(l.body, Some(4));
        assert_eq!(l.body_region, [2, 3, 4]);
        assert_eq!(l.title, Some(0));
        let e = p
            .extract(&dom, &tree)
            .unwrap_or_else(|| panic!("no extraction"));
        assert_eq!(
            e.title.as_deref(),
            Some("Harbour ferry timetable changes for summer")
        );
        let body = e.body.unwrap_or_default();
        assert_eq!(body.split("\n\n").count(), 7);
        assert!(body.starts_with("The ferry timetable story continues alpha"));
        assert!(!body.contains("Copyright") && !body.contains("Ed Fox"));
    }

    #[test]
    fn a_page_of_another_layout_fails_or_scores_badly() {
        let p = learn(&training());
        let list = "<html><body><table><tr><td><a href=1>One</a></td><td>1</td></tr>\
                    <tr><td><a href=2>Two</a></td><td>2</td></tr></table>\
                    <ul><li>x</li><li>y</li></ul></body></html>";
        let tree = PageTree::from_dom(&Dom::parse(list));
        assert!(p.match_with(&tree, MatchCosts::STRICT).is_none());
        let m = p.match_page(&tree).unwrap_or_else(|| panic!("soft match"));
        assert!(!m.fits());
        assert!(m.similarity < 0.3, "similarity {}", m.similarity);
        // A page of the layout with its navigation moved below the footer
        // drifts a little: it scores between the two.
        let moved = news("Harbour ferry timetable changes", "ferry", "Ed Fox", 3).replace(
            "<div class=nav><a href=/>Home</a><a href=/w>World</a><a href=/s>Sport</a></div>",
            "",
        );
        let tree = PageTree::from_dom(&Dom::parse(&moved));
        let m = p.match_page(&tree).unwrap_or_else(|| panic!("soft match"));
        assert_eq!(m.cost, 7);
        assert!(m.similarity > 0.8 && m.similarity < 1.0);
    }

    #[test]
    fn labelling_needs_a_long_passage_and_a_related_title() {
        // body0 h1 1 #text2 div3 #text4 div5 p6 #text7 *8 div9 a10..g16 #text17
        let p =
            pat("{body{h1{#text}}{div{#text}}{div{p{#text}}{*}}{div{a}{b}{c}{d}{e}{f}{g}{#text}}}");
        let passage = |text: String, position: usize| Passage {
            words: text.split_whitespace().count(),
            text,
            position,
            nodes: Vec::new(),
        };
        let long = para("harbour bridge", 0, 120);
        let ps = vec![
            passage("Harbour bridge reopens".into(), 2),
            passage("unrelated words here".into(), 4),
            passage(para("harbour bridge", 1, 30), 7),
            passage(long.clone(), 8),
            // As many words shared as the title, but farther away.
            passage("Harbour bridge news".into(), 17),
        ];
        let l = p.label(&ps);
        assert_eq!(l.body, Some(3));
        assert_eq!(l.body_region, [2, 3]);
        assert_eq!(l.title, Some(0));
        // No passage above 100 words: no body, no title.
        let short = vec![ps[0].clone(), passage(para("x", 0, 100), 8)];
        assert_eq!(p.label(&short), Labelling::default());
    }
}
