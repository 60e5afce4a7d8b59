//! Tables: a `<table>` (or an ARIA `role="table"`/`grid` element) in, a
//! pseudo-table and its hierarchy `caption -> row key -> column header ->
//! value` out (docs/algorithms.md, "Tables").
//!
//! Spans are resolved first, exactly as "Tables" says: `colspan` replicates a
//! cell's content into the columns it covers (TH or TD); `rowspan` on a TD
//! replicates it into the rows below; `rowspan` on a TH in a header row is
//! written once, into the last row it covers, so stacked header rows
//! concatenate without repeats. A rowspan that runs past the last row adds
//! rows (the rvest grids in the corpus expect this). Then:
//! - header rows are the leading rows made only of TH (or in THEAD); with no
//!   TH at all, the first row is the header unless it reads as data (it
//!   holds a number outside the key column, or nested structure);
//! - the row key is the column that names the rows, found by
//!   [`key::choose`] (an entity name, not a rank, an ordinal, a repeated
//!   year, a number, a date or a picture; the first column when it
//!   already is one); keys that repeat get ` #n` and an `ordinal`
//!   attribute, so every row stays addressable; a row that is one cell
//!   spanning the whole width is a label row with no cells; the first
//!   leading one that names something (not pictures only) labels the
//!   table when it has no caption, the others stay as label rows, so that
//!   none of their text is lost and the label stays one name
//!   ([`label`], navigation chrome left out by [`clean_label`]);
//! - side-by-side blocks (`Rank | Name | Pop. | Rank | Name | Pop.`) are
//!   read block after block ([`key::blocks`]);
//! - when every body row has row headers (TH) in several leading columns,
//!   the key is hierarchical: those columns' texts joined by
//!   [`KEY_SEPARATOR`] (`North / New York`), one row per body row. This was
//!   chosen over nesting rows inside rows: the vocabulary stays as it is,
//!   every value keeps the three-step path `row -> cell -> value`, and a
//!   diff reads `North / New York / Sales: 100 -> 110`. Tables keyed by one
//!   column (all the others) keep their keys and ids;
//! - the key column's header is the table's `keycol` (`Region / City` for
//!   a hierarchical key). That is where the key column's header lives
//!   (`//table[@keycol='Name']/row[@key='Alice']` finds `Name -> Alice`); it
//!   is not repeated as a cell of every row, which would double every key
//!   and break the diff's detection of a renamed row;
//! - column headers are the header rows' texts top to bottom, empty parts
//!   skipped; repeated headers get ` #n`. A header that heads no value in
//!   any row (a column of images without `alt`, a header row wider than
//!   the body) is still lost: giving such rows empty cells made the diff
//!   read the header as each row's value (a known gap, issue 17);
//! - tables used for layout are not data: `role="presentation"`, one row,
//!   or (without any TH, caption or THEAD) one column, a cell holding a
//!   heading or more than [`LAYOUT_CELL_WORDS`] words, or a first row
//!   holding nested tables or lists. Their cells are read as blocks.
//!
//! Spans are capped at [`MAX_SPAN`] and a table at [`MAX_SLOTS`] grid slots;
//! what bounds a hostile page is its [`Budget`]: every grid slot of every
//! table of the page, and every copy a span makes of a cell's content, is
//! charged before it is made (many small tables add up, a per-table cap
//! alone does not bound the page).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::key::{KEY_SEPARATOR, make_unique};
use super::{Builder, HNode, Kind, TagClass, key, text_content, text_leaf, weigh, wrap_node};
use crate::hierarchy::number::parse_number;
use crate::hierarchy::text::clean_label;
use crate::hierarchy::text::normalize;
use crate::page::budget::Budget;
use crate::page::dom::{NodeData, NodeId};

/// Largest `colspan`/`rowspan` honoured.
pub const MAX_SPAN: usize = 1000;
/// Largest number of grid slots in one table; cells beyond are not spanned.
pub const MAX_SLOTS: usize = 1 << 21;
/// A cell with more words than this (and no TH in the table) marks layout.
pub const LAYOUT_CELL_WORDS: usize = 80;

