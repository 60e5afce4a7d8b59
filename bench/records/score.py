#!/usr/bin/env python3
"""Score `semclip extract records` on the next-eval record pages.

Runs `semclip extract records FILE --format json` on every
`html/N.html` of the corpus folder and compares the records' `xpaths` with
`groundTruth/N.json` the way the data set's authors do (corpus SOURCES.md):
each record is a set of XPaths; a predicted and a true record overlap by
their Jaccard index; records are paired one to one to maximise the total
overlap (Hungarian assignment on cost 1 - overlap); precision = matched
overlap / predicted records, recall = matched overlap / true records.

Prints each page's P/R/F1 and time (worst first), then the *micro* figures
(sums over all records of all pages) and the *page-averaged* ones (mean of
the per-page P, R, F1).

Only the standard library: the assignment is solved exactly with a small
Hungarian method on each connected component of the "shares an XPath"
graph (pairs sharing nothing weigh 0 and cannot change the optimum), so no
scipy is needed. The time per page is the wall time of one `semclip`
process (start-up, decoding, parsing and extraction).

Usage:
    python3 bench/records/score.py [--semclip target/release/semclip]
        [--corpus ../shared/corpus/records/next-eval] [--jobs 2] [--worst 15]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def assignment(w):
    """Total weight of a maximum-weight one-to-one assignment on matrix w
    (weights in [0, 1]): Hungarian method with potentials on 1 - w."""
    if not w:
        return 0.0
    transposed = len(w) > len(w[0])
    if transposed:
        w = [list(col) for col in zip(*w)]
    rows, cols = len(w), len(w[0])
    inf = float("inf")
    u = [0.0] * (rows + 1)
    v = [0.0] * (cols + 1)
    owner = [0] * (cols + 1)
    way = [0] * (cols + 1)
    for i in range(1, rows + 1):
        owner[0] = i
        j0 = 0
        minv = [inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta, j1 = inf, 0
            for j in range(1, cols + 1):
                if not used[j]:
                    cur = (1.0 - w[i0 - 1][j - 1]) - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(cols + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while True:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
            if j0 == 0:
                break
    return sum(w[owner[j] - 1][j - 1] for j in range(1, cols + 1) if owner[j])


def matched_overlap(pred, truth):
    """Total Jaccard overlap of the best one-to-one pairing."""
    ps = [frozenset(r) for r in pred]
    ts = [frozenset(r) for r in truth]
    by_xpath = {}
    for j, t in enumerate(ts):
        for x in t:
            by_xpath.setdefault(x, []).append(j)
    parent = list(range(len(ps) + len(ts)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = {}
    for i, p in enumerate(ps):
        for j in {j for x in p for j in by_xpath.get(x, ())}:
            common = len(p & ts[j])
            edges[(i, j)] = common / (len(p) + len(ts[j]) - common)
            parent[find(i)] = find(len(ps) + j)
    components = {}
    for i, j in sorted(edges):
        rows, cols = components.setdefault(find(i), ([], []))
        if i not in rows:
            rows.append(i)
        if j not in cols:
            cols.append(j)
    return sum(
        assignment([[edges.get((i, j), 0.0) for j in cols] for i in rows])
        for rows, cols in components.values()
    )


def f1(p, r):
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def run(semclip, path):
    start = time.perf_counter()
    out = subprocess.run(
        [semclip, "extract", "records", path, "--format", "json"],
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):  # 1: nothing found (still JSON)
        sys.exit(f"{path}: semclip exited {out.returncode}: {out.stderr.decode(errors='replace')}")
    try:
        records = json.loads(out.stdout)["records"]
    except (ValueError, KeyError) as e:
        sys.exit(f"{path}: unreadable output ({e}): {out.stdout[:200]!r}")
    return [r["xpaths"] for r in records], elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--semclip", default=os.path.join(ROOT, "target/release/semclip"))
    ap.add_argument(
        "--corpus", default=os.path.join(ROOT, "../shared/corpus/records/next-eval")
    )
    ap.add_argument("--jobs", type=int, default=1, help="pages scored in parallel")
    ap.add_argument("--worst", type=int, default=15, help="pages listed (worst first)")
    ap.add_argument(
        "--dump", help="folder to write each page's predicted records to (N.json), for inspection"
    )
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.corpus, "groundTruth")):
        sys.exit(f"corpus not found at {args.corpus}")
    if not os.access(args.semclip, os.X_OK):
        sys.exit(f"no semclip binary at {args.semclip} (cargo build --release)")
    pages = sorted(
        int(n[:-5]) for n in os.listdir(os.path.join(args.corpus, "html")) if n.endswith(".html")
    )

    def one(n):
        pred, secs = run(args.semclip, os.path.join(args.corpus, "html", f"{n}.html"))
        with open(os.path.join(args.corpus, "groundTruth", f"{n}.json")) as f:
            truth = json.load(f)
        return n, pred, truth, secs

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = list(ex.map(one, pages))

    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for n, pred, _, _ in results:
            with open(os.path.join(args.dump, f"{n}.json"), "w") as f:
                json.dump(pred, f, indent=0)

    matched = n_pred = n_true = 0
    sp = sr = sf = total_secs = 0.0
    rows = []
    # The honesty split: pages numbered 0 mod 4 and 2 mod 4 (all are even),
    # so that a rule developed while looking at one half can be checked on
    # the other.
    halves = {0: [0, 0, 0, 0.0, 0.0, 0.0, 0], 2: [0, 0, 0, 0.0, 0.0, 0.0, 0]}
    for n, pred, truth, secs in results:
        m = matched_overlap(pred, truth)
        p = m / len(pred) if pred else 0.0
        r = m / len(truth) if truth else 0.0
        rows.append((f1(p, r), n, p, r, len(pred), len(truth), secs))
        matched += m
        n_pred += len(pred)
        n_true += len(truth)
        sp, sr, sf = sp + p, sr + r, sf + f1(p, r)
        total_secs += secs
        h = halves.setdefault(n % 4, [0, 0, 0, 0.0, 0.0, 0.0, 0])
        h[0] += m
        h[1] += len(pred)
        h[2] += len(truth)
        h[3] += p
        h[4] += r
        h[5] += f1(p, r)
        h[6] += 1
    rows.sort()
    for f, n, p, r, np_, nt, secs in rows[: args.worst]:
        print(f"page {n:>4}: F1 {f:.3f} P {p:.3f} R {r:.3f}  pred {np_:>4} true {nt:>4}  {secs * 1000:.0f} ms")
    k = len(rows)
    mp, mr = matched / max(n_pred, 1), matched / max(n_true, 1)
    print(f"pages {k}, true records {n_true}, predicted {n_pred}")
    print(f"micro (all records of all pages): P {mp:.4f} R {mr:.4f} F1 {f1(mp, mr):.4f}")
    print(f"page-averaged (mean per page):    P {sp / k:.4f} R {sr / k:.4f} F1 {sf / k:.4f}")
    for key, (hm, hp, ht, hsp, hsr, hsf, hk) in sorted(halves.items()):
        if hk == 0:
            continue
        hmp, hmr = hm / max(hp, 1), hm / max(ht, 1)
        print(
            f"pages = {key} mod 4 ({hk}): micro P {hmp:.4f} R {hmr:.4f} F1 {f1(hmp, hmr):.4f}"
            f"; page-averaged P {hsp / hk:.4f} R {hsr / hk:.4f} F1 {hsf / hk:.4f}"
        )
    print(f"time: {total_secs / k * 1000:.1f} ms per page (one semclip process each)")


if __name__ == "__main__":
    main()
