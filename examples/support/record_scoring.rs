//! The next-eval record scoring (corpus SOURCES.md): a record is a set of
//! XPaths, a predicted and a true record overlap by their Jaccard index,
//! and records are paired one to one to maximise the total overlap.
//!
//! Shared by the integration test `tests/it/records.rs` and
//! `examples/record_ceiling.rs` (each includes it with `#[path]`).

use std::collections::{HashMap, HashSet};

/// Maximum-weight one-to-one assignment on a dense matrix of weights in
/// `[0, 1]`: the Hungarian method with potentials (Kuhn-Munkres, O(n²m))
/// minimising `1 - weight`. Returns the total weight of the matched pairs.
#[allow(
    clippy::needless_range_loop,
    reason = "the method updates several arrays in step by column index"
)]
pub(crate) fn assignment(w: &[Vec<f64>]) -> f64 {
    let Some(first) = w.first() else {
        return 0.0;
    };
    // Rows must not outnumber columns: transpose if they do.
    let transposed = w.len() > first.len();
    let (rows, cols) = if transposed {
        (first.len(), w.len())
    } else {
        (w.len(), first.len())
    };
    let weight = |i: usize, j: usize| if transposed { w[j][i] } else { w[i][j] };
    let mut u = vec![0.0; rows + 1];
    let mut v = vec![0.0; cols + 1];
    // owner[j]: the row (1-based) assigned to column j; 0 = none.
    let mut owner = vec![0usize; cols + 1];
    let mut way = vec![0usize; cols + 1];
    for i in 1..=rows {
        owner[0] = i;
        let mut j0 = 0;
        let mut min = vec![f64::INFINITY; cols + 1];
        let mut used = vec![false; cols + 1];
        loop {
            used[j0] = true;
            let i0 = owner[j0];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=cols {
                if used[j] {
                    continue;
                }
                let cur = (1.0 - weight(i0 - 1, j - 1)) - u[i0] - v[j];
                if cur < min[j] {
                    min[j] = cur;
                    way[j] = j0;
                }
                if min[j] < delta {
                    delta = min[j];
                    j1 = j;
                }
            }
            for j in 0..=cols {
                if used[j] {
                    u[owner[j]] += delta;
                    v[j] -= delta;
                } else {
                    min[j] -= delta;
                }
            }
            j0 = j1;
            if owner[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            owner[j0] = owner[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    (1..=cols)
        .filter(|&j| owner[j] != 0)
        .map(|j| weight(owner[j] - 1, j - 1))
        .sum()
}

/// The total overlap of the best one-to-one pairing of `pred` with
/// `truth`. Pairs that share no XPath weigh 0 and change nothing, so the
/// assignment is solved on each connected component of the "shares an
/// XPath" graph separately (exact, and tiny: most records are one XPath).
pub(crate) fn matched_overlap(pred: &[Vec<String>], truth: &[Vec<String>]) -> f64 {
    let ps: Vec<HashSet<&str>> = pred
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let ts: Vec<HashSet<&str>> = truth
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let mut by_xpath: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, t) in ts.iter().enumerate() {
        for x in t {
            by_xpath.entry(x).or_default().push(j);
        }
    }
    // Union-find over predicted (0..P) and true (P..P+T) records.
    let np = ps.len();
    let mut parent: Vec<usize> = (0..np + ts.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut edges: HashMap<(usize, usize), f64> = HashMap::new();
    for (i, p) in ps.iter().enumerate() {
        let js: HashSet<usize> = p
            .iter()
            .filter_map(|x| by_xpath.get(x))
            .flatten()
            .copied()
            .collect();
        for j in js {
            let common = p.intersection(&ts[j]).count() as f64;
            let union = (p.len() + ts[j].len()) as f64 - common;
            edges.insert((i, j), common / union);
            let (a, b) = (find(&mut parent, i), find(&mut parent, np + j));
            parent[a] = b;
        }
    }
    let mut components: HashMap<usize, (Vec<usize>, Vec<usize>)> = HashMap::new();
    let mut keys: Vec<&(usize, usize)> = edges.keys().collect();
    keys.sort();
    for &(i, j) in keys {
        let c = components.entry(find(&mut parent, i)).or_default();
        if !c.0.contains(&i) {
            c.0.push(i);
        }
        if !c.1.contains(&j) {
            c.1.push(j);
        }
    }
    components
        .values()
        .map(|(is, js)| {
            let w: Vec<Vec<f64>> = is
                .iter()
                .map(|&i| {
                    js.iter()
                        .map(|&j| edges.get(&(i, j)).copied().unwrap_or(0.0))
                        .collect()
                })
                .collect();
            assignment(&w)
        })
        .sum()
}

/// The harmonic mean of `p` and `r` (0 when both are 0).
pub(crate) fn f1(p: f64, r: f64) -> f64 {
    if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}
