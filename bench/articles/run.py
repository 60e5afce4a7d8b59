#!/usr/bin/env python3
"""Article extraction benchmark (issue 6): semclip vs trafilatura vs readability-lxml.

    python3 bench/articles/run.py [--corpus DIR] [--tools semclip,trafilatura,...]
                                  [--per-page] [--json OUT]

Runs every tool on the 130 pages of the Mozilla Readability test set
(`../shared/corpus/articles/readability/<name>/source.html`) and scores each
against that page's `expected.html` (the article body) and
`expected-metadata.json` (the title), with one metric for all tools. The
metric is described in bench/articles/README.md and mirrored by
tests/it/articles.rs (keep the two in step).

Tools:
- semclip: `semclip extract article FILE --format json` (one process per
  page; the time includes process start, reading, decoding and parsing);
  built with `cargo build --release` (not by this script; set
  SEMCLIP_TARGET_DIR if the target directory is not ./target, or --semclip).
- trafilatura (default settings, plus its favor_precision and favor_recall
  variants), `extract(bytes, output_format="json", with_metadata=True)`.
- readability-lxml: `Document(bytes).summary()` for the body,
  `.short_title()` for the title.
The Python tools get the page bytes and decode them themselves, as they do
in use; their time is the in-process call (interpreter start excluded).

The Python peers are pip-installed into target/bench-venv (git-ignored) on
first use; the script re-runs itself under that venv. Only the standard
library is needed to start it.
"""

