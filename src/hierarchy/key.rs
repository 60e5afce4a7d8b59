//! Key discovery: a data table's body in, the column (or smallest set of
//! columns) that names its rows out, and the side-by-side blocks a wide
//! table is made of.
//!
//! A row's key is its identity: ids, thresholds, change lines and feeds
//! follow it. People name a row by the entity it is about (a company, a
//! city, a ticker), so the key is the column that reads as such names, not
//! whatever column comes first. The rules, in order (docs/algorithms.md,
//! "Tables"):
//!
//! 1. A column can be a key only when it is filled in every body row and
//!    reads as names: at least [`NAME_SHARE`] of its values hold more
//!    letters than digits and are not dates. That excludes ranks, ordinals
//!    (`#`, `1.`, `3rd`), years, numbers, dates, and image columns (a cell
//!    whose only content is a picture reads as its `alt` text, which is a
//!    caption of the picture, not a name of the row). A cell spanning every
//!    row (a photo beside the whole table) is one value for all rows and
//!    can never be distinct.
//! 2. A column of row headers (TH in every row) that reads as names is the
//!    key, even where a name repeats: the page says so itself (an
//!    infobox's labels). Otherwise the leftmost name column whose values
//!    are all distinct is the key.
//!    The first column stays the key whenever it already is one (an
//!    exchange board's ticker), so the tables that were right keep their
//!    ids.
//! 3. Otherwise the smallest set: the leftmost pair of columns whose
//!    values together are distinct, made of name columns and *stable*
//!    columns (years, dates), never of measures, whose values are what
//!    changes (`1997 / Acme`).
//! 4. Otherwise the name column with the most distinct values, when at
//!    least half of them are (repeats get ` #n`).
//! 5. Otherwise the first column, as before key discovery existed.
//!
//! With fewer than [`MIN_ROWS`] body rows there is no evidence to choose
//! from: the first column stays the key.
//!
//! Blocks: a table laid out as the same columns repeated side by side
//! (`Rank | Name | Pop. | Rank | Name | Pop.`, Wikipedia's "largest cities"
//! boxes) is one list of rows cut in two for the page's width; its rows
//! are read block by block ([`blocks`]).
//!
//! [`rekey`] re-keys a table already built, for a watch that names its
//! key column and for snapshots stored under an older rule.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::hierarchy::number::{DecimalStyle, parse_number};
use crate::hierarchy::{HNode, Hierarchy, Kind};

/// Share of a column's values that must read as names for it to be a key.
pub const NAME_SHARE: f64 = 0.9;

/// Fewer body rows than this: the first column is the key.
pub const MIN_ROWS: usize = 2;

/// Candidate columns tried in pairs (the first ones, left to right).
pub const MAX_PAIR_COLUMNS: usize = 6;

/// One body cell as key discovery sees it.
#[derive(Debug, Clone, Copy)]
pub struct Probe<'a> {
    /// Its text (an image's `alt` for a picture-only cell).
    pub text: &'a str,
    /// Its only content is a picture.
    pub image: bool,
    /// It is a header cell (TH, `rowheader`): the page's own word that it
    /// names its row.
    pub header: bool,
    /// Which source cell covers the slot: a rowspan copies one cell into
    /// several rows, which is one value, not several.
    pub cell: usize,
}

/// What a column's values read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// Names of things: may be a key.
    Names,
    /// Years and dates: stable, may join a name column in a key pair.
    Stable,
    /// Anything else (numbers, ranks, pictures, gaps).
    Other,
}

