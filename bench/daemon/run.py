#!/usr/bin/env python3
"""Daemon throughput benchmark (issue 4): semclip vs urlwatch vs changedetection.io.

    python3 bench/daemon/run.py [--sizes 1000,10000] [--skip-cdio] [--cdio-timeout 1200]

For each N: starts the fixture site (examples/fixture_site.rs, release build)
with N pages on loopback, then runs on the same N URLs, one after the other:

- semclip: `semclip check --config DIR/semclip.yaml`, twice (first round
  stores the first snapshots, second round finds every page unchanged);
- urlwatch (raw page compare, its default for a URL job), twice;
- urlwatch with `html2text: bs4` (parses every page with lxml), twice;
- changedetection.io (headless, its default `requests` fetcher and
  text_json_diff processor): the N URLs imported through its API, measured
  until every watch has been checked once; then `recheck_all`, measured until
  every watch has been checked again.

Wall time, CPU seconds (user+sys) and peak RSS: for one-shot commands from
os.wait4's rusage; for changedetection.io from /proc over its process tree
(CPU: utime+stime of the tree, deltas over the measured window; peak RSS:
the largest sum of the tree's RSS seen by sampling every 0.2 s, and each
process's VmHWM).

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
FIXTURE = os.path.join(TARGET, "release", "examples", "fixture_site")
VENV = os.path.join(HERE, ".venv")
VPY = os.path.join(VENV, "bin", "python")
PEERS = ["urlwatch==2.29", "changedetection.io==0.60.10", "psutil"]
CONCURRENCY = 32


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


def row(tool, n, rnd, m, checked=None, note=""):
    checked = n if checked is None else checked
    wall, cpu = m["wall_s"], m["cpu_s"]
    return {
        "tool": tool,
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
        "note": note,
    }


# ---------------------------------------------------------------- semclip


def semclip_setup(work, base, n):
    d = os.path.join(work, "semclip")
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
                f"url: {base}/p/{i}.html\n"
                "schedule: {every: 1h}\n"
                "thresholds:\n"
                "  - name: gazp-high\n"
                "    xpath: \"//table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']/@num\"\n"
                "    above: 8900\n"
                "    notify: [log]\n"
            )
    return d


def semclip_outcomes(path):
    counts = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("  ", "alerts: ")) or ": " not in line:
                continue
            what = line.split(": ", 1)[1].strip()
            if what.startswith("FAILED"):
                what = "FAILED"
            elif what.endswith("semantic changes"):
                what = "changed"
            counts[what] = counts.get(what, 0) + 1
    return counts


def bench_semclip(work, base, n, results):
    d = semclip_setup(work, base, n)
    v = subprocess.run([SEMCLIP, "validate", "--config", os.path.join(d, "semclip.yaml")],
                       capture_output=True, text=True)
    if v.returncode != 0:
        raise RuntimeError("semclip validate failed: " + v.stderr[:2000])
    for rnd in (1, 2):
        out = os.path.join(d, f"round{rnd}.txt")
        m = run_measured([SEMCLIP, "check", "--config", os.path.join(d, "semclip.yaml")], d, out)
        oc = semclip_outcomes(out)
        ok = sum(c for k, c in oc.items() if k != "FAILED")
        note = ", ".join(f"{k} {c}" for k, c in sorted(oc.items()))
        if m["exit"] not in (0, 1):
            note += f"; exit {m['exit']}"
        r = row("semclip", n, rnd, m, checked=ok, note=note)
        results.append(r)
        log(r)
    db = os.path.join(d, "semclip.db")
    log("semclip.db", os.path.getsize(db) if os.path.exists(db) else 0, "bytes")


# ---------------------------------------------------------------- urlwatch

UW_MAIN = (
    "import sys, urlwatch.worker as w; w.MAX_WORKERS = int(sys.argv.pop(1)); "
    "from urlwatch.cli import main; sys.argv[0] = 'urlwatch'; main()"
)


def bench_urlwatch(work, base, n, results, variant):
    d = os.path.join(work, f"urlwatch-{variant}")
    os.makedirs(d)
    with open(os.path.join(d, "urls.yaml"), "w") as f:
        for i in range(n):
            if i:
                f.write("---\n")
            f.write(f"url: {base}/p/{i}.html\n")
            if variant == "bs4":
                f.write("filter:\n  - html2text: {method: bs4, parser: lxml}\n")
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
    tool = "urlwatch" if variant == "raw" else "urlwatch+bs4"
    for rnd in (1, 2):
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
        r = row(tool, n, rnd, m, checked=n - err, note=note)
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


def bench_cdio(work, base, n, results, timeout):
    d = os.path.join(work, "cdio")
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

        def wait_all(pred, t0, budget):
            """Polls the watch list until pred holds for all; returns (done, count)."""
            last_poll = 0.0
            interval = 3.0
            count = 0
            errors = []
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
                    watches = [w for w in listing.values() if w["url"].startswith(base + "/p/")]
                    count = sum(1 for w in watches if pred(w) and not w.get("last_error"))
                    failed = sum(1 for w in watches if pred(w) and w.get("last_error"))
                    if failed:
                        raise RuntimeError(f"{failed} watches checked with an error, e.g. "
                                           + next(w["last_error"] for w in watches if w.get("last_error")))
                    if len(watches) == n and count == n:
                        return True, count
                if now - t0 > budget:
                    return False, count

        polls = [0]

        def listing_cost():
            """CPU s of one watch listing, measured on the now idle server."""
            time.sleep(2)
            c0, _, _ = tree_sample(p.pid)
            for _ in range(3):
                api(cd, "/api/v1/watch", key)
            c1, _, _ = tree_sample(p.pid)
            return (c1 - c0) / 3

        def finish(rnd, t0, cpu0, done, count, what):
            wall = time.monotonic() - t0
            cpu1, hwm = sample()
            raw = cpu1 - cpu0
            cost = listing_cost() if done else 0.0
            m = {"wall_s": wall, "cpu_s": raw - polls[0] * cost, "peak_rss_mb": peak[0], "exit": None}
            note = what + ("" if done else f"; CUT OFF after {timeout} s")
            note += (f"; {polls[0]} polls of the watch list at {cost:.2f} CPU s each subtracted "
                     f"(raw CPU {raw:.1f} s)")
            note += f"; sum of VmHWM {sum(hwm.values()):.0f} MB"
            r = row("changedetection.io", n, rnd, m, checked=count, note=note)
            r["cpu_s_raw"] = round(raw, 2)
            results.append(r)
            log(r)

        urls = "\n".join(f"{base}/p/{i}.html" for i in range(n)).encode()
        t0 = time.monotonic()
        api(cd, "/api/v1/import", key, method="POST", data=urls, ctype="text/plain")
        done, count = wait_all(lambda w: (w.get("last_checked") or 0) > 0, t0, timeout)
        finish(1, t0, cpu0, done, count, "import + first check")
        if not done:
            return
        time.sleep(1.1)  # last_checked has 1 s resolution
        before = {u: w["last_checked"] for u, w in api(cd, "/api/v1/watch", key).items()}
        cpu0, _, _ = tree_sample(p.pid)
        peak[0] = 0.0
        polls[0] = 0
        t0 = time.monotonic()
        api(cd, "/api/v1/watch?recheck_all=1", key)
        def poll_pred_factory():
            def pred(w):
                return w.get("last_checked", 0) > before_by_url.get(w["url"], 0)
            return pred

        before_by_url = {}
        for u, w in api(cd, "/api/v1/watch", key).items():
            before_by_url[w["url"]] = before[u]
        done, count = wait_all(poll_pred_factory(), t0, timeout)
        finish(2, t0, cpu0, done, count, "recheck_all")
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
    ap.add_argument("--tools", default="semclip,urlwatch,urlwatch+bs4,changedetection.io")
    ap.add_argument("--cdio-timeout", type=float, default=1200.0)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args()
    tools = args.tools.split(",")
    for exe in (SEMCLIP, FIXTURE):
        if not os.path.exists(exe):
            sys.exit(f"{exe} missing: cargo build --release --bin semclip --example fixture_site")
    ensure_venv()
    meta = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "semclip": version([SEMCLIP, "--version"]),
        "urlwatch": version([os.path.join(VENV, "bin", "urlwatch"), "--version"]),
        "changedetection.io": version([os.path.join(VENV, "bin", "changedetection.py"), "--version"]),
        "python": version([VPY, "--version"]),
        "concurrency": CONCURRENCY,
    }
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
            page = wait_http(base + "/p/0.html")
            meta.setdefault("page_bytes", len(page))
            if "semclip" in tools:
                bench_semclip(work, base, n, results)
            if "urlwatch" in tools:
                bench_urlwatch(work, base, n, results, "raw")
            if "urlwatch+bs4" in tools:
                bench_urlwatch(work, base, n, results, "bs4")
            if "changedetection.io" in tools:
                try:
                    bench_cdio(work, base, n, results, args.cdio_timeout)
                except Exception as e:  # keep the other tools' results
                    log("changedetection.io failed:", repr(e))
                    results.append({"tool": "changedetection.io", "n": n, "error": repr(e)})
        finally:
            site.terminate()
            site.wait()
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
            else:
                log("kept", work)
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)
    print_table(results)
    ratio(results)
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)


def print_table(results):
    print("| tool | N | round | wall s | pages/s | CPU s per 1,000 checks | pages per CPU-second | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        if "error" in r:
            print(f"| {r['tool']} | {r['n']} | - | failed: {r['error']} | | | | |")
            continue
        print(f"| {r['tool']} | {r['n']:,} | {r['round']} | {r['wall_s']:.2f} | {r['pages_per_s']:,.0f} | "
              f"{r['cpu_s_per_1000']:.2f} | {r['pages_per_cpu_s']:,.0f} | {r['peak_rss_mb']:.0f} |")
    print()
    for r in results:
        if r.get("note"):
            print(f"- {r['tool']} N={r['n']} round {r['round']}: {r['note']}")


def ratio(results):
    print()
    for n in sorted({r["n"] for r in results}):
        for rnd in (1, 2):
            rs = [r for r in results if r["n"] == n and r.get("round") == rnd and r.get("pages_per_cpu_s")]
            sc = [r for r in rs if r["tool"] == "semclip"]
            peers = [r for r in rs if r["tool"] != "semclip" and "CUT OFF" not in r.get("note", "")]
            if sc and peers:
                best = max(peers, key=lambda r: r["pages_per_cpu_s"])
                print(f"N={n} round {rnd}: semclip {sc[0]['pages_per_cpu_s']:,.0f} pages/CPU-s, best peer "
                      f"{best['tool']} {best['pages_per_cpu_s']:,.0f}: ratio {sc[0]['pages_per_cpu_s'] / best['pages_per_cpu_s']:.2f}x")


if __name__ == "__main__":
    main()
