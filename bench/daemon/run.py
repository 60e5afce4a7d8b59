#!/usr/bin/env python3
"""Daemon throughput benchmark (issues 4 and 16): semclip vs urlwatch vs changedetection.io.

    python3 bench/daemon/run.py [--sizes 1000,10000] [--workloads small,board]
                                [--tools semclip,urlwatch,...] [--rounds 1,2,3,4]
                                [--cdio-timeout 1200]

For each N: starts the fixture site (examples/fixture_site.rs, release build)
with N pages on loopback, then for each workload runs the tools on the same N
URLs, one after the other, each for every round of the workload:

- workload `small` (issue 4): `/p/{i}.html`, 3.8 KB quote pages. Round 1
  stores the first snapshots, round 2 finds every page unchanged.
- workload `board` (issue 16): `/b/{i}.html`, the 64 KB exchange board
  (benches/board_page.rs, 300 issuers x 10 values; the pages differ only in
  their <title>). Round 1: first check of `board_page(300, 0, 0)`; round 2:
  the same bytes again; round 3: the markup-only change
  (`board_page(300, 1, 0)`: same data, other markup), where every page a
  tool reports as changed is a false alarm; round 4: the data change
  (`board_page(300, 1, 3)`: 3 cells changed). The driver switches the
  variant served to every page with the fixture's `POST /round/{variant}`
  before each round.

Tools (`--tools`, default all):

- semclip: `semclip check --config DIR/semclip.yaml`, once per round, one
  watch file per page with one threshold on a cell's `@num` above a value
  the page never reaches;
- urlwatch (raw page compare, its default for a URL job), once per round;
- urlwatch+bs4: `filter: html2text: {method: bs4, parser: lxml}` (parses
  every page with lxml);
- urlwatch+css: `filter: [{css: table}, {html2text: {method: bs4, parser:
  lxml}}]`, the table only, as text: urlwatch's setting without false
  alarms on a markup-only change (issue 16);
- changedetection.io (headless, its default `requests` fetcher and
  text_json_diff processor): the N URLs imported through its API, measured
  until every watch has been checked once; every further round by
  `recheck_all`, measured until every watch has been checked again.

Per round and tool: wall time, CPU seconds (user+sys), peak RSS, and how
many pages the tool reported as changed (semclip: watches with "N semantic
changes"; urlwatch: its `CHANGED:` jobs; changedetection.io: watches whose
`last_changed` moved). For one-shot commands, CPU and RSS come from
os.wait4's rusage; for changedetection.io from /proc over its process tree
(CPU: utime+stime of the tree, deltas over the measured window; peak RSS:
the largest sum of the tree's RSS seen by sampling every 0.2 s, and each
process's VmHWM).

After the table, per workload, N and round: semclip's pages per CPU-second
against urlwatch+css's (the issue's goals for the board: at least 5x on the
changed rounds 1 and 4, at least 20x on the unchanged round 2) and against
the best peer, and the pages each tool reported as changed (round 3: the
false alarms).

Only the Python 3 standard library is needed for the driver; the peers are
pip-installed into bench/daemon/.venv (git-ignored) on first use. semclip and
the fixture site are built with
`cargo build --release --bin semclip --example fixture_site` (not by this
script: set SEMCLIP_TARGET_DIR if the target directory is elsewhere).
Results: a table on stdout and bench/daemon/results.json.
"""

import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("SEMCLIP_TARGET_DIR", os.path.join(ROOT, "target"))
SEMCLIP = os.path.join(TARGET, "release", "semclip")
# `--semclip-clip`: a clip every semclip watch gets (values over time).
SEMCLIP_CLIP = ""
# semclip's store size after each workload (written with the results).
STORES = []
FIXTURE = os.path.join(TARGET, "release", "examples", "fixture_site")
VENV = os.path.join(HERE, ".venv")
VPY = os.path.join(VENV, "bin", "python")
PEERS = ["urlwatch==2.29", "changedetection.io==0.60.10", "psutil"]
CONCURRENCY = 32
TOOLS = ["semclip", "urlwatch", "urlwatch+bs4", "urlwatch+css", "changedetection.io"]