import argparse
import html.parser
import json
import os
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("SEMCLIP_TARGET_DIR", os.path.join(ROOT, "target"))
VENV = os.path.join(ROOT, "target", "bench-venv")
VPY = os.path.join(VENV, "bin", "python")
PEERS = ["trafilatura==2.3.1", "readability-lxml==0.9"]
# The corpus folder, as the Rust tests find it: $SEMCLIP_CORPUS, else
# ../shared/corpus beside the project root.
CORPUS = os.environ.get("SEMCLIP_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
DEFAULT_CORPUS = os.path.join(CORPUS, "articles", "readability")
SHINGLE = 4


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def ensure_venv():
    """Re-executes this script under the benchmark venv, creating it first."""
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(VPY):
        log(f"creating {VENV} and installing {' '.join(PEERS)}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([VPY, "-m", "pip", "install", "-q", "-U", "pip"], check=True)
        subprocess.run([VPY, "-m", "pip", "install", "-q", *PEERS], check=True)
    os.execv(VPY, [VPY, os.path.abspath(__file__), *sys.argv[1:]])


# ---------------------------------------------------------------------------
# The metric (mirrored in tests/it/articles.rs)

# Phrasing elements: their boundaries do not separate words. The same list
# as semclip's `dom::is_inline`, so that the ground truth's text is the same
# here and in the Rust corpus test.
INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em",
    "font", "i", "img", "kbd", "mark", "q", "s", "samp", "small", "span",
    "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
}
SKIP = {"script", "style", "noscript", "template"}


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self.skip += 1
        elif tag not in INLINE:
            self.parts.append(" ")

    def handle_startendtag(self, tag, attrs):
        if tag not in INLINE and tag not in SKIP:
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag not in INLINE:
            self.parts.append(" ")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_text(markup):
    """The text of an HTML fragment, block boundaries separating words."""
    p = _Text()
    p.feed(markup)
    p.close()
    return " ".join("".join(p.parts).split())


def is_cjk(c):
    """Han ideographs and kana: scripts written without spaces, where each
    character is a token (else a whole sentence would be one word)."""
    o = ord(c)
    return (
        0x3040 <= o <= 0x30FF
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
    )


def tokens(text):
    """Lower-cased words: maximal runs of letters and digits; each CJK
    character is a word of its own; everything else separates."""
    out = []
    cur = []
    for c in text.lower():
        if is_cjk(c):
            if cur:
                out.append("".join(cur))
                cur = []
            out.append(c)
        elif c.isalnum():
            cur.append(c)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def shingles(text):
    """The multiset of 4-word shingles (one shingle of all the words when
    there are fewer than four)."""
    t = tokens(text)
    if not t:
        return Counter()
    if len(t) < SHINGLE:
        return Counter([tuple(t)])
    return Counter(tuple(t[i : i + SHINGLE]) for i in range(len(t) - SHINGLE + 1))


def page_pr(pred_text, true_text):
    """Per-page precision and recall over shingle multisets. An empty
    prediction scores 0 and 0 (unless the truth is empty too: 1 and 1)."""
    pred, true = shingles(pred_text or ""), shingles(true_text)
    if not true:
        return (1.0, 1.0) if not pred else (0.0, 1.0)
    if not pred:
        return 0.0, 0.0
    common = sum((pred & true).values())
    return common / sum(pred.values()), common / sum(true.values())


def norm_title(s):
    """Lower case, punctuation removed, whitespace collapsed."""
    s = (s or "").lower()
    return " ".join("".join(c if c.isalnum() else " " for c in s).split())


def title_scores(pred, true):
    """(exact, lenient): exact is equality after normalisation; lenient also
    accepts one containing the other or a word overlap of at least 0.8
    (common words / words of the longer)."""
    p, t = norm_title(pred), norm_title(true)
    exact = p == t
    if exact:
        return True, True
    if not p or not t:
        return False, False
    if p in t or t in p:
        return False, True
    pw, tw = Counter(p.split()), Counter(t.split())
    overlap = sum((pw & tw).values()) / max(sum(pw.values()), sum(tw.values()))
    return False, overlap >= 0.8


# ---------------------------------------------------------------------------
# Tools


def run_semclip(binary):
    def run(path, raw):
        start = time.perf_counter()
        out = subprocess.run(
            [binary, "extract", "article", path, "--format", "json"],
            capture_output=True,
        )
        elapsed = time.perf_counter() - start
        # Exit 1 means "no article found" (the JSON is still printed).
        if out.returncode not in (0, 1) or not out.stdout.strip():
            log(f"semclip failed on {path}: {out.stderr.decode(errors='replace')[:300]}")
            return None, None, elapsed
        j = json.loads(out.stdout)
        return j.get("body") or "", j.get("title"), elapsed

    return run


def run_trafilatura(**options):
    import trafilatura

    def run(path, raw):
        start = time.perf_counter()
        out = trafilatura.extract(raw, output_format="json", with_metadata=True, **options)
        elapsed = time.perf_counter() - start
        if not out:
            return None, None, elapsed
        j = json.loads(out)
        return j.get("text") or "", j.get("title"), elapsed

    return run


def run_readability():
    from readability import Document

    def run(path, raw):
        start = time.perf_counter()
        try:
            doc = Document(raw)
            body = html_text(doc.summary(html_partial=True))
            title = doc.short_title()
        except Exception as e:  # the library raises on some inputs
            log(f"readability-lxml failed on {path}: {e}")
            return None, None, time.perf_counter() - start
        return body, title, time.perf_counter() - start

    return run


# ---------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument(
        "--tools",
        default="semclip,trafilatura,trafilatura-precision,trafilatura-recall,readability-lxml",
    )
    ap.add_argument("--semclip", default=os.path.join(TARGET, "release", "semclip"))
    ap.add_argument("--per-page", action="store_true", help="print each page's scores")
    ap.add_argument("--json", help="write per-page results to this file")
    args = ap.parse_args()

    wanted = args.tools.split(",")
    if any(t != "semclip" for t in wanted):
        ensure_venv()
    tools = {}
    for t in wanted:
        if t == "semclip":
            if not os.path.exists(args.semclip):
                sys.exit(f"{args.semclip} not found: cargo build --release first (or --semclip)")
            tools[t] = run_semclip(args.semclip)
        elif t == "trafilatura":
            tools[t] = run_trafilatura()
        elif t == "trafilatura-precision":
            tools[t] = run_trafilatura(favor_precision=True)
        elif t == "trafilatura-recall":
            tools[t] = run_trafilatura(favor_recall=True)
        elif t == "readability-lxml":
            tools[t] = run_readability()
        else:
            sys.exit(f"unknown tool {t}")

    names = sorted(
        n for n in os.listdir(args.corpus) if os.path.isfile(os.path.join(args.corpus, n, "source.html"))
    )
    if not names:
        sys.exit(f"no pages under {args.corpus}")
    pages = []
    for n in names:
        d = os.path.join(args.corpus, n)
        with open(os.path.join(d, "expected.html"), encoding="utf-8") as f:
            true_text = html_text(f.read())
        with open(os.path.join(d, "expected-metadata.json"), encoding="utf-8") as f:
            true_title = json.load(f).get("title") or ""
        with open(os.path.join(d, "source.html"), "rb") as f:
            raw = f.read()
        pages.append((n, os.path.join(d, "source.html"), raw, true_text, true_title))

    results = {}
    rows = []
    for t, run in tools.items():
        per = []
        for n, path, raw, true_text, true_title in pages:
            body, title, elapsed = run(path, raw)
            p, r = page_pr(body, true_text)
            exact, lenient = title_scores(title, true_title)
            per.append(
                {"page": n, "p": p, "r": r, "title": title, "title_ok": exact,
                 "title_lenient": lenient, "seconds": elapsed}
            )
            if args.per_page:
                f1 = 2 * p * r / (p + r) if p + r else 0.0
                print(f"{t:22s} {n:40s} P={p:.3f} R={r:.3f} F1={f1:.3f} title={'ok' if exact else 'NO'} {title!r}")
        k = len(per)
        mp = sum(x["p"] for x in per) / k
        mr = sum(x["r"] for x in per) / k
        f1 = 2 * mp * mr / (mp + mr) if mp + mr else 0.0
        ta = sum(x["title_ok"] for x in per) / k
        tl = sum(x["title_lenient"] for x in per) / k
        ms = 1000 * sum(x["seconds"] for x in per) / k
        rows.append((t, mp, mr, f1, ta, tl, ms))
        results[t] = per
        log(f"{t}: P={mp:.4f} R={mr:.4f} F1={f1:.4f} title={ta:.3f}/{tl:.3f} {ms:.1f} ms/page")

    print()
    print(f"{len(pages)} pages, 4-word shingle multisets, P and R averaged over pages, F1 of the averages.")
    print()
    print("| tool | P | R | F1 | title exact | title lenient | ms / page |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for t, mp, mr, f1, ta, tl, ms in rows:
        print(f"| {t} | {mp:.3f} | {mr:.3f} | **{f1:.3f}** | {ta:.3f} | {tl:.3f} | {ms:.1f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