/// Chooses the key columns of a table whose body is `columns[j][r]` (the
/// probe of column `j` in body row `r`; `None` where a row has no cell
/// there). Returns the column indices in order; never empty when there is
/// a column.
pub fn choose(columns: &[Vec<Option<Probe<'_>>>]) -> Vec<usize> {
    let rows = columns.first().map_or(0, Vec::len);
    if columns.is_empty() || rows < MIN_ROWS {
        return vec![0];
    }
    let reads: Vec<Reads> = columns.iter().map(|c| reads(c.as_slice())).collect();
    let text = |j: usize, r: usize| columns[j][r].map_or("", |p| p.text);
    let distinct = |j: usize| -> usize {
        let set: rustc_hash::FxHashSet<&str> = (0..rows).map(|r| text(j, r)).collect();
        set.len()
    };
    let distinct_pair = |a: usize, b: usize| -> usize {
        let set: rustc_hash::FxHashSet<(&str, &str)> =
            (0..rows).map(|r| (text(a, r), text(b, r))).collect();
        set.len()
    };
    // A single spanning cell is one value however many rows it covers.
    let spans_all = |j: usize| {
        let first = columns[j][0].map(|p| p.cell);
        first.is_some() && columns[j].iter().all(|p| p.map(|p| p.cell) == first)
    };
    let names: Vec<usize> = (0..columns.len())
        .filter(|&j| reads[j] == Reads::Names && !spans_all(j))
        .collect();
    // The page's own markup first: a column of row headers that reads as
    // names is the key even where a name repeats (an infobox's labels).
    let headed = |j: usize| columns[j].iter().all(|p| p.is_some_and(|p| p.header));
    if let Some(&j) = names
        .iter()
        .find(|&&j| headed(j) && distinct(j) * 2 >= rows)
    {
        return vec![j];
    }
    if let Some(&j) = names.iter().find(|&&j| distinct(j) == rows) {
        return vec![j];
    }
    // Pairs among the first [`MAX_PAIR_COLUMNS`] candidates only: a key
    // is made of leading, naming columns, and the search stays linear in
    // the table whatever its width.
    let pairable: Vec<usize> = (0..columns.len())
        .filter(|&j| reads[j] != Reads::Other && !spans_all(j))
        .take(MAX_PAIR_COLUMNS)
        .collect();
    for (x, &a) in pairable.iter().enumerate() {
        for &b in &pairable[x + 1..] {
            let has_name = reads[a] == Reads::Names || reads[b] == Reads::Names;
            if has_name && distinct_pair(a, b) == rows {
                return vec![a, b];
            }
        }
    }
    let best = names
        .iter()
        .map(|&j| (distinct(j), j))
        .max_by_key(|&(d, j)| (d, std::cmp::Reverse(j)));
    match best {
        Some((d, j)) if d * 2 >= rows => vec![j],
        _ => vec![0],
    }
}

fn reads(column: &[Option<Probe<'_>>]) -> Reads {
    let mut names = 0usize;
    let mut stable = 0usize;
    for p in column {
        let Some(p) = p else { return Reads::Other };
        if p.text.is_empty() {
            return Reads::Other;
        }
        if p.image {
            continue;
        }
        match value_reads(p.text) {
            Reads::Names => names += 1,
            Reads::Stable => stable += 1,
            Reads::Other => {}
        }
    }
    let n = column.len() as f64;
    if names as f64 >= NAME_SHARE * n {
        Reads::Names
    } else if stable as f64 >= NAME_SHARE * n {
        Reads::Stable
    } else {
        Reads::Other
    }
}

/// What one value reads as: a name (more letters than digits, not a date),
/// a year or date, or something else.
fn value_reads(text: &str) -> Reads {
    if is_date(text) {
        return Reads::Stable;
    }
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    let digits = text.chars().filter(char::is_ascii_digit).count();
    if letters > digits && !is_ordinal(text) {
        Reads::Names
    } else {
        Reads::Other
    }
}

/// `3rd`, `21st`, `No. 4`, `#2`: a position, not a name.
fn is_ordinal(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    let t = t
        .strip_prefix("no.")
        .or_else(|| t.strip_prefix('#'))
        .unwrap_or(&t)
        .trim();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && matches!(&t[digits..], "st" | "nd" | "rd" | "th" | "." | "")
}

/// The English months' names, in lower case (dates are told by them here
/// and in record fields, `extract::names`).
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A year (`1997`), a numeric date (`2024-03-01`, `01/03/2024`) or an
/// English one (`3 March 2024`, `Mar 3, 2024`, `March 2024`).
fn is_date(text: &str) -> bool {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '/' | '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() || words.len() > 4 {
        return false;
    }
    let mut year = false;
    let mut month = false;
    for w in &words {
        if w.chars().all(|c| c.is_ascii_digit()) {
            if w.len() == 4 && matches!(w.as_bytes()[0], b'1' | b'2') {
                year = true;
            } else if w.len() > 2 {
                return false;
            }
        } else if w.len() >= 3 && MONTHS.iter().any(|m| m.starts_with(w.as_str())) {
            month = true;
        } else {
            return false;
        }
    }
    year || (month && words.len() >= 2)
}

/// The side-by-side blocks of a table with column headers `headers`:
/// `Some(blocks)` (each the column indices of one block, in order) when
/// the non-empty headers are one sequence of at least two columns repeated
/// at least twice in contiguous runs; `None` for an ordinary table. Columns
/// with an empty header (a picture column beside the blocks) belong to no
/// block.
pub fn blocks(headers: &[String]) -> Option<Vec<Vec<usize>>> {
    let named: Vec<usize> = (0..headers.len())
        .filter(|&j| !headers[j].is_empty())
        .collect();
    let n = named.len();
    for p in 2..=n / 2 {
        if !n.is_multiple_of(p) {
            continue;
        }
        let repeats = (p..n).all(|i| headers[named[i]] == headers[named[i % p]]);
        // Each block's columns are adjacent in the grid: a repeated
        // header far apart (`Name ... Name`) is not a block layout.
        let contiguous = named
            .chunks(p)
            .all(|c| c.windows(2).all(|w| w[1] == w[0] + 1));
        if repeats && contiguous {
            return Some(named.chunks(p).map(<[usize]>::to_vec).collect());
        }
    }
    None
}

/// Re-keys a built table (a `table` node) by the columns named
/// `columns` (their headers, as in `keycol`): each row's key becomes
/// those cells' texts joined by [`KEY_SEPARATOR`], the cells leave the row,
/// and the old key becomes a cell of the old key column, first in the row
/// (where the old key column stood). Label rows (no cells) keep their key.
/// Keys are made unique as the builder makes them (` #n`, `ordinal`).
///
/// Used where a table's key is decided after it is built: a watch naming
/// the key column itself, and an upgrade reading a snapshot stored under
/// an older rule. Returns false, leaving the table as it was, when the
/// table already has that key, or when some row with cells lacks one of
/// the columns or holds structure in it (a key is text).
pub fn rekey(table: &mut HNode, columns: &[&str]) -> bool {
    let wanted = columns.join(KEY_SEPARATOR);
    if columns.is_empty() || table.attr("keycol") == Some(wanted.as_str()) {
        return false;
    }
    let text_of = |row: &HNode, col: &str| -> Option<String> {
        let c = row
            .children
            .iter()
            .find(|c| c.kind == Kind::Cell && c.col.as_deref() == Some(col))?;
        c.children.is_empty().then(|| c.text.clone()).flatten()
    };
    let mut keys: Vec<String> = Vec::with_capacity(table.children.len());
    for row in &table.children {
        if row.kind != Kind::Row || row.children.is_empty() {
            keys.push(row.key.clone().unwrap_or_default());
            continue;
        }
        let mut parts = Vec::with_capacity(columns.len());
        for col in columns {
            parts.push(match text_of(row, col) {
                Some(t) if !t.is_empty() => t,
                _ => return false,
            });
        }
        keys.push(parts.join(KEY_SEPARATOR));
    }
    let old_col: Option<Arc<str>> = table
        .attr("keycol")
        .filter(|k| !k.is_empty())
        .map(Arc::from);
    for (row, key) in table.children.iter_mut().zip(&keys) {
        if row.kind != Kind::Row || row.children.is_empty() {
            continue;
        }
        row.children.retain(|c| {
            !(c.kind == Kind::Cell && c.col.as_deref().is_some_and(|c| columns.contains(&c)))
        });
        // The old key without the suffix that made it unique.
        let old = match (row.key.take(), row.attr("ordinal")) {
            (Some(k), Some(n)) => k
                .strip_suffix(&format!(" #{n}"))
                .map_or_else(|| k.clone(), str::to_owned),
            (k, _) => k.unwrap_or_default(),
        };
        row.attrs.retain(|(n, _)| *n != "ordinal");
        if !old.is_empty() {
            let mut cell = HNode::new(Kind::Cell);
            cell.col = old_col.clone();
            cell.num = parse_number(&old, DecimalStyle::Point);
            cell.text = Some(old);
            row.children.insert(0, cell);
        }
        row.key = Some(key.clone());
    }
    let mut unique = keys.clone();
    make_unique(&mut unique);
    for ((row, key), old) in table.children.iter_mut().zip(unique).zip(keys) {
        if row.kind == Kind::Row && !row.children.is_empty() && key != old {
            let ordinal = key.rsplit(" #").next().unwrap_or_default().to_owned();
            row.attrs.push(("ordinal", ordinal));
            row.key = Some(key);
        }
    }
    table.attrs.retain(|(n, _)| *n != "keycol");
    table.attrs.insert(0, ("keycol", wanted));
    true
}

/// Re-keys the tables of `old` (a stored version of a page) that `new`
/// keys by other columns, so that rows pair by identity when the two are
/// compared: a table whose key choice changed (an upgrade of the rule, a
/// watch naming its key, a name that came to repeat) reports what changed
/// in its data, not every row gone and come back. Tables pair in document
/// order when both versions have as many, otherwise by label. Returns how
/// many tables were re-keyed.
pub fn align(old: &mut Hierarchy, new: &Hierarchy) -> usize {
    let mut new_tables: Vec<&HNode> = Vec::new();
    collect(&new.children, &mut |t| new_tables.push(t));
    let mut old_count = 0usize;
    collect(&old.children, &mut |_| old_count += 1);
    let by_order = old_count == new_tables.len();
    let mut n = 0usize;
    let mut changed = 0usize;
    collect_mut(&mut old.children, &mut |t| {
        let partner = if by_order {
            new_tables.get(n).copied()
        } else {
            new_tables
                .iter()
                .find(|x| x.label.is_some() && x.label == t.label)
                .copied()
        };
        n += 1;
        let Some(partner) = partner else { return };
        let Some(want) = partner.attr("keycol") else {
            return;
        };
        if t.attr("keycol") == Some(want) {
            return;
        }
        // The key's columns: one header, or several joined.
        let whole = [want];
        let parts: Vec<&str> = want.split(KEY_SEPARATOR).collect();
        if rekey(t, &whole) || (parts.len() > 1 && rekey(t, &parts)) {
            changed += 1;
        }
    });
    changed
}

fn collect<'a>(nodes: &'a [HNode], f: &mut dyn FnMut(&'a HNode)) {
    for n in nodes {
        if n.kind == Kind::Table {
            f(n);
        }
        collect(&n.children, f);
    }
}

fn collect_mut(nodes: &mut [HNode], f: &mut dyn FnMut(&mut HNode)) {
    for n in nodes {
        if n.kind == Kind::Table {
            f(n);
        }
        collect_mut(&mut n.children, f);
    }
}

/// How the parts of a key read from several row-header columns are
/// joined (`North / New York`), and the headers of those columns in
/// `keycol` (`Region / City`).
pub const KEY_SEPARATOR: &str = " / ";

/// Makes the non-empty strings of `v` unique: the second `x` becomes
/// `x #2`, the third `x #3` (skipping any that already exist).
///
/// Near-linear whatever the input: the search for a free `x #k` resumes
/// where the previous search for `x` stopped (a suffix found taken stays
/// taken), so keys built to collide with the suffixes (`x`, `x #2`, `x #3`,
/// ..., then `x` again many times) cost one probe per suffix in all, not
/// one per suffix per duplicate.
pub(crate) fn make_unique(v: &mut [String]) {
    // Most lists (a table's row keys, its column headers) are unique
    // already: find that out without copying a value.
    let mut distinct: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    if v.iter()
        .filter(|s| !s.is_empty())
        .all(|s| distinct.insert(s.as_str()))
    {
        return;
    }
    drop(distinct);
    let mut taken: HashSet<String> = v.iter().filter(|s| !s.is_empty()).cloned().collect();
    // Per value: how often it was seen, and the next suffix to try.
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    for s in v.iter_mut() {
        if s.is_empty() {
            continue;
        }
        let (count, next) = seen.entry(s.clone()).or_insert((0, 2));
        *count += 1;
        if *count > 1 {
            let mut k = (*next).max(*count);
            let mut candidate = format!("{s} #{k}");
            while taken.contains(&candidate) {
                k += 1;
                candidate = format!("{s} #{k}");
            }
            *next = k + 1;
            taken.insert(candidate.clone());
            *s = candidate;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(text: &str) -> Option<Probe<'_>> {
        Some(Probe {
            text,
            image: false,
            header: false,
            cell: 0,
        })
    }

    /// Columns from rows of texts; every slot its own cell.
    fn columns<'a>(rows: &[&[&'a str]]) -> Vec<Vec<Option<Probe<'a>>>> {
        let width = rows[0].len();
        let mut cell = 0;
        let mut cols = vec![Vec::new(); width];
        for row in rows {
            for (j, t) in row.iter().enumerate() {
                cell += 1;
                cols[j].push(probe(t).map(|p| Probe { cell, ..p }));
            }
        }
        cols
    }

    fn key(rows: &[&[&str]]) -> Vec<usize> {
        choose(&columns(rows))
    }

    #[test]
    fn a_ticker_board_keeps_its_first_column() {
        let rows: &[&[&str]] = &[
            &["GAZP", "Gazprom", "251.30"],
            &["SBER", "Sberbank", "310.00"],
            &["LKOH", "Lukoil", "7100"],
        ];
        assert_eq!(key(rows), [0]);
    }

    #[test]
    fn a_rank_is_not_a_key_the_company_is() {
        let rows: &[&[&str]] = &[
            &["1", "Acme", "1,200"],
            &["2", "Globex", "1,100"],
            &["3", "Initech", "900"],
        ];
        assert_eq!(key(rows), [1]);
    }

    #[test]
    fn ordinals_are_not_keys() {
        let rows: &[&[&str]] = &[&["#1", "Acme"], &["#2", "Globex"], &["#3", "Initech"]];
        assert_eq!(key(rows), [1]);
        let rows: &[&[&str]] = &[&["1st", "Ann"], &["2nd", "Bob"], &["3rd", "Cy"]];
        assert_eq!(key(rows), [1]);
    }

    #[test]
    fn a_repeated_year_gives_way_to_the_name_and_dates_are_not_names() {
        let rows: &[&[&str]] = &[
            &["1997", "Tokyo summit", "12"],
            &["1997", "Kyoto protocol", "40"],
            &["1998", "Oslo talks", "7"],
        ];
        assert_eq!(key(rows), [1]);
        let rows: &[&[&str]] = &[
            &["3 March 2024", "Rain"],
            &["4 March 2024", "Sun"],
            &["5 March 2024", "Rain"],
        ];
        // No column of names is distinct; the date and the weather together
        // are, and a date is stable.
        assert_eq!(key(rows), [0, 1]);
    }

    #[test]
    fn names_that_repeat_pair_with_a_stable_column_not_a_measure() {
        let rows: &[&[&str]] = &[
            &["1997", "Acme", "1,200"],
            &["1998", "Acme", "1,300"],
            &["1999", "Globex", "900"],
        ];
        assert_eq!(key(rows), [0, 1]);
    }

    #[test]
    fn a_picture_column_spanning_every_row_is_never_the_key() {
        let photo = Probe {
            text: "Auckland Wellington",
            image: true,
            header: false,
            cell: 999,
        };
        let mut cols = columns(&[
            &["1", "Auckland", "1,628,900"],
            &["2", "Christchurch", "389,300"],
            &["3", "Wellington", "215,900"],
        ]);
        cols.insert(0, vec![Some(photo); 3]);
        assert_eq!(choose(&cols), [2]);
    }

    #[test]
    fn picture_cells_do_not_read_as_names() {
        let mut cols = columns(&[&["x", "Acme"], &["y", "Globex"], &["z", "Initech"]]);
        for p in cols[0].iter_mut().flatten() {
            p.image = true;
        }
        assert_eq!(choose(&cols), [1]);
    }

    #[test]
    fn without_any_name_column_the_first_column_stays() {
        let rows: &[&[&str]] = &[&["1", "10"], &["2", "20"], &["3", "30"]];
        assert_eq!(key(rows), [0]);
        // One row: no evidence.
        assert_eq!(key(&[&["1", "Acme"]]), [0]);
    }

    #[test]
    fn row_headers_that_name_stay_the_key_even_with_a_repeat() {
        let mut cols = columns(&[
            &["Population", "Five million"],
            &["Capital", "Wellington"],
            &["Population", "Growing fast"],
        ]);
        assert_eq!(choose(&cols), [1]);
        for p in cols[0].iter_mut().flatten() {
            p.header = true;
        }
        assert_eq!(choose(&cols), [0]);
    }

    #[test]
    fn a_gap_in_a_column_disqualifies_it() {
        let rows: &[&[&str]] = &[&["Acme", "a"], &["", "b"], &["Initech", "c"]];
        assert_eq!(key(rows), [1]);
    }

    #[test]
    fn side_by_side_blocks_are_found() {
        let h = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            blocks(&h(&[
                "", "Rank", "Name", "Pop.", "Rank", "Name", "Pop.", ""
            ])),
            Some(vec![vec![1, 2, 3], vec![4, 5, 6]])
        );
        assert_eq!(blocks(&h(&["Rank", "Name", "Pop."])), None);
        assert_eq!(blocks(&h(&["Name", "Name"])), None);
        // A gap column between the blocks belongs to neither.
        assert_eq!(
            blocks(&h(&["A", "B", "", "A", "B"])),
            Some(vec![vec![0, 1], vec![3, 4]])
        );
        assert_eq!(blocks(&h(&["Name", "Pop.", "Pop."])), None);
    }

    #[test]
    fn dates_and_ordinals_are_recognised() {
        for d in [
            "1997",
            "2024-03-01",
            "3 March 2024",
            "Mar 3, 2024",
            "March 2024",
        ] {
            assert!(is_date(d), "{d}");
        }
        for d in ["Acme", "March of the Penguins 2", "12", "May"] {
            assert!(!is_date(d), "{d}");
        }
        for o in ["1st", "#2", "3.", "No. 4", "12"] {
            assert!(is_ordinal(o), "{o}");
        }
        assert!(!is_ordinal("3M"));
    }
}
