//! Completeness and consistency of a diff: the changes, applied to OLD's
//! label tree, give exactly NEW's branches (issue 3's property).
//!
//! The label tree is rebuilt here from `branch_paths` (labels with the
//! `xpath` id behind each), independently of the diff's own structures.
//! Each change is applied where its ids and labels say:
//! - `update`: the node at depth `context.len()` with id `old_xpath` and
//!   label `old`, under labels `context`, is relabelled `new` (for a column
//!   header renamed over `size` rows: every header cell of that table
//!   labelled `old` under `context`, and there must be `size` of them);
//! - `delete`: that node goes with everything below it (`size` values);
//! - `insert`: NEW's node with id `new_xpath` is copied, with everything
//!   below it, under the path `context`;
//! - `move`: the leaf goes from `context` to `new_context`.
//!
//! Then the multisets of root-to-leaf label paths must be equal. A change
//! that matches no node, or the wrong number, is an inconsistency.

use semclip::diff::{BranchPath, Change, ChangeKind, branch_paths};
use semclip::hierarchy::Hierarchy;

#[derive(Debug, Clone)]
struct Node {
    text: String,
    id: String,
    children: Vec<Node>,
}

impl Node {
    fn leaves(&self) -> usize {
        if self.children.is_empty() {
            1
        } else {
            self.children.iter().map(Node::leaves).sum()
        }
    }

    fn paths(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        prefix.push(self.text.clone());
        if self.children.is_empty() {
            out.push(prefix.clone());
        }
        for c in &self.children {
            c.paths(prefix, out);
        }
        prefix.pop();
    }
}

/// The sentinel above the page's root, so that the root itself can be
/// deleted and inserted (a changed title over changed content).
const TOP: &str = "\u{0}";

fn tree(h: &Hierarchy) -> Node {
    let paths: Vec<BranchPath> = branch_paths(h);
    let mut top = Node {
        text: TOP.into(),
        id: String::new(),
        children: vec![Node {
            text: h.title.clone().unwrap_or_default(),
            id: "/page".into(),
            children: Vec::new(),
        }],
    };
    let root = &mut top.children[0];
    for p in &paths {
        let mut at = &mut *root;
        for (text, id) in p.labels.iter().zip(&p.ids).skip(1) {
            let k = match at
                .children
                .iter()
                .position(|c| &c.text == text && &c.id == id)
            {
                Some(k) => k,
                None => {
                    at.children.push(Node {
                        text: text.clone(),
                        id: id.clone(),
                        children: Vec::new(),
                    });
                    at.children.len() - 1
                }
            };
            at = &mut at.children[k];
        }
    }
    top
}

/// A change's context, from the sentinel down.
fn under_top(context: &[String]) -> Vec<String> {
    std::iter::once(TOP.to_string())
        .chain(context.iter().cloned())
        .collect()
}

/// Index paths (child positions from the root) of the nodes at `depth`
/// under labels `context` that satisfy `pick`.
fn find(root: &Node, context: &[String], pick: &dyn Fn(&Node) -> bool) -> Vec<Vec<usize>> {
    fn walk(
        n: &Node,
        depth: usize,
        context: &[String],
        pick: &dyn Fn(&Node) -> bool,
        path: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if depth == context.len() {
            if pick(n) {
                out.push(path.clone());
            }
            return;
        }
        if n.text != context[depth] {
            return;
        }
        for (k, c) in n.children.iter().enumerate() {
            path.push(k);
            walk(c, depth + 1, context, pick, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(root, 0, context, pick, &mut Vec::new(), &mut out);
    out
}

fn at<'a>(root: &'a mut Node, path: &[usize]) -> &'a mut Node {
    path.iter().fold(root, |n, &k| &mut n.children[k])
}

/// Removes the node at `path`, returning it. Labels above it that came
/// from the same hierarchy node (a link's text above its target, a
/// column header above the value) and hold nothing else go with it.
fn remove(root: &mut Node, path: &[usize]) -> Node {
    let (last, parent) = path.split_last().expect("never the sentinel");
    let gone = at(root, parent).children.remove(*last);
    let mut up = parent.to_vec();
    while let Some((&k, above)) = up.split_last() {
        let p = at(root, &up);
        if !(p.children.is_empty() && p.id == gone.id) {
            break;
        }
        at(root, above).children.remove(k);
        up.pop();
    }
    gone
}

/// The node at labels `context`, to attach to: it must exist (a new
/// heading is a change of its own, applied before what moves under it).
fn ensure<'a>(root: &'a mut Node, context: &[String]) -> Result<&'a mut Node, String> {
    if context.first() != Some(&root.text) {
        return Err(format!("context {context:?} does not start at the root"));
    }
    let mut n = root;
    for text in &context[1..] {
        let Some(k) = n.children.iter().position(|c| &c.text == text) else {
            return Err(format!("no node {text:?} on the path {context:?}"));
        };
        n = &mut n.children[k];
    }
    Ok(n)
}

