//! The simplified page tree that every structural measure works on
//! (docs/algorithms.md, "Simplify").
//!
//! From the parsed [`Dom`]: the subtree of `<body>`, without scripts,
//! styles, `<link>`, `<noscript>`, `<template>`, comments and
//! whitespace-only text; formatting elements (`<b>`, `<i>`, `<span>`,
//! `<font>` ...) are dropped and their content lifted into their parent.
//! What is left is stored in pre-order in one `Vec`, so a subtree is the
//! contiguous run `i..end` and walking it needs no recursion.

use html5ever::{LocalName, local_name};

use crate::page::dom::{Dom, NodeData, NodeId};

/// Deepest node kept (deeper content is dropped from the structure; the
/// DOM already caps nesting at [`crate::page::dom::MAX_PARSE_DEPTH`]).
pub const MAX_TREE_DEPTH: u32 = 256;

/// One node of a [`PageTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PNode {
    /// The element's local name, or `#text` for a text node.
    pub tag: LocalName,
    /// Depth below the root (the root is 0).
    pub depth: u32,
    /// Pre-order index of the parent (`None` for the root).
    pub parent: Option<u32>,
    /// One past the last pre-order index of this node's subtree.
    pub end: u32,
    /// The DOM node it came from (for a text node: the DOM text node).
    pub dom: NodeId,
}

impl PNode {
    /// True for a text node.
    pub fn is_text(&self) -> bool {
        &*self.tag == TEXT
    }

    /// Number of nodes in the subtree, itself included.
    pub fn size(&self, index: usize) -> usize {
        self.end as usize - index
    }
}

/// The label of text nodes.
pub const TEXT: &str = "#text";

/// A page's simplified tree, in pre-order (`nodes[0]` is the root,
/// normally `<body>`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageTree {
    /// The nodes in pre-order.
    pub nodes: Vec<PNode>,
}

impl PageTree {
    /// Builds the simplified tree of `dom`, rooted at `<body>` (or the
    /// document element when there is no body). Empty for an empty DOM.
    pub fn from_dom(dom: &Dom) -> PageTree {
        let mut tree = PageTree { nodes: Vec::new() };
        if let Some(root) = PageTree::root(dom) {
            tree.push_subtree(dom, root);
        }
        tree
    }

    /// The DOM node the simplified tree is rooted at: `<body>`, or the
    /// document element when there is no body.
    pub fn root(dom: &Dom) -> Option<NodeId> {
        dom.body().or_else(|| {
            dom.children(crate::page::dom::DOCUMENT)
                .find(|&c| dom.element(c).is_some())
        })
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the tree has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Pre-order indices of the children of node `i`.
    pub fn children(&self, i: usize) -> TreeChildren<'_> {
        TreeChildren {
            tree: self,
            next: i + 1,
            end: self.nodes.get(i).map_or(0, |n| n.end as usize),
        }
    }

    fn push_subtree(&mut self, dom: &Dom, root: NodeId) {
        // A node's `end` is fixed when the walk leaves its subtree: every
        // node visited after it with a larger depth belongs to it.
        let mut open: Vec<usize> = Vec::new();
        // `#text` is not one of html5ever's static atoms: made once, each
        // text node takes a reference instead of a lookup in the atom set.
        let text = LocalName::from(TEXT);
        walk(dom, root, None, true, |n, tag, parent, depth| {
            while let Some(&top) = open.last() {
                if self.nodes[top].depth >= depth {
                    self.nodes[top].end = self.nodes.len() as u32;
                    open.pop();
                } else {
                    break;
                }
            }
            let index = self.nodes.len();
            self.nodes.push(PNode {
                tag: tag.map_or_else(|| text.clone(), LocalName::clone),
                depth,
                parent,
                end: index as u32 + 1,
                dom: n,
            });
            if tag.is_some() {
                open.push(index);
            }
            Some(index as u32)
        });
        let len = self.nodes.len() as u32;
        for i in open {
            self.nodes[i].end = len;
        }
    }
}