/// What a table element is.
pub enum Shape {
    /// A data table, with its rows gathered.
    Data(TableSpec),
    /// A layout table: read its cells as blocks.
    Layout,
}

/// A table's rows and caption as found in the DOM.
pub struct TableSpec {
    label: Option<String>,
    rows: Vec<RowSpec>,
}

struct RowSpec {
    cells: Vec<CellSpec>,
    head: bool,
}

struct CellSpec {
    node: NodeId,
    header: bool,
    colspan: usize,
    rowspan: usize,
}

/// True when a cell's only content is pictures: no text, one image at
/// least (its text is then the images' `alt`, which names the picture,
/// not the row).
fn picture_only(b: &Builder, cell: NodeId) -> bool {
    let mut image = false;
    let mut text = false;
    walk(b, cell, |n| {
        match &b.dom.node(n).data {
            NodeData::Text(t) => text |= !t.trim().is_empty(),
            NodeData::Element(_) => image |= b.class(n) == TagClass::Image,
            _ => {}
        }
        !text
    });
    image && !text
}

/// A grid slot: which cell covers it, and whether it stays blank (the
/// non-last rows of a header TH's rowspan).
#[derive(Clone, Copy)]
struct Slot {
    cell: usize,
    blank: bool,
}

/// A resolved pseudo-table, for inspection and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PseudoTable {
    /// The caption, if any.
    pub caption: Option<String>,
    /// How many leading rows of `grid` are header rows.
    pub header_rows: usize,
    /// Every slot's text after span resolution (empty rows removed).
    pub grid: Vec<Vec<String>>,
}

fn is_html(b: &Builder, id: NodeId, name: &str) -> bool {
    b.dom
        .element(id)
        .is_some_and(|e| e.is_html() && &*e.name == name)
}

fn role(b: &Builder, id: NodeId) -> Option<String> {
    b.dom
        .element(id)
        .and_then(|e| e.attr("role"))
        .and_then(|r| r.split_ascii_whitespace().next())
        .map(str::to_ascii_lowercase)
}

/// Reads the span attribute `name` by the HTML rules for non-negative
/// integers: blank or junk is 1, `rowspan="0"` runs to the end (`0`).
fn span(b: &Builder, id: NodeId, name: &str) -> usize {
    let Some(v) = b.dom.element(id).and_then(|e| e.attr(name)) else {
        return 1;
    };
    let digits: String = v
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.parse::<usize>() {
        Ok(0) if name == "rowspan" => 0,
        Ok(0) | Err(_) => 1,
        Ok(n) => n.min(MAX_SPAN),
    }
}

/// Gathers rows and decides between data and layout.
pub(super) fn classify(b: &Builder, id: NodeId) -> Shape {
    let aria = !is_html(b, id, "table");
    if matches!(role(b, id).as_deref(), Some("presentation" | "none")) {
        return Shape::Layout;
    }
    let mut spec = TableSpec {
        label: None,
        rows: Vec::new(),
    };
    if aria {
        gather_aria_rows(b, id, &mut spec.rows, 0);
    } else {
        for child in b.dom.children(id) {
            if is_html(b, child, "caption") && spec.label.is_none() {
                spec.label = Some(normalize(&text_content(b.dom, child))).filter(|c| !c.is_empty());
            } else if is_html(b, child, "tr") {
                spec.rows.push(html_row(b, child, false));
            } else if ["thead", "tbody", "tfoot"]
                .iter()
                .any(|n| is_html(b, child, n))
            {
                let head = is_html(b, child, "thead");
                for tr in b.dom.children(child) {
                    if is_html(b, tr, "tr") {
                        spec.rows.push(html_row(b, tr, head));
                    }
                }
            }
        }
    }
    if spec.label.is_none() {
        spec.label = b
            .dom
            .element(id)
            .and_then(|e| e.attr("aria-label"))
            .map(normalize)
            .filter(|l| !l.is_empty());
    }
    spec.rows.retain(|r| !r.cells.is_empty());
    if spec.rows.len() <= 1 {
        return Shape::Layout;
    }
    let has_th = spec
        .rows
        .iter()
        .any(|r| r.head || r.cells.iter().any(|c| c.header));
    if has_th || spec.label.is_some() {
        return Shape::Data(spec);
    }
    let cols = spec
        .rows
        .iter()
        .map(|r| r.cells.iter().map(|c| c.colspan).sum::<usize>())
        .max()
        .unwrap_or(0);
    if cols <= 1 {
        return Shape::Layout;
    }
    let first_row_structured = spec.rows[0]
        .cells
        .iter()
        .any(|c| holds_structure(b, c.node));
    let layout_cell = spec
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .any(|c| layout_cell(b, c.node));
    if first_row_structured || layout_cell {
        Shape::Layout
    } else {
        Shape::Data(spec)
    }
}