/// For a column header's cell id `…/table[1]/row[…]/cell[…]`: the table's
/// part, to tell which header cells belong to one table.
fn table_of(id: &str) -> Option<&str> {
    let row = id.rfind("/row[")?;
    (id.rfind("/cell[")? > row).then(|| &id[..row])
}

/// The one node under labels `context` with label `text` and id `xpath`.
fn node_at(
    root: &Node,
    context: &[String],
    text: &str,
    xpath: Option<&String>,
    c: &Change,
) -> Result<Vec<usize>, String> {
    let found = find(root, context, &|n| n.text == text && Some(&n.id) == xpath);
    match found.as_slice() {
        [p] => Ok(p.clone()),
        _ => Err(format!("{} nodes match {c:?}", found.len())),
    }
}

/// Applies `changes` to OLD and compares with NEW; the error says what
/// does not hold.
pub fn check(old: &Hierarchy, new: &Hierarchy, changes: &[Change]) -> Result<(), String> {
    let (mut cur, target) = (tree(old), tree(new));
    // Relabellings first (later contexts are in NEW's terms), then new
    // bare labels (moves and inserts may go under them), then the rest.
    let bare_insert = |c: &Change| c.kind == ChangeKind::Insert && c.size == Some(0);
    let ordered = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Update)
        .chain(changes.iter().filter(|c| bare_insert(c)))
        .chain(
            changes
                .iter()
                .filter(|c| c.kind != ChangeKind::Update && !bare_insert(c)),
        );
    for c in ordered {
        let context = under_top(&c.context);
        match c.kind {
            ChangeKind::Update => {
                let old_text = c.old.clone().unwrap_or_default();
                let new_text = c.new.clone().unwrap_or_default();
                let found = match c.size {
                    Some(n) if n > 1 => {
                        // A column header over `n` rows, each at its own
                        // depth below `context`.
                        let table = c.old_xpath.as_deref().and_then(table_of);
                        let mut all = Vec::new();
                        collect_headers(
                            &cur,
                            &context,
                            &old_text,
                            table,
                            &mut Vec::new(),
                            &mut all,
                        );
                        if all.len() != n {
                            return Err(format!("{} header cells for {n} in {c:?}", all.len()));
                        }
                        all
                    }
                    _ => vec![node_at(&cur, &context, &old_text, c.old_xpath.as_ref(), c)?],
                };
                for p in found {
                    at(&mut cur, &p).text = new_text.clone();
                }
            }
            ChangeKind::Delete => {
                let old_text = c.old.clone().unwrap_or_default();
                let p = node_at(&cur, &context, &old_text, c.old_xpath.as_ref(), c)?;
                if c.size == Some(0) && !at(&mut cur, &p).children.is_empty() {
                    return Err(format!("a bare label deleted with values under it: {c:?}"));
                }
                let gone = remove(&mut cur, &p);
                if let Some(n) = c.size.filter(|&n| n > 0 && gone.leaves() != n) {
                    return Err(format!(
                        "{} values deleted, size says {n}: {c:?}",
                        gone.leaves()
                    ));
                }
            }
            ChangeKind::Insert => {
                let new_text = c.new.clone().unwrap_or_default();
                let p = node_at(&target, &context, &new_text, c.new_xpath.as_ref(), c)?;
                let mut src = &target;
                for &k in &p {
                    src = &src.children[k];
                }
                if let Some(n) = c.size.filter(|&n| n > 0 && src.leaves() != n) {
                    return Err(format!(
                        "{} values inserted, size says {n}: {c:?}",
                        src.leaves()
                    ));
                }
                let mut node = src.clone();
                if c.size == Some(0) {
                    // A bare label: what lies below comes with other changes.
                    node.children.clear();
                }
                ensure(&mut cur, &context)?.children.push(node);
            }
            ChangeKind::Move => {
                let old_text = c.old.clone().unwrap_or_default();
                let p = node_at(&cur, &context, &old_text, c.old_xpath.as_ref(), c)?;
                if !at(&mut cur, &p).children.is_empty() {
                    return Err(format!("a move of a value that holds others: {c:?}"));
                }
                let node = remove(&mut cur, &p);
                let to = under_top(c.new_context.as_deref().unwrap_or_default());
                // Labels of the moved value's own node (a link's text above
                // its target) move with it: the trailing part of the new
                // context whose ids are the new node's.
                let q = node_at(&target, &to, &old_text, c.new_xpath.as_ref(), c)?;
                let mut chain = Vec::new();
                let mut src = &target;
                for &k in &q[..q.len() - 1] {
                    src = &src.children[k];
                    chain.push((src.text.clone(), src.id.clone()));
                }
                let own = chain
                    .iter()
                    .rev()
                    .take_while(|(_, id)| Some(id) == c.new_xpath.as_ref())
                    .count();
                let mut at_node = ensure(&mut cur, &to[..to.len() - own])?;
                for (text, id) in &chain[chain.len() - own..] {
                    at_node.children.push(Node {
                        text: text.clone(),
                        id: id.clone(),
                        children: Vec::new(),
                    });
                    let last = at_node.children.len() - 1;
                    at_node = &mut at_node.children[last];
                }
                at_node.children.push(node);
            }
        }
    }
    // A page root holding nothing is no branch (an empty page has none).
    let branches = |t: &Node| {
        let mut out = Vec::new();
        for root in t.children.iter().filter(|r| !r.children.is_empty()) {
            root.paths(&mut vec![TOP.to_string()], &mut out);
        }
        out
    };
    let mut got = branches(&cur);
    let mut want = branches(&target);
    got.sort();
    want.sort();
    if got == want {
        return Ok(());
    }
    let extra: Vec<_> = got.iter().filter(|p| !want.contains(p)).take(5).collect();
    let missing: Vec<_> = want.iter().filter(|p| !got.contains(p)).take(5).collect();
    Err(format!(
        "applying {} changes does not give NEW: {} branches vs {}; extra {extra:?}, missing {missing:?}",
        changes.len(),
        got.len(),
        want.len()
    ))
}

/// Header cells labelled `text` at or below labels `context`, in `table`:
/// nodes whose id is a cell of that table and whose child carries the same
/// id (the header label above the cell's value).
fn collect_headers(
    n: &Node,
    context: &[String],
    text: &str,
    table: Option<&str>,
    path: &mut Vec<usize>,
    out: &mut Vec<Vec<usize>>,
) {
    if let Some((first, rest)) = context.split_first() {
        if &n.text != first {
            return;
        }
        for (k, c) in n.children.iter().enumerate() {
            path.push(k);
            collect_headers(c, rest, text, table, path, out);
            path.pop();
        }
        return;
    }
    if n.text == text
        && table.is_some()
        && table_of(&n.id) == table
        && n.children.iter().any(|c| c.id == n.id)
    {
        out.push(path.clone());
        return;
    }
    for (k, c) in n.children.iter().enumerate() {
        path.push(k);
        collect_headers(c, context, text, table, path, out);
        path.pop();
    }
}
