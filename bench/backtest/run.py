#!/usr/bin/env python3
"""Backtest speed (issue 35): `semclip backtest` over N stored versions.

    python3 bench/backtest/run.py [--versions 1000] [--rows 20,300] [--runs 5]

For each page size (a quote table of R rows x 3 numbers, a heading and a
footer; 20 rows is about 3 KB, 300 rows about 40 KB), writes a watch of a
local file with a threshold on one cell and a clip of one row, records N
versions with `semclip check` (each version moves every price a little, so
each is a stored version), then times, best and median of `--runs`:

- `semclip backtest --threshold` (read and unpack every version, XPath,
  judge),
- `semclip backtest --clip` (plus a semantic diff per pair),
- `semclip backtest --ignore` (two diffs per pair),

and, as the baseline measured in the same run, `semclip --version` (process
start) and `semclip check` of the unchanged page (one check). Uses
target/debug/semclip unless SEMCLIP_BIN is set (the dev profile is
optimised). Prints a table and writes bench/backtest/results.json.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEMCLIP = os.environ.get("SEMCLIP_BIN", os.path.join(ROOT, "target", "debug", "semclip"))


def page(rows, version):
    body = "".join(
        f"<tr><td>T{i:04}</td><td>{100 + i + (version * 7 + i) % 13}.{version % 10}</td>"
        f"<td>{(i * 31 + version) % 1000}</td><td>{i % 7}.5</td></tr>"
        for i in range(rows)
    )
    return (
        "<html><head><title>Board</title></head><body><h1>Board</h1>"
        "<table><caption>Shares</caption><tr><th>Code</th><th>Last</th><th>Volume</th>"
        f"<th>Lot</th></tr>{body}</table><footer>About</footer></body></html>"
    )


def timed(args, cwd):
    start = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} failed ({out.returncode}): {out.stderr[:2000]}")
    return elapsed, out.stdout


def measure(args, cwd, runs):
    times = [timed(args, cwd)[0] for _ in range(runs)]
    return {"best_ms": round(min(times) * 1000, 1), "median_ms": round(statistics.median(times) * 1000, 1)}


def bench(rows, versions, runs):
    d = tempfile.mkdtemp(prefix=f"semclip-backtest-{rows}-")
    os.makedirs(os.path.join(d, "watches"))
    html = os.path.join(d, "board.html")
    with open(os.path.join(d, "semclip.yaml"), "w") as f:
        f.write("database: semclip.db\nwatches: watches\n"
                "retention: {keep_versions: 100000, keep_days: 3650}\n")
    with open(os.path.join(d, "watches", "b.yaml"), "w") as f:
        f.write(
            f"url: file://{html}\nschedule: {{every: 1h}}\n"
            "clips:\n  t13: {xpath: \"//row[@key='T0013']\"}\n"
            "thresholds:\n  - name: t13\n"
            "    xpath: \"//row[@key='T0013']/cell[@col='Last']/@num\"\n"
            "    above: 120\n"
        )
    config = os.path.join(d, "semclip.yaml")
    start = time.perf_counter()
    for v in range(versions):
        with open(html, "w") as f:
            f.write(page(rows, v))
        timed([SEMCLIP, "check", "--config", config], d)
    record_s = time.perf_counter() - start
    _, listing = timed([SEMCLIP, "backtest", "b", "--threshold", "t13", "--config", config], d)
    summary = listing.strip().splitlines()[-1]
    result = {
        "rows": rows,
        "page_bytes": len(page(rows, 0)),
        "versions": versions,
        "record_s": round(record_s, 1),
        "summary": summary,
        "start": measure([SEMCLIP, "--version"], d, runs),
        "check_unchanged": measure([SEMCLIP, "check", "--config", config], d, runs),
        "threshold": measure([SEMCLIP, "backtest", "b", "--threshold", "t13", "--config", config], d, runs),
        "clip": measure([SEMCLIP, "backtest", "b", "--clip", "t13", "--config", config], d, runs),
        "ignore": measure([SEMCLIP, "backtest", "b", "--ignore", "//footer", "--config", config], d, runs),
        "store_bytes": sum(os.path.getsize(os.path.join(d, "semclip.db" + x))
                           for x in ("", "-wal") if os.path.exists(os.path.join(d, "semclip.db" + x))),
    }
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", type=int, default=1000)
    ap.add_argument("--rows", default="20,300")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args()
    if not os.path.exists(SEMCLIP):
        sys.exit(f"{SEMCLIP} missing: cargo build --bin semclip")
    results = [bench(int(r), args.versions, args.runs) for r in args.rows.split(",")]
    print("| rows | page KB | versions | process start ms | one check ms | threshold ms | clip ms | ignore ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['rows']} | {r['page_bytes'] / 1024:.1f} | {r['versions']} | {r['start']['best_ms']} "
              f"| {r['check_unchanged']['best_ms']} | {r['threshold']['best_ms']} "
              f"| {r['clip']['best_ms']} | {r['ignore']['best_ms']} |")
        print(f"  {r['summary']}")
    with open(args.out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
