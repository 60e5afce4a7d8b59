#!/usr/bin/env python3
"""Instructions per check round, against the cost of parsing the page.

    cargo build --release --example check_costs
    python3 bench/check/run.py [--pages board,PATH,...] [--out FILE]

For each page, runs `check_costs PAGE MODE` under callgrind for the modes
setup, parse, 1, 2, 3 and 4 (see examples/check_costs.rs) and prints, per
round (first check, unchanged bytes, markup-only change, data change), the
instructions it costs (`run(k) - run(k-1)`) and their ratio to one html5ever
parse of the version that round checks (`run(parse) - run(setup)`; the
modes parse-markup and parse-data for the last two rounds), then where the data-change
round spends them (inclusive costs of the pipeline's steps, from
callgrind_annotate). Standard library only; needs valgrind.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXE = os.path.join(ROOT, "target", "release", "examples", "check_costs")
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
DEFAULT_PAGES = [
    "board",
    os.path.join(CORPUS, "changes/web-monitoring-diff/versions/775a8b04-9bac-4d0d-8db0-a8e133c4a964"),
    os.path.join(CORPUS, "records/next-eval/html/8.html"),
    os.path.join(CORPUS, "articles/readability/wikipedia/source.html"),
]
ROUNDS = ["first check", "unchanged bytes", "markup-only change", "data change (3 cells)"]
GOALS = {1: 0.1, 2: 1.5, 3: 2.0}

# Pipeline steps: a label and a regular expression over callgrind_annotate's
# function names (inclusive costs).
STEPS = [
    ("html5ever parse", r"semclip::page::dom::Dom::parse_within\b"),
    ("hierarchy build (ids charged, not written)", r"semclip::hierarchy::build_page\b"),
    ("DOM sketch (layout diagnostic)", r"semclip::template::minhash::Sketch::of_(?:dom|tree)\b"),
    ("label paths (layout trigger)", r"semclip::monitor::watch_page::label_paths\b"),
    ("page built for the watch (all of the above)", r"semclip::monitor::watch_page::build_page\b"),
    ("compact form and content hash", r"semclip::hierarchy::packed::pack_and_hash\b"),
    ("previous version read back", r"semclip::store::Store::previous\b"),
    ("semantic diff", r"semclip::diff::compare\b"),
    ("thresholds", r"semclip::monitor::check::Work::evaluate\b"),
    ("layout assessment", r"semclip::monitor::layout::assess\b"),
    ("store transaction", r"semclip::monitor::check::Work::record\b"),
]


def callgrind(page, mode, keep):
    out = os.path.join(keep, f"cg.{abs(hash(page))}.{mode}")
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", EXE, page, mode],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        sys.exit(f"check_costs {page} {mode} failed:\n{run.stderr[-3000:]}")
    total = None
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
    if total is None:
        sys.exit(f"no total in {out}")
    return total, out, run.stdout


def inclusive(path):
    """Inclusive instruction counts by function name."""
    run = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
        check=True,
    )
    costs = {}
    for line in run.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\*?\s*(?:\?\?\?|[^:]*):(.*?)\s*(?:\[.*\])?$", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        name = m.group(2)
        costs[name] = max(costs.get(name, 0), n)
    return costs


def step_costs(after, before):
    a, b = inclusive(after), inclusive(before)
    out = []
    for label, pattern in STEPS:
        rx = re.compile(pattern)
        # Several monomorphs or closures may match: take the largest.
        ca = max((v for k, v in a.items() if rx.search(k)), default=0)
        cb = max((v for k, v in b.items() if rx.search(k)), default=0)
        out.append((label, ca - cb))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default=",".join(DEFAULT_PAGES))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "check", "results.json"))
    args = ap.parse_args()
    if not os.path.exists(EXE):
        sys.exit("build first: cargo build --release --example check_costs")
    results = []
    with tempfile.TemporaryDirectory() as keep:
        for page in args.pages.split(","):
            if page != "board" and not os.path.exists(page):
                print(f"skipped {page}: not found", file=sys.stderr)
                continue
            size = len(open(page, "rb").read()) if page != "board" else None
            totals, files, stdout = {}, {}, {}
            for mode in ["setup", "parse", "parse-markup", "parse-data", "1", "2", "3", "4"]:
                totals[mode], files[mode], stdout[mode] = callgrind(page, mode, keep)
            # Each round against a parse of the version it checks: the
            # markup and data versions are heavier HTML than the base.
            parses = [totals[m] - totals["setup"] for m in ["parse", "parse", "parse-markup", "parse-data"]]
            parse = parses[0]
            prev = "setup"
            rounds = []
            for k, name in enumerate(ROUNDS, start=1):
                cost = totals[str(k)] - totals[prev]
                p = parses[k - 1]
                rounds.append({"round": name, "instructions": cost, "parse": p, "per_parse": cost / p})
                prev = str(k)
            steps = step_costs(files["4"], files["3"])
            name = "board (generated, 300 x 10)" if page == "board" else os.path.relpath(page, CORPUS)
            results.append(
                {"page": name, "bytes": size, "parse": parse, "rounds": rounds,
                 "data_change_steps": steps, "outcomes": stdout["4"].strip().splitlines()}
            )
            print(f"\n{name}: parse {parse / 1e6:.1f} M instructions"
                  f" (markup version {parses[2] / 1e6:.1f} M, data version {parses[3] / 1e6:.1f} M)")
            for k, r in enumerate(rounds):
                goal = GOALS.get(k)
                mark = "" if goal is None else (" (goal <= %.1f: %s)" % (goal, "met" if r["per_parse"] <= goal else "NOT met"))
                print(f"  {r['round']:<24} {r['instructions'] / 1e6:8.2f} M  {r['per_parse']:6.3f} x its parse{mark}")
            print("  data change, by step (inclusive):")
            for label, cost in steps:
                print(f"    {label:<36} {cost / 1e6:8.2f} M  {cost / parses[3]:6.3f} x parse")
            for line in stdout["4"].strip().splitlines():
                print(f"  | {line}")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