# Per workload: the fixture's route, the threshold semclip's watches carry,
# and the rounds as (number, board variant to serve or None, what it is).
WORKLOADS = {
    "small": {
        "prefix": "/p/",
        "xpath": "//table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']/@num",
        "above": 8900,
        "rounds": [(1, None, "first check"), (2, None, "unchanged")],
    },
    "board": {
        "prefix": "/b/",
        # T0013's Last is one of the 3 cells round 4 changes; it stays
        # below 1,300 (benches/board_page.rs), so the threshold never fires.
        "xpath": "//row[@key='T0013']/cell[@col='Last']/@num",
        "above": 100000,
        "rounds": [
            (1, "base", "first check"),
            (2, "base", "unchanged (same bytes)"),
            (3, "markup", "markup-only change (false alarms)"),
            (4, "data", "data change (3 cells)"),
        ],
    },
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=60.0, headers=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            req = urllib.request.Request(url, headers=headers or {})
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.read()
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {timeout} s")


def ensure_venv():
    if not os.path.exists(VPY):
        log("creating", VENV)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    probe = subprocess.run(
        [VPY, "-c", "import urlwatch, changedetectionio, psutil"], capture_output=True
    )
    if probe.returncode != 0:
        log("pip install", *PEERS)
        subprocess.run([VPY, "-m", "pip", "install", "-q", *PEERS], check=True)


def set_variant(base, variant):
    """Makes the fixture serve that variant of the board to every page."""
    if variant is None:
        return
    req = urllib.request.Request(f"{base}/round/{variant}", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def run_measured(cmd, cwd, stdout_path, env=None):
    """Runs cmd to completion; returns wall s, CPU s (user+sys) and peak RSS MB."""
    with open(stdout_path, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "peak_rss_mb": ru.ru_maxrss / 1024.0,
        "exit": p.returncode,
    }


def row(tool, wl, n, rnd, m, checked=None, note="", changed=None):
    checked = n if checked is None else checked
    wall, cpu = m["wall_s"], m["cpu_s"]
    return {
        "tool": tool,
        "workload": wl,
        "n": n,
        "round": rnd,
        "checked": checked,
        "wall_s": round(wall, 2),
        "pages_per_s": round(checked / wall, 1) if wall else None,
        "cpu_s": round(cpu, 2),
        "cpu_s_per_1000": round(cpu / checked * 1000, 3) if checked else None,
        "pages_per_cpu_s": round(checked / cpu, 1) if cpu else None,
        "peak_rss_mb": round(m["peak_rss_mb"], 1),
        "exit": m.get("exit"),
        "changed_pages": changed,
        "note": note,
    }


# ---------------------------------------------------------------- semclip


def semclip_setup(work, base, n, wl):
    spec = WORKLOADS[wl]
    d = os.path.join(work, f"semclip-{wl}")
    os.makedirs(os.path.join(d, "watches"))
    with open(os.path.join(d, "semclip.yaml"), "w") as f:
        f.write(
            "database: semclip.db\n"
            "watches: watches\n"
            "notifiers:\n  log:\n    file: {path: alerts.jsonl}\n"
            f"limits: {{concurrency: {CONCURRENCY}, per_host: {CONCURRENCY}, host_spacing: 0s}}\n"
        )
    for i in range(n):
        with open(os.path.join(d, "watches", f"p{i}.yaml"), "w") as f:
            f.write(
                f"url: {base}{spec['prefix']}{i}.html\n"
                "schedule: {every: 1h}\n"
                "thresholds:\n"
                "  - name: never\n"
                f"    xpath: \"{spec['xpath']}\"\n"
                f"    above: {spec['above']}\n"
                "    notify: [log]\n"
                + (f"clips:\n  c: {{xpath: \"{SEMCLIP_CLIP}\"}}\n" if SEMCLIP_CLIP else "")
            )
    return d


def semclip_outcomes(path):
    """Per outcome, the number of watches; plus the semantic changes in all,
    the layout events and the thresholds without a value."""
    counts = {}
    extra = {"semantic changes": 0, "layout events": 0, "thresholds without a value": 0}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("  layout changed: "):
                extra["layout events"] += 1
                continue
            if line.startswith("  threshold ") and line.rstrip().endswith("(-)"):
                extra["thresholds without a value"] += 1
                continue
            # A check's line is `p{i}: what` (the watch files are p{i}.yaml);
            # an error message may go on over further lines.
            if not re.match(r"p[0-9]+: ", line):
                continue
            what = line.split(": ", 1)[1].strip()
            if what.startswith("FAILED"):
                extra.setdefault("first failure", what[len("FAILED: "):][:200])
                what = "FAILED"
            elif what.endswith("semantic changes"):
                extra["semantic changes"] += int(what.split()[0])
                what = "changed"
            counts[what] = counts.get(what, 0) + 1
    return counts, extra


def bench_semclip(work, base, n, wl, results):
    d = semclip_setup(work, base, n, wl)
    v = subprocess.run([SEMCLIP, "validate", "--config", os.path.join(d, "semclip.yaml")],
                       capture_output=True, text=True)
    if v.returncode != 0:
        raise RuntimeError("semclip validate failed: " + v.stderr[:2000])
    for rnd, variant, _ in WORKLOADS[wl]["rounds"]:
        set_variant(base, variant)
        out = os.path.join(d, f"round{rnd}.txt")
        m = run_measured([SEMCLIP, "check", "--config", os.path.join(d, "semclip.yaml")], d, out)
        oc, extra = semclip_outcomes(out)
        ok = sum(c for k, c in oc.items() if k != "FAILED")
        note = ", ".join(f"{k} {c}" for k, c in sorted(oc.items()))
        note += "".join(f", {k}: {c}" if isinstance(c, str) else f", {k} {c}" for k, c in extra.items() if c)
        if m["exit"] not in (0, 1):
            note += f"; exit {m['exit']}"
        r = row("semclip", wl, n, rnd, m, checked=ok, note=note,
                changed=None if rnd == 1 else oc.get("changed", 0))
        results.append(r)
        log(r)
    db = os.path.join(d, "semclip.db")
    size = sum(os.path.getsize(db + x) for x in ("", "-wal") if os.path.exists(db + x))
    log("semclip.db", size, "bytes")
    STORES.append({"workload": wl, "n": n, "store_bytes": size, "clip": SEMCLIP_CLIP})


# ---------------------------------------------------------------- urlwatch

UW_MAIN = (
    "import sys, urlwatch.worker as w; w.MAX_WORKERS = int(sys.argv.pop(1)); "
    "from urlwatch.cli import main; sys.argv[0] = 'urlwatch'; main()"
)


# The filter of each urlwatch variant (urlwatch-filters(5) of 2.29: `css`
# takes its selector as the default sub-filter; html2text's bs4 method takes
# a BeautifulSoup parser).
UW_FILTERS = {
    "raw": "",
    "bs4": "filter:\n  - html2text: {method: bs4, parser: lxml}\n",
    "css": "filter:\n  - css: table\n  - html2text: {method: bs4, parser: lxml}\n",
}


def bench_urlwatch(work, base, n, wl, results, variant):
    d = os.path.join(work, f"urlwatch-{variant}-{wl}")
    os.makedirs(d)
    with open(os.path.join(d, "urls.yaml"), "w") as f:
        for i in range(n):
            if i:
                f.write("---\n")
            f.write(f"url: {base}{WORKLOADS[wl]['prefix']}{i}.html\n")
            f.write(UW_FILTERS[variant])
    with open(os.path.join(d, "urlwatch.yaml"), "w") as f:
        # Only the stdout reporter, without colour; everything else off.
        f.write(
            "display: {new: true, error: true, unchanged: false, empty-diff: true}\n"
            "report:\n  stdout: {enabled: true, color: false}\n"
            "  email: {enabled: false}\n  html: {diff: unified}\n"
        )
    with open(os.path.join(d, "hooks.py"), "w") as f:
        f.write("")
    cmd = [VPY, "-c", UW_MAIN, str(CONCURRENCY), "--urls", "urls.yaml", "--config", "urlwatch.yaml",
           "--hooks", "hooks.py", "--cache", os.path.join(d, "cache.db")]
    env = dict(os.environ, HOME=d)
    tool = "urlwatch" if variant == "raw" else "urlwatch+" + variant
    for rnd, bvariant, _ in WORKLOADS[wl]["rounds"]:
        set_variant(base, bvariant)
        out = os.path.join(d, f"round{rnd}.txt")
        m = run_measured(cmd, d, out, env=env)
        text = open(out, encoding="utf-8", errors="replace").read()
        # Each job is named twice in the report (summary and details).
        new = text.count("NEW: ") // 2
        err = text.count("ERROR: ") // 2
        changed = text.count("CHANGED: ") // 2
        note = f"new {new}, changed {changed}, errors {err}"
        if m["exit"] != 0:
            note += f"; exit {m['exit']}: " + text[-300:].replace("\n", " ")
        r = row(tool, wl, n, rnd, m, checked=n - err, note=note, changed=None if rnd == 1 else changed)
        results.append(r)
        log(r)


# ---------------------------------------------------------------- changedetection.io


def proc_tree(root):
    """PIDs of root and its descendants (from /proc)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                s = f.read()
            ppid = int(s[s.rindex(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(name))
        except (OSError, ValueError):
            pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


CLK = os.sysconf("SC_CLK_TCK")
STALL = 20.0


def tree_sample(root):
    """(CPU s of the tree incl. reaped children, RSS MB sum, {pid: VmHWM MB})."""
    cpu, rss, hwm = 0.0, 0.0, {}
    for pid in proc_tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            fields = s[s.rindex(")") + 2:].split()
            # utime stime cutime cstime are fields 14-17 (1-based): here 11..14
            cpu += sum(int(x) for x in fields[11:15]) / CLK
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1]) / 1024
                    elif line.startswith("VmHWM:"):
                        hwm[pid] = int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
    return cpu, rss, hwm


def api(base, path, key, method="GET", data=None, ctype=None, timeout=120):
    headers = {"x-api-key": key}
    if ctype:
        headers["Content-Type"] = ctype
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
    return json.loads(body) if body else None


def bench_cdio(work, base, n, wl, results, timeout):
    prefix = base + WORKLOADS[wl]["prefix"]
    d = os.path.join(work, f"cdio-{wl}")
    os.makedirs(d)
    port = free_port()
    env = dict(os.environ, FETCH_WORKERS=str(CONCURRENCY), LOGGER_LEVEL="WARNING",
               DISABLE_VERSION_CHECK="true", HOME=d,
               # Without this, every loopback fetch is refused ("resolves to a
               # private/reserved IP address") and recorded as checked with an error.
               ALLOW_IANA_RESTRICTED_ADDRESSES="true")
    logf = open(os.path.join(d, "cdio.log"), "wb")
    # `-u URL` adds a watch at start-up and, with it, keeps changedetection.io
    # from creating its default example watches (which point at public sites:
    # this benchmark sends traffic to loopback only). That one watch (the
    # fixture's /health) is left out of the counts.
    p = subprocess.Popen([os.path.join(VENV, "bin", "changedetection.py"), "-d", d, "-p", str(port),
                          "-h", "127.0.0.1", "-u", base + "/health"], stdout=logf, stderr=subprocess.STDOUT, env=env,
                         start_new_session=True)
    cd = f"http://127.0.0.1:{port}"
    try:
        wait_http(cd + "/", timeout=120)
        key = None
        for name in ("changedetection.json", "url-watches.json"):
            path = os.path.join(d, name)
            if os.path.exists(path):
                with open(path) as f:
                    key = json.load(f)["settings"]["application"]["api_access_token"]
                break
        if not key:
            raise RuntimeError("no API key in the datastore")
        time.sleep(2)  # let start-up settle before the baseline
        cpu0, _, _ = tree_sample(p.pid)
        peak = [0.0]

        def sample():
            cpu, rss, hwm = tree_sample(p.pid)
            peak[0] = max(peak[0], rss)
            return cpu, hwm

        def wait_all(pred, t0, budget, nudge=False):
            """Polls the watch list until pred holds for all; returns (done, count).

            With nudge, the watches still waiting after STALL s without
            progress are queued again one by one (`?recheck=1`): on the board
            pages, recheck_all's queue lost part of its items (50 watches:
            26 checked, then nothing for 300 s, CPU idle)."""
            last_poll = 0.0
            interval = 3.0
            count = 0
            errors = []
            progress = (0, t0)
            while True:
                time.sleep(0.2)
                sample()
                now = time.monotonic()
                if now - last_poll >= interval:
                    last_poll = now
                    polls[0] += 1
                    try:
                        listing = api(cd, "/api/v1/watch", key)
                        # The listing costs changedetection.io CPU (about 4 s
                        # at 10,000 watches): poll at most 10% of the time, and
                        # subtract its measured cost (see listing_cost).
                        interval = max(3.0, 10 * (time.monotonic() - now))
                    except urllib.error.HTTPError as e:
                        # The listing iterates the watches while the import
                        # thread adds to them: "dictionary changed size during
                        # iteration" is a 500. Ask again at the next poll.
                        errors.append(e.code)
                        continue
                    watches = [w for w in listing.values() if w["url"].startswith(prefix)]
                    count = sum(1 for w in watches if pred(w) and not w.get("last_error"))
                    failed = sum(1 for w in watches if pred(w) and w.get("last_error"))
                    if failed:
                        raise RuntimeError(f"{failed} watches checked with an error, e.g. "
                                           + next(w["last_error"] for w in watches if w.get("last_error")))
                    if len(watches) == n and count == n:
                        return True, count
                    if count != progress[0]:
                        progress = (count, now)
                    elif nudge and now - progress[1] > STALL:
                        for uuid, w in listing.items():
                            if w["url"].startswith(prefix) and not pred(w):
                                api(cd, f"/api/v1/watch/{uuid}?recheck=1", key)
                                nudged[0] += 1
                        progress = (count, now)
                if now - t0 > budget:
                    return False, count

        polls = [0]
        nudged = [0]

        def listing_cost():
            """CPU s of one watch listing, measured on the now idle server."""
            time.sleep(2)
            c0, _, _ = tree_sample(p.pid)
            for _ in range(3):
                api(cd, "/api/v1/watch", key)
            c1, _, _ = tree_sample(p.pid)
            return (c1 - c0) / 3

        def listing_by_url():
            return {w["url"]: w for w in api(cd, "/api/v1/watch", key).values() if w["url"].startswith(prefix)}

        def finish(rnd, t0, cpu0, done, count, what, before):
            """Records the round; returns the watch list after it."""
            wall = time.monotonic() - t0
            cpu1, hwm = sample()
            raw = cpu1 - cpu0
            cost = listing_cost() if done else 0.0
            m = {"wall_s": wall, "cpu_s": raw - polls[0] * cost, "peak_rss_mb": peak[0], "exit": None}
            after = listing_by_url()
            changed = None
            if before is not None:
                # last_changed: the newest snapshot's time (whole seconds);
                # rounds start at least 1.1 s after the previous one ended.
                changed = sum(1 for u, w in after.items()
                              if (w.get("last_changed") or 0) > (before.get(u, {}).get("last_changed") or 0))
            note = what + ("" if done else f"; CUT OFF after {timeout} s")
            if nudged[0]:
                note += f"; {nudged[0]} watches queued again after {STALL} s without progress"
            if changed is not None:
                note += f"; changed {changed}"
            note += (f"; {polls[0]} polls of the watch list at {cost:.2f} CPU s each subtracted "
                     f"(raw CPU {raw:.1f} s)")
            note += f"; sum of VmHWM {sum(hwm.values()):.0f} MB"
            r = row("changedetection.io", wl, n, rnd, m, checked=count, note=note, changed=changed)
            r["cpu_s_raw"] = round(raw, 2)
            results.append(r)
            log(r)
            return after

        rounds = WORKLOADS[wl]["rounds"]
        set_variant(base, rounds[0][1])
        urls = "\n".join(f"{prefix}{i}.html" for i in range(n)).encode()
        t0 = time.monotonic()
        api(cd, "/api/v1/import", key, method="POST", data=urls, ctype="text/plain")
        done, count = wait_all(lambda w: (w.get("last_checked") or 0) > 0, t0, timeout)
        before = finish(rounds[0][0], t0, cpu0, done, count, "import + first check", None)
        for rnd, variant, _ in rounds[1:]:
            if not done:
                return
            set_variant(base, variant)
            time.sleep(1.1)  # last_checked and last_changed have 1 s resolution
            cpu0, _, _ = tree_sample(p.pid)
            peak[0] = 0.0
            polls[0] = 0
            nudged[0] = 0
            t0 = time.monotonic()
            api(cd, "/api/v1/watch?recheck_all=1", key)

            def pred(w, before=before):
                return (w.get("last_checked") or 0) > (before.get(w["url"], {}).get("last_checked") or 0)

            done, count = wait_all(pred, t0, timeout, nudge=True)
            before = finish(rnd, t0, cpu0, done, count, "recheck_all", before)
    finally:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        logf.close()


# ---------------------------------------------------------------- main


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB RAM, {platform.platform()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--workloads", default="small,board",
                    help="comma-separated: small (3.8 KB pages, 2 rounds), board (64 KB board, 4 rounds)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--rounds", help="comma-separated round numbers to run (default all; round 1 always runs)")
    ap.add_argument("--cdio-timeout", type=float, default=1200.0,
                    help="seconds per changedetection.io round before it is cut off")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--semclip-clip", default="",
                    help="an XPath: each semclip watch also gets a clip of it (its numbers keep series)")
    args = ap.parse_args()
    global SEMCLIP_CLIP
    SEMCLIP_CLIP = args.semclip_clip
    tools = args.tools.split(",")
    workloads = args.workloads.split(",")
    for x in tools:
        if x not in TOOLS:
            sys.exit(f"unknown tool `{x}` (the tools: {', '.join(TOOLS)})")
    for x in workloads:
        if x not in WORKLOADS:
            sys.exit(f"unknown workload `{x}` (the workloads: {', '.join(WORKLOADS)})")
    if args.rounds:
        keep = {1} | {int(x) for x in args.rounds.split(",")}
        for spec in WORKLOADS.values():
            spec["rounds"] = [r for r in spec["rounds"] if r[0] in keep]
    for exe in (SEMCLIP, FIXTURE):
        if not os.path.exists(exe):
            sys.exit(f"{exe} missing: cargo build --release --bin semclip --example fixture_site")
    if any(t != "semclip" for t in tools):
        ensure_venv()
    meta = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "semclip": version([SEMCLIP, "--version"]),
        "python": version([VPY, "--version"]) if os.path.exists(VPY) else None,
        "concurrency": CONCURRENCY,
        "workloads": workloads,
        "tools": tools,
        "rounds": args.rounds or "all",
    }
    if os.path.exists(VPY):
        meta["urlwatch"] = version([os.path.join(VENV, "bin", "urlwatch"), "--version"])
        meta["changedetection.io"] = version([os.path.join(VENV, "bin", "changedetection.py"), "--version"])
    log(meta)
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        work = tempfile.mkdtemp(prefix=f"semclip-bench-{n}-")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        site = subprocess.Popen([FIXTURE, "--listen", f"127.0.0.1:{port}", "--pages", str(n)],
                                stderr=subprocess.DEVNULL)
        try:
            wait_http(base + "/health")
            for wl in workloads:
                page = wait_http(f"{base}{WORKLOADS[wl]['prefix']}0.html")
                meta.setdefault(f"page_bytes_{wl}", len(page))
                if "semclip" in tools:
                    bench_semclip(work, base, n, wl, results)
                for variant in ("raw", "bs4", "css"):
                    if ("urlwatch" if variant == "raw" else "urlwatch+" + variant) in tools:
                        bench_urlwatch(work, base, n, wl, results, variant)
                if "changedetection.io" in tools:
                    try:
                        bench_cdio(work, base, n, wl, results, args.cdio_timeout)
                    except Exception as e:  # keep the other tools' results
                        log("changedetection.io failed:", repr(e))
                        results.append({"tool": "changedetection.io", "workload": wl, "n": n, "error": repr(e)})
                with open(args.out, "w") as f:
                    json.dump({"meta": meta, "results": results, "semclip_stores": STORES}, f, indent=1)
        finally:
            site.terminate()
            site.wait()
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
            else:
                log("kept", work)
    print_table(results)
    ratio(results)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "results": results, "semclip_stores": STORES}, f, indent=1)


def num(x, fmt):
    return "-" if x is None else format(x, fmt)


def print_table(results):
    print("| tool | workload | N | round | wall s | pages/s | CPU s per 1,000 checks | pages per CPU-second "
          "| peak RSS MB | pages reported changed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        if "error" in r:
            print(f"| {r['tool']} | {r.get('workload', '-')} | {r['n']:,} | - | failed: {r['error']} | | | | | |")
            continue
        print(f"| {r['tool']} | {r.get('workload', 'small')} | {r['n']:,} | {r['round']} | {r['wall_s']:.2f} | "
              f"{num(r['pages_per_s'], ',.0f')} | {num(r['cpu_s_per_1000'], '.2f')} | "
              f"{num(r['pages_per_cpu_s'], ',.0f')} | {r['peak_rss_mb']:.0f} | {num(r.get('changed_pages'), ',')} |")
    print()
    for r in results:
        if r.get("note"):
            print(f"- {r['tool']} {r.get('workload', 'small')} N={r['n']} round {r['round']}: {r['note']}")


# Issue 16's goals for the board, semclip / urlwatch+css in pages per
# CPU-second, per round (round 3 is judged by its false alarms).
GOALS = {("board", 1): 5, ("board", 2): 20, ("board", 4): 5}


def ratio(results):
    keyed = {}
    for r in results:
        if "error" not in r:
            keyed[(r.get("workload", "small"), r["n"], r["round"], r["tool"])] = r
    for wl in WORKLOADS:
        ns = sorted({k[1] for k in keyed if k[0] == wl})
        if not ns:
            continue
        print(f"\n{wl}: semclip pages per CPU-second / urlwatch+css's, and / the best peer's")
        print("\n| N | round | what | semclip | urlwatch+css | ratio | goal | best peer | ratio |")
        print("|---:|---:|---|---:|---:|---:|---:|---|---:|")
        for n in ns:
            for rnd, _, what in WORKLOADS[wl]["rounds"]:
                sc = keyed.get((wl, n, rnd, "semclip"))
                if not sc or not sc["pages_per_cpu_s"]:
                    continue
                css = keyed.get((wl, n, rnd, "urlwatch+css"))
                peers = [r for (w, nn, rr, t), r in keyed.items()
                         if (w, nn, rr) == (wl, n, rnd) and t != "semclip" and r["pages_per_cpu_s"]
                         and "CUT OFF" not in r.get("note", "")]
                best = max(peers, key=lambda r: r["pages_per_cpu_s"]) if peers else None
                x = sc["pages_per_cpu_s"]
                cells = [f"{n:,}", str(rnd), what, f"{x:,.0f}"]
                if css and css["pages_per_cpu_s"]:
                    q = x / css["pages_per_cpu_s"]
                    goal = GOALS.get((wl, rnd))
                    met = "" if goal is None else (" (met)" if q >= goal else " (not met)")
                    cells += [f"{css['pages_per_cpu_s']:,.0f}", f"{q:.1f}x",
                              "-" if goal is None else f">= {goal}x{met}"]
                else:
                    cells += ["-", "-", "-"]
                if best:
                    cells += [f"{best['tool']} {best['pages_per_cpu_s']:,.0f}",
                              f"{x / best['pages_per_cpu_s']:.1f}x"]
                else:
                    cells += ["-", "-"]
                print("| " + " | ".join(cells) + " |")
        tools = [t for t in TOOLS if any(k[0] == wl and k[3] == t for k in keyed)]
        later = [(rnd, what) for rnd, _, what in WORKLOADS[wl]["rounds"] if rnd > 1]
        print(f"\n{wl}: pages each tool reported as changed, of N"
              + (" (round 3: false alarms; round 4: the pages really changed)" if wl == "board" else ""))
        print("\n| tool | N | " + " | ".join(f"round {rnd}: {what}" for rnd, what in later) + " |")
        print("|---|---:|" + "---:|" * len(later))
        for t in tools:
            for n in ns:
                cells = []
                for rnd, _ in later:
                    r = keyed.get((wl, n, rnd, t))
                    c = None if r is None else r.get("changed_pages")
                    cells.append("-" if c is None else f"{c:,}"
                                 + (" (cut off)" if "CUT OFF" in r.get("note", "") else ""))
                print(f"| {t} | {n:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