fn html_row(b: &Builder, tr: NodeId, head: bool) -> RowSpec {
    let cells = b
        .dom
        .children(tr)
        .filter(|&c| is_html(b, c, "td") || is_html(b, c, "th"))
        .filter(|&c| b.class(c) != TagClass::Drop)
        .map(|c| CellSpec {
            node: c,
            header: is_html(b, c, "th")
                || matches!(role(b, c).as_deref(), Some("columnheader" | "rowheader")),
            colspan: span(b, c, "colspan"),
            rowspan: span(b, c, "rowspan"),
        })
        .collect();
    RowSpec { cells, head }
}

/// Rows of an ARIA table: `role="row"` descendants, not inside nested tables.
fn gather_aria_rows(b: &Builder, id: NodeId, rows: &mut Vec<RowSpec>, depth: usize) {
    if depth > 8 {
        return;
    }
    for child in b.dom.children(id) {
        if b.dom.element(child).is_none() || b.class(child) == TagClass::Drop {
            continue;
        }
        match role(b, child).as_deref() {
            Some("row") => {
                let mut cells = Vec::new();
                gather_aria_cells(b, child, &mut cells, 0);
                rows.push(RowSpec { cells, head: false });
            }
            Some("table" | "grid" | "treegrid") => {}
            _ if is_html(b, child, "table") => {}
            _ => gather_aria_rows(b, child, rows, depth + 1),
        }
    }
}

fn gather_aria_cells(b: &Builder, id: NodeId, cells: &mut Vec<CellSpec>, depth: usize) {
    if depth > 8 {
        return;
    }
    for child in b.dom.children(id) {
        if b.dom.element(child).is_none() || b.class(child) == TagClass::Drop {
            continue;
        }
        match role(b, child).as_deref() {
            Some(r @ ("cell" | "gridcell" | "rowheader" | "columnheader")) => {
                cells.push(CellSpec {
                    node: child,
                    header: matches!(r, "rowheader" | "columnheader"),
                    colspan: aria_span(b, child, "aria-colspan"),
                    rowspan: aria_span(b, child, "aria-rowspan"),
                })
            }
            Some("row" | "table" | "grid" | "treegrid") => {}
            _ => gather_aria_cells(b, child, cells, depth + 1),
        }
    }
}

fn aria_span(b: &Builder, id: NodeId, name: &str) -> usize {
    b.dom
        .element(id)
        .and_then(|e| e.attr(name))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .map_or(1, |n| n.min(MAX_SPAN))
}

/// Walks `id`'s subtree without entering nested tables or dropped content.
fn walk(b: &Builder, id: NodeId, mut visit: impl FnMut(NodeId) -> bool) {
    let mut stack: Vec<NodeId> = b.dom.children(id).collect();
    while let Some(n) = stack.pop() {
        if !visit(n) {
            return;
        }
        if b.dom.element(n).is_some() && !matches!(b.class(n), TagClass::Drop | TagClass::Table) {
            stack.extend(b.dom.children(n));
        }
    }
}

fn holds_structure(b: &Builder, cell: NodeId) -> bool {
    let mut found = false;
    walk(b, cell, |n| {
        if b.dom.element(n).is_some()
            && matches!(
                b.class(n),
                TagClass::Table | TagClass::List | TagClass::DefList
            )
        {
            found = true;
        }
        !found
    });
    found
}