/// Walks the simplified tree of the subtree of `root` in pre-order
/// without building it (the rules in the module docs): `visit(node, tag,
/// parent, depth)` sees each kept node (text nodes only with `texts`),
/// `tag` `None` for a text node, with
/// the value its parent's visit returned (`top` for the root), and returns
/// the value its children will see. Elements deeper than
/// [`MAX_TREE_DEPTH`] are kept without their content.
pub fn walk<'d, T: Copy>(
    dom: &'d Dom,
    root: NodeId,
    top: T,
    texts: bool,
    mut visit: impl FnMut(NodeId, Option<&'d LocalName>, T, u32) -> T,
) {
    // (dom node, parent's value, depth, whether the node has a parent);
    // children pushed in reverse so they pop in document order.
    let mut stack: Vec<(NodeId, T, u32, bool)> = vec![(root, top, 0, false)];
    while let Some((n, parent, depth, below_root)) = stack.pop() {
        match &dom.node(n).data {
            NodeData::Text(t) if texts && !t.trim().is_empty() => {
                visit(n, None, parent, depth);
            }
            NodeData::Element(e) => {
                if is_dropped(&e.name) {
                    continue;
                }
                let before = stack.len();
                if is_formatting(&e.name) && below_root {
                    // Lift the children into the parent, same depth.
                    stack.extend(dom.children(n).map(|c| (c, parent, depth, true)));
                } else {
                    let mine = visit(n, Some(&e.name), parent, depth);
                    if depth < MAX_TREE_DEPTH {
                        stack.extend(dom.children(n).map(|c| (c, mine, depth + 1, true)));
                    }
                }
                stack[before..].reverse();
            }
            _ => {}
        }
    }
}

/// Iterator over a node's children in a [`PageTree`].
pub struct TreeChildren<'a> {
    tree: &'a PageTree,
    next: usize,
    end: usize,
}

impl Iterator for TreeChildren<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.next >= self.end {
            return None;
        }
        let cur = self.next;
        self.next = self.tree.nodes[cur].end as usize;
        Some(cur)
    }
}

/// Elements dropped with their content (names compared as atoms: one
/// integer each, where a string match would read the name first).
fn is_dropped(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("script")
            | local_name!("style")
            | local_name!("link")
            | local_name!("noscript")
            | local_name!("template")
            | local_name!("meta")
            | local_name!("iframe")
    )
}

/// Formatting elements dropped with their content kept.
pub fn is_formatting(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("b")
            | local_name!("i")
            | local_name!("u")
            | local_name!("s")
            | local_name!("em")
            | local_name!("strong")
            | local_name!("font")
            | local_name!("span")
            | local_name!("small")
            | local_name!("big")
            | local_name!("sup")
            | local_name!("sub")
            | local_name!("tt")
            | local_name!("strike")
            | local_name!("mark")
            | local_name!("abbr")
            | local_name!("cite")
            | local_name!("code")
            | local_name!("kbd")
            | local_name!("var")
            | local_name!("wbr")
            | local_name!("br")
            | local_name!("nobr")
            | local_name!("center")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(t: &PageTree) -> Vec<String> {
        t.nodes
            .iter()
            .map(|n| format!("{}{}", n.tag, n.depth))
            .collect()
    }

    #[test]
    fn simplifies_and_orders_nodes_pre_order_with_subtree_ends() {
        let dom = Dom::parse(
            "<body><div><a href=x>one <b>bold</b></a><script>x</script><p>two</p></div>\
             <!-- c --><div>  </div></body>",
        );
        let t = PageTree::from_dom(&dom);
        assert_eq!(
            shape(&t),
            [
                "body0", "div1", "a2", "#text3", "#text3", "p2", "#text3", "div1"
            ]
        );
        assert_eq!(t.nodes[0].end as usize, t.len());
        assert_eq!(t.nodes[1].end, 7);
        assert_eq!(t.nodes[2].end, 5);
        assert_eq!(t.children(0).collect::<Vec<_>>(), [1, 7]);
        assert_eq!(t.children(1).collect::<Vec<_>>(), [2, 5]);
        assert_eq!(t.nodes[5].parent, Some(1));
        assert!(t.nodes[3].is_text());
    }

    #[test]
    fn empty_page_gives_a_body_only() {
        let t = PageTree::from_dom(&Dom::parse(""));
        assert_eq!(shape(&t), ["body0"]);
    }
}
