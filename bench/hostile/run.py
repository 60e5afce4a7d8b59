#!/usr/bin/env python3
"""CPU and peak memory of the hostile page shapes, before and after the page
budget, one fresh process per measurement.

    cargo build --release
    python3 bench/hostile/run.py [--before OLD_BINARY] [--out DIR]

The shapes are the generators of tests/it/shapes.rs at attack size, written
here again in Python (the script must not need a test build). Each run is
`semclip hierarchy PAGE` (or `extract records PAGE`), capped at 8 GiB of
address space and 180 s; the table gives CPU seconds (user + system), peak
RSS and the exit status. Figures go to BENCHMARKS.md, "Hostile pages".
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile


def span_bomb(tables, span):
    return "<title>spans</title>" + (
        f"<table><tr><td rowspan={span} colspan={span}>x<td>y</tr><tr><td>z</table>" * tables)


def long_heading(label, paragraphs):
    return ("<title>heading</title><h1>" + "h" * label + "</h1>"
            + "".join(f"<p>paragraph {i}</p>" for i in range(paragraphs)))


def misnested(open_, rounds):
    return ("<title>formatting</title><div>" + "".join(f"<b id=b{i}>" for i in range(open_))
            + "</div>" + "<div>x</div>" * rounds)


def colliding_keys(n):
    rows = ["<tr><td>k<td>1</tr>"] + [f"<tr><td>k #{i}<td>{i}</tr>" for i in range(2, n + 1)]
    rows += [f"<tr><td>k<td>{i}</tr>" for i in range(n)]
    return "<title>keys</title><table><tr><th>Key<th>Value</tr>" + "".join(rows) + "</table>"


def wide_table(rows, cols):
    head = "".join(f"<th>c{i}</th>" for i in range(cols))
    body = "".join("<tr>" + "".join(f"<td>{r * cols + i}</td>" for i in range(cols)) + "</tr>"
                   for r in range(rows))
    return f"<title>wide</title><table><tr>{head}</tr>{body}</table>"


CASES = [
    ("span bomb, 8 tables (issue: 3.66 GB, 37 s)", span_bomb(8, 1000), ["hierarchy"]),
    ("1 MB heading over 2,000 paragraphs (issue: 3.9 GB)", long_heading(1 << 20, 2000), ["hierarchy"]),
    ("misnested formatting, 400 x 10,000 (issue: 1.86 GB)", misnested(400, 10000), ["hierarchy"]),
    ("colliding row keys, 2 x 20,000 (issue: 16.5 s)", colliding_keys(20000), ["hierarchy"]),
    ("wide table 3 x 60,000, extract records (issue: 72 s)", wide_table(3, 60000), ["extract", "records"]),
]

MEASURE = r"""
import resource, subprocess, sys
p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=float(sys.argv[1]))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime, r.ru_maxrss, p.returncode, p.stderr.decode(errors='replace').strip().splitlines()[-1:] )
"""


def measure(binary, args, page, timeout=180):
    cmd = ["prlimit", f"--as={8 << 30}", "--", binary] + args + [page]
    try:
        out = subprocess.run([sys.executable, "-c", MEASURE, str(timeout)] + cmd,
                             capture_output=True, text=True, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return ("timeout" if "TimeoutExpired" in out.stderr else "error", out.stderr[-200:])
    cpu, rss, code, err = out.stdout.split(" ", 3)
    return float(cpu), int(rss) / 1024, int(code), err.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/semclip")
    ap.add_argument("--before")
    args = ap.parse_args()
    binaries = [("after", args.binary)] + ([("before", args.before)] if args.before else [])
    with tempfile.TemporaryDirectory() as tmp:
        print("| page | bytes | " + " | ".join(
            f"{n}: CPU s | {n}: peak RSS MB | {n}: exit" for n, _ in binaries) + " |")
        print("|---|---:|" + "---:|---:|---|" * len(binaries))
        for name, page, cmd in CASES:
            path = os.path.join(tmp, "page.html")
            with open(path, "w") as f:
                f.write(page)
            cells = []
            for _, b in binaries:
                m = measure(b, cmd, path)
                if m is None or isinstance(m[0], str):
                    cells.append(f"{m[0] if m else 'timeout'} | | ")
                    continue
                cpu, rss, code, err = m
                cells.append(f"{cpu:.2f} | {rss:.0f} | {code}")
            print(f"| {name} | {len(page.encode())} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