fn layout_cell(b: &Builder, cell: NodeId) -> bool {
    let mut words = 0usize;
    let mut layout = false;
    walk(b, cell, |n| {
        match &b.dom.node(n).data {
            NodeData::Text(t) => words += t.split_whitespace().count(),
            NodeData::Element(_) => {
                if matches!(b.class(n), TagClass::Heading(_)) {
                    layout = true;
                }
            }
            _ => {}
        }
        layout |= words > LAYOUT_CELL_WORDS;
        !layout
    });
    layout
}

/// Places cells on the grid, resolving spans (docs/algorithms.md, "Tables"). Every slot is charged
/// to `budget`; once it is exceeded no further cell is placed.
fn place(rows: &[RowSpec], budget: &Budget) -> Vec<Vec<Option<Slot>>> {
    let mut grid: Vec<Vec<Option<Slot>>> = Vec::new();
    let mut slots = 0usize;
    let n_rows = rows.len();
    let mut index = 0usize;
    for (r, row) in rows.iter().enumerate() {
        if grid.len() <= r {
            grid.resize_with(r + 1, Vec::new);
        }
        let mut x = 0usize;
        for cell in &row.cells {
            while grid[r].get(x).is_some_and(Option::is_some) {
                x += 1;
            }
            let mut rowspan = if cell.rowspan == 0 {
                n_rows - r
            } else {
                cell.rowspan
            };
            let mut colspan = cell.colspan;
            if slots.saturating_add(rowspan.saturating_mul(colspan)) > MAX_SLOTS {
                rowspan = 1;
                colspan = 1;
            }
            if !budget.cells((rowspan * colspan) as u64) {
                return grid;
            }
            for dy in 0..rowspan {
                let y = r + dy;
                if grid.len() <= y {
                    grid.resize_with(y + 1, Vec::new);
                }
                let line = &mut grid[y];
                if line.len() < x + colspan {
                    line.resize(x + colspan, None);
                }
                for slot in &mut line[x..x + colspan] {
                    *slot = Some(Slot {
                        cell: index,
                        blank: cell.header && rowspan > 1 && dy + 1 != rowspan,
                    });
                }
            }
            slots += rowspan * colspan;
            x += colspan;
            index += 1;
        }
    }
    // Lines stay ragged (a missing slot is `None`): padding every line to
    // the widest would let one wide row times many rows exhaust memory.
    grid
}

/// A cell's built content.
struct Built {
    nodes: Vec<HNode>,
    /// True when the content is plain text: one text leaf, or nothing.
    is_plain: bool,
    header: bool,
    /// Its only content is pictures ([`picture_only`]).
    picture: bool,
}

impl Built {
    /// The content as plain text, when it is (`""` for an empty cell).
    /// Read before the content is moved into its row: the slots that read
    /// it (keys, headers) come before a cell's last use in the grid.
    fn plain(&self) -> Option<&str> {
        if !self.is_plain {
            return None;
        }
        Some(
            self.nodes
                .first()
                .and_then(|n| n.text.as_deref())
                .unwrap_or(""),
        )
    }

    /// Text for keys and headers: the plain text, or all own texts joined.
    fn text(&self) -> String {
        match self.plain() {
            Some(t) => t.to_owned(),
            None => {
                let mut parts = Vec::new();
                flat_texts(&self.nodes, &mut parts);
                parts.join(" ")
            }
        }
    }
}

fn flat_texts<'a>(nodes: &'a [HNode], out: &mut Vec<&'a str>) {
    for n in nodes {
        if let Some(t) = n.own_text().or(n.key.as_deref()) {
            out.push(t);
        }
        flat_texts(&n.children, out);
    }
}

struct Resolved {
    grid: Vec<Vec<Option<Slot>>>,
    cells: Vec<Built>,
    header_rows: usize,
    /// The cells of leading full-width title rows (removed from the
    /// grid), distinct by text, top to bottom.
    titles: Vec<usize>,
}

