#!/usr/bin/env python3
"""How `semclip extract records` names fields and keys records on the
next-eval list pages.

Runs `semclip extract records FILE --format json` and `--format xml` on
every `html/N.html` of the corpus folder and reports:

- the share of field names that are the last-resort positional `f1`,
  `f2` ... , counted over field instances (every field of every record)
  and over columns (each distinct field name of a page once);
- the most common field names;
- over the records tables (`--format xml`): the `keycol` of each page, the
  share of rows whose key needed a ` #N` suffix (not distinct) and the
  share of rows without a key.

Only the standard library. A measurement, not run by CI; the integration
test `tests/it/records.rs` guards the same figures with bounds.

Usage:
    python3 bench/records/names.py [--semclip target/release/semclip]
        [--corpus ../shared/corpus/records/next-eval] [--jobs 2] [--pages]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POSITIONAL = re.compile(r"^f\d+$")
SUFFIX = re.compile(r" #\d+$")


def run(semclip, path, fmt):
    out = subprocess.run(
        [semclip, "extract", "records", path, "--format", fmt],
        capture_output=True,
        check=False,
    )
    if out.returncode not in (0, 1):  # 1: nothing found
        sys.exit(f"{path}: semclip exited {out.returncode}: {out.stderr.decode(errors='replace')}")
    return out.stdout


def one(semclip, path):
    records = json.loads(run(semclip, path, "json"))["records"]
    names = [f["name"] for r in records for f in r["fields"]]
    doc = ET.fromstring(run(semclip, path, "xml"))
    keycols, keys, unkeyed = [], [], 0
    for t in doc.iter("table"):
        if t.get("role") != "records":
            continue
        keycols.append(t.get("keycol"))
        for row in t.iter("row"):
            k = row.get("key")
            if k is None:
                unkeyed += 1
            else:
                keys.append(k)
    return names, keycols, keys, unkeyed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--semclip", default=os.path.join(ROOT, "target/release/semclip"))
    ap.add_argument(
        "--corpus", default=os.path.join(ROOT, "../shared/corpus/records/next-eval")
    )
    ap.add_argument("--jobs", type=int, default=1, help="pages run in parallel")
    ap.add_argument("--pages", action="store_true", help="one line per page")
    args = ap.parse_args()
    html = os.path.join(args.corpus, "html")
    if not os.path.isdir(html):
        sys.exit(f"corpus not found at {args.corpus}")
    if not os.access(args.semclip, os.X_OK):
        sys.exit(f"no semclip binary at {args.semclip} (cargo build --release)")
    pages = sorted(int(n[:-5]) for n in os.listdir(html) if n.endswith(".html"))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = list(
            ex.map(lambda n: (n, one(args.semclip, os.path.join(html, f"{n}.html"))), pages)
        )
    instances = positional = columns = positional_columns = 0
    rows = suffixed = unkeyed_rows = 0
    common = collections.Counter()
    keycols = collections.Counter()
    for n, (names, kcs, keys, unkeyed) in results:
        f = sum(1 for x in names if POSITIONAL.match(x))
        distinct = set(names)
        fc = sum(1 for x in distinct if POSITIONAL.match(x))
        instances += len(names)
        positional += f
        columns += len(distinct)
        positional_columns += fc
        common.update(names)
        keycols.update(k or "(none)" for k in kcs)
        s = sum(1 for k in keys if SUFFIX.search(k))
        rows += len(keys) + unkeyed
        suffixed += s
        unkeyed_rows += unkeyed
        if args.pages:
            print(
                f"page {n:>4}: {len(names):>5} fields, f… {f / max(len(names), 1):.2f}; "
                f"columns {len(distinct):>3}, f… {fc:>3}; keycol {kcs}; "
                f"rows {len(keys) + unkeyed}, #N {s}, unkeyed {unkeyed}"
            )
    print(f"pages {len(results)}")
    print(
        f"field instances {instances}, named f…: {positional} "
        f"({positional / max(instances, 1):.1%})"
    )
    print(
        f"columns (distinct names per page) {columns}, named f…: {positional_columns} "
        f"({positional_columns / max(columns, 1):.1%})"
    )
    print(
        f"rows {rows}: key with a ' #N' suffix {suffixed} ({suffixed / max(rows, 1):.1%}), "
        f"no key {unkeyed_rows}"
    )
    print("commonest names:", ", ".join(f"{k} {v}" for k, v in common.most_common(25)))
    print("keycols:", ", ".join(f"{k} {v}" for k, v in keycols.most_common(15)))


if __name__ == "__main__":
    main()