fn resolve(b: &mut Builder, spec: &TableSpec) -> Resolved {
    let mut cells = Vec::new();
    for row in &spec.rows {
        for c in &row.cells {
            // Most cells are a run of inline text (a number, a name, a
            // link): those skip the collector's items and assembly.
            let nodes = match b.inline_only(c.node) {
                Some(None) => Vec::new(),
                Some(Some((text, href))) => vec![text_leaf(text, href, b.style)],
                None => b.content(c.node),
            };
            let is_plain = match nodes.as_slice() {
                [] => true,
                [n] => n.is_text_leaf(),
                _ => false,
            };
            cells.push(Built {
                picture: is_plain && !nodes.is_empty() && picture_only(b, c.node),
                nodes,
                is_plain,
                header: c.header,
            });
        }
    }
    let mut grid = place(&spec.rows, b.budget);
    let slot_text_empty = |s: &Option<Slot>| {
        s.is_none_or(|s| s.blank || cells[s.cell].plain().is_some_and(str::is_empty))
    };
    // Row heads survive only if the row keeps cells; remember thead rows by cell.
    let head_cells: HashSet<usize> = {
        let mut set = HashSet::new();
        let mut i = 0;
        for row in &spec.rows {
            for _ in &row.cells {
                if row.head {
                    set.insert(i);
                }
                i += 1;
            }
        }
        set
    };
    grid.retain(|line| !line.iter().all(slot_text_empty));
    let width = grid.iter().map(Vec::len).max().unwrap_or(0);
    // Leading rows that are one cell across the whole width are titles
    // (an infobox's name, a "Population" banner), not column headers.
    // The first that names something labels the table; the others stay
    // as label rows ([`label`]), so none is lost.
    let mut titles: Vec<usize> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let usual = usual_width(&grid);
    while grid.len() > 1 && usual > 1 && single_cell_row(&grid[0], usual) {
        if let Some(Some(s)) = grid[0].first() {
            let t = cells[s.cell].text();
            if !t.is_empty() && seen.insert(t) {
                titles.push(s.cell);
            }
        }
        grid.remove(0);
    }
    let nonempty = |c: &Built| c.plain().is_none_or(|t| !t.is_empty());
    let any_th = cells.iter().any(|c| c.header && nonempty(c)) || !head_cells.is_empty();
    let is_header_row = |line: &Vec<Option<Slot>>| {
        let mut any = false;
        for s in line.iter().flatten() {
            let c = &cells[s.cell];
            if c.header || head_cells.contains(&s.cell) {
                any = true;
            } else if !(s.blank || c.plain().is_some_and(str::is_empty)) {
                return false;
            }
        }
        any
    };
    let mut header_rows = if any_th {
        grid.iter().take_while(|l| is_header_row(l)).count()
    } else {
        // Without TH the first row is the header (docs/algorithms.md, "Tables") unless it reads as
        // data: a number or nested structure outside the key column, or
        // fewer than two thirds of those slots filled.
        let first_is_header = grid.first().is_some_and(|line| {
            let rest: Vec<Option<&Built>> = (1..width)
                .map(|j| line.get(j).copied().flatten().map(|s| &cells[s.cell]))
                .collect();
            let filled = rest.iter().flatten().filter(|c| nonempty(c)).count();
            let data = rest.iter().flatten().any(|c| match c.plain() {
                None => true,
                Some(t) => parse_number(t, b.style).is_some(),
            });
            !data && filled * 3 >= rest.len() * 2 && filled > 0
        });
        usize::from(first_is_header)
    };
    header_rows = header_rows.min(grid.len().saturating_sub(1));
    Resolved {
        grid,
        cells,
        header_rows,
        titles,
    }
}

/// True when every slot of `line` is covered by one and the same cell and
/// it spans at least `width` columns.
fn single_cell_row(line: &[Option<Slot>], width: usize) -> bool {
    let first = line.first().copied().flatten().map(|s| s.cell);
    first.is_some() && line.len() >= width && line.iter().all(|s| s.map(|s| s.cell) == first)
}

/// The width most lines of `grid` have (the wider on a tie): what a title
/// or label row spans. Taken over the usual width rather than the widest
/// line, one row wider than the rest (an infobox line with an extra cell)
/// does not turn every title and label row into data and every header
/// with it.
fn usual_width(grid: &[Vec<Option<Slot>>]) -> usize {
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for line in grid {
        *counts.entry(line.len()).or_insert(0) += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(w, n)| (n, w))
        .map_or(0, |(w, _)| w)
}

/// Builds the hierarchy node of a data table; `None` when it holds no data.
#[expect(
    clippy::too_many_lines,
    reason = "one pass over the table's grid: title rows, header rows, key choice, rows, sharing the grid"
)]
pub(super) fn build(b: &mut Builder, spec: TableSpec) -> Option<HNode> {
    let Resolved {
        grid,
        cells,
        header_rows,
        titles,
    } = resolve(b, &spec);
    let width = grid.iter().map(Vec::len).max().unwrap_or(0);
    // Column headers: header rows top to bottom, blanks skipped.
    let headers: Vec<String> = (0..width)
        .map(|j| {
            let mut parts: Vec<String> = Vec::new();
            for line in &grid[..header_rows] {
                if let Some(Some(s)) = line.get(j)
                    && !s.blank
                {
                    let t = cells[s.cell].text();
                    if !t.is_empty() && parts.last() != Some(&t) {
                        parts.push(t);
                    }
                }
            }
            parts.join(" ")
        })
        .collect();
    let (label, rest) = label(spec.label, &titles, &cells);
    let mut grid = grid;
    let lines = grid.split_off(header_rows);
    let Body {
        lines,
        mut cols,
        width,
    } = body(lines, headers, width, &rest);
    make_unique(&mut cols);
    // Each column's header is one string its cells share.
    let cols: Vec<Arc<str>> = cols.into_iter().map(Arc::from).collect();
    let usual = usual_width(&lines);
    let label_rows: Vec<bool> = lines
        .iter()
        .map(|l| usual > 1 && single_cell_row(l, usual))
        .collect();
    let is_key = key_columns(&lines, &label_rows, &cells, width);
    // Which slots take a cell's content, so its last use can move it
    // instead of cloning (replication by spans is the only sharing). A
    // label row is its first cell, a key when it is plain text.
    let in_key = |j: usize, label_row: bool| if label_row { j == 0 } else { is_key[j] };
    let mut uses = vec![0usize; cells.len()];
    for (line, &label_row) in lines.iter().zip(&label_rows) {
        for (j, slot) in line.iter().enumerate() {
            if let Some(s) = slot
                && !(label_row && j > 0)
                && (!in_key(j, label_row) || !cells[s.cell].is_plain)
            {
                uses[s.cell] += 1;
            }
        }
    }
    let mut cells = cells;
    let weights: Vec<(u64, u64)> = cells.iter().map(|c| weigh(&c.nodes)).collect();
    let mut rows: Vec<HNode> = Vec::with_capacity(label_rows.len());
    for (line, &label_row) in lines.iter().zip(&label_rows) {
        let mut row = HNode::new(Kind::Row);
        row.children.reserve_exact(line.len().min(64));
        // The key's parts joined as they come; `last` is where the last
        // part starts.
        let mut key = String::new();
        let mut last: Option<usize> = None;
        for (j, slot) in line.iter().enumerate() {
            let Some(slot) = slot else { continue };
            if j > 0 && label_row {
                break;
            }
            if in_key(j, label_row)
                && let Some(t) = cells[slot.cell].plain()
            {
                // A rowspan copies a row header into every row it covers,
                // so each row carries its whole key.
                if !t.is_empty() && last.is_none_or(|at| key[at..] != *t) {
                    if last.is_some() {
                        key.push_str(KEY_SEPARATOR);
                    }
                    last = Some(key.len());
                    key.push_str(t);
                }
                continue;
            }
            uses[slot.cell] -= 1;
            // Spans replicate a cell's content and every cell copies its
            // column header: charge the copies before they are made.
            let (n_nodes, n_bytes) = weights[slot.cell];
            if !b.budget.nodes(n_nodes + 1, n_bytes + cols[j].len() as u64) {
                break;
            }
            let nodes = if uses[slot.cell] == 0 {
                std::mem::take(&mut cells[slot.cell].nodes)
            } else {
                cells[slot.cell].nodes.clone()
            };
            if let Some(mut n) = wrap_node(Kind::Cell, nodes) {
                n.col = Some(Arc::clone(&cols[j])).filter(|c| !c.is_empty());
                row.children.push(n);
            }
        }
        if last.is_some() {
            row.key = Some(key);
        }
        if row.key.is_some() || !row.children.is_empty() {
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut keys: Vec<String> = rows
        .iter()
        .map(|r| r.key.clone().unwrap_or_default())
        .collect();
    make_unique(&mut keys);
    for (row, key) in rows.iter_mut().zip(keys) {
        if let Some(old) = &row.key
            && *old != key
        {
            let ordinal = key.rsplit(" #").next().unwrap_or_default().to_owned();
            row.attrs.push(("ordinal", ordinal));
            row.key = Some(key);
        }
    }
    let mut table = HNode::new(Kind::Table);
    table.label = label;
    let keycol: Vec<&str> = cols
        .iter()
        .zip(&is_key)
        .filter(|(_, k)| **k)
        .map(|(c, _)| &**c)
        .filter(|k| !k.is_empty())
        .collect();
    if !keycol.is_empty() {
        table.attrs.push(("keycol", keycol.join(KEY_SEPARATOR)));
    }
    table.children = rows;
    Some(table)
}

/// A table's body ready to become rows: its lines (label rows first), the
/// column headers and the width, after side-by-side blocks are read one
/// after the other.
struct Body {
    lines: Vec<Vec<Option<Slot>>>,
    cols: Vec<String>,
    width: usize,
}

/// The body rows of a table under `headers`, with the title rows `rest`
/// (those that do not label the table) first as label rows.
///
/// When the headers are side-by-side blocks ([`key::blocks`]: `Rank |
/// Name | Pop. | Rank | Name | Pop.`), each block's rows follow the
/// previous block's, with the block's columns; a column in no block (a
/// picture beside the blocks) is left out, and a line with nothing in a
/// block gives no row. Label rows (full width) are kept once.
fn body(body: Vec<Vec<Option<Slot>>>, headers: Vec<String>, width: usize, rest: &[usize]) -> Body {
    let title_row = |cell: usize, width: usize| vec![Some(Slot { cell, blank: false }); width];
    let blocks = key::blocks(&headers).filter(|_| width > 1);
    let Some(blocks) = blocks else {
        let mut lines = body;
        lines.splice(0..0, rest.iter().map(|&c| title_row(c, width)));
        return Body {
            lines,
            cols: headers,
            width,
        };
    };
    let p = blocks[0].len();
    let usual = usual_width(&body);
    let mut lines: Vec<Vec<Option<Slot>>> = rest.iter().map(|&c| title_row(c, p)).collect();
    for (n, block) in blocks.iter().enumerate() {
        for line in &body {
            if usual > 1 && single_cell_row(line, usual) {
                if n == 0
                    && let Some(Some(s)) = line.first()
                {
                    lines.push(title_row(s.cell, p));
                }
                continue;
            }
            let part: Vec<Option<Slot>> = block
                .iter()
                .map(|&j| line.get(j).copied().flatten())
                .collect();
            if part.iter().any(Option::is_some) {
                lines.push(part);
            }
        }
    }
    let cols = blocks[0].iter().map(|&j| headers[j].clone()).collect();
    Body {
        lines,
        cols,
        width: p,
    }
}

/// A table's label and the title rows that do not make it: its caption;
/// without one, its first title row that names something (not pictures
/// only). Navigation chrome is left out ([`clean_label`]). The other
/// title rows stay in the table as label rows, so none of their text is
/// lost; the label is what people read in every change line, so it is
/// one name, not a chain of every banner above the data.
fn label(
    caption: Option<String>,
    titles: &[usize],
    cells: &[Built],
) -> (Option<String>, Vec<usize>) {
    let caption = caption.map(|c| clean_label(&c)).filter(|c| !c.is_empty());
    if caption.is_some() {
        return (caption, titles.to_vec());
    }
    let named = titles.iter().position(|&c| !cells[c].picture);
    match named {
        Some(i) => {
            let text = clean_label(&cells[titles[i]].text());
            let rest = titles
                .iter()
                .enumerate()
                .filter(|&(n, _)| n != i)
                .map(|(_, &c)| c)
                .collect();
            (Some(text).filter(|t| !t.is_empty()), rest)
        }
        None => (None, titles.to_vec()),
    }
}

/// Which columns of `lines` make the row key (see [`key::choose`]): the
/// leading row-header columns when there are several
/// ([`row_header_columns`], a hierarchical key), otherwise the column
/// that names the rows.
fn key_columns(
    lines: &[Vec<Option<Slot>>],
    label_rows: &[bool],
    cells: &[Built],
    width: usize,
) -> Vec<bool> {
    let mut is_key = vec![false; width.max(1)];
    let leading = row_header_columns(lines, label_rows, cells, width);
    if leading > 1 {
        is_key[..leading].iter_mut().for_each(|k| *k = true);
        return is_key;
    }
    let data: Vec<&Vec<Option<Slot>>> = lines
        .iter()
        .zip(label_rows)
        .filter(|(_, l)| !**l)
        .map(|(line, _)| line)
        .collect();
    // Only plain cells can be keys (a key is text): anything else probes
    // as a gap, which disqualifies its column.
    let columns: Vec<Vec<Option<key::Probe<'_>>>> = (0..width)
        .map(|j| {
            data.iter()
                .map(|line| {
                    let s = line.get(j).copied().flatten().filter(|s| !s.blank)?;
                    let c = &cells[s.cell];
                    Some(key::Probe {
                        text: c.plain()?,
                        image: c.picture,
                        header: c.header,
                        cell: s.cell,
                    })
                })
                .collect()
        })
        .collect();
    for j in key::choose(&columns) {
        if let Some(k) = is_key.get_mut(j) {
            *k = true;
        }
    }
    is_key
}

/// How many leading columns make the row key: 1, or more when the body
/// rows carry row headers in several columns (`<th rowspan=2>North</th>
/// <th>New York</th><td>100</td>`): the leading columns where every body
/// row (label rows aside) has a TH of plain text, as long as at least
/// one column of data is left. A rowspan on such a TH is copied into every
/// row it covers (as a TD's is), so each row has its whole key.
fn row_header_columns(
    body: &[Vec<Option<Slot>>],
    label_rows: &[bool],
    cells: &[Built],
    width: usize,
) -> usize {
    let rows: Vec<&Vec<Option<Slot>>> = body
        .iter()
        .zip(label_rows)
        .filter(|(_, label)| !**label)
        .map(|(l, _)| l)
        .collect();
    if rows.is_empty() {
        return 1;
    }
    let header_column = |j: usize| {
        rows.iter().all(|line| {
            line.get(j)
                .copied()
                .flatten()
                .is_some_and(|s| cells[s.cell].header && cells[s.cell].is_plain)
        }) && rows.iter().any(|line| {
            line.get(j)
                .copied()
                .flatten()
                .is_some_and(|s| cells[s.cell].plain().is_some_and(|t| !t.is_empty()))
        })
    };
    let mut k = 0;
    while k + 1 < width && header_column(k) {
        k += 1;
    }
    k.max(1)
}

/// The pseudo-tables of every data table in `dom`, in document order.
pub(super) fn pseudo_tables(b: &mut Builder, root: NodeId) -> Vec<PseudoTable> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut order = Vec::new();
    while let Some(n) = stack.pop() {
        if b.dom.element(n).is_some() && b.class(n) == TagClass::Table {
            order.push(n);
        }
        let before = stack.len();
        stack.extend(b.dom.children(n));
        stack[before..].reverse();
    }
    for id in order {
        if let Shape::Data(spec) = classify(b, id) {
            let r = resolve(b, &spec);
            let width = r.grid.iter().map(Vec::len).max().unwrap_or(0);
            let pad = width.saturating_mul(r.grid.len()) <= MAX_SLOTS;
            let grid = r
                .grid
                .iter()
                .map(|line| {
                    let mut texts: Vec<String> = line
                        .iter()
                        .map(|s| match s {
                            Some(s) if !s.blank => r.cells[s.cell].text(),
                            _ => String::new(),
                        })
                        .collect();
                    if pad {
                        texts.resize(width, String::new());
                    }
                    texts
                })
                .collect();
            out.push(PseudoTable {
                caption: label(spec.label.clone(), &r.titles, &r.cells).0,
                header_rows: r.header_rows,
                grid,
            });
        }
    }
    out
}
