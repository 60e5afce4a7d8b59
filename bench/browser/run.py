#!/usr/bin/env python3
"""Browser watches through the whole daemon (issue 19): rendered checks
against plain HTTP checks of the same local pages, in one run.

    python3 bench/browser/run.py [--pages 8] [--seconds 60] [--tabs 1,2,4]
                                 [--semclip target/debug/semclip]
                                 [--chromium /usr/bin/chromium]

Serves N quote pages on loopback (Python's http.server, in this process):
each page's 200-row table is written by a script at load (setTimeout 0),
so the HTML as sent holds no quote. Then runs `semclip run` twice on the
same pages, one phase after the other, each for --seconds:

1. `http`: N plain watches (`every: 1s`);
2. `browser`, once per tab count of --tabs: N watches with `fetch:
   {render: browser, wait_for: "#quotes td"}` (`every: 1s`,
   `browser.max_pages` = that count).

The pages send no validators, so every browser check is a full render.
Per phase: checks finished (from the daemon's `check finished` log lines,
outcome not `failed`) per second, and CPU seconds per check: utime +
stime + cutime + cstime from /proc/PID/stat summed over the daemon's
process tree (Chromium included), at the phase's end less at its start,
so a renderer that exited (reaped by Chromium's zygote, its CPU moved to
the zygote's cutime) is counted whole. As a cross-check, the whole
machine's busy CPU over the phase (/proc/stat, steal excluded), which
on an otherwise idle machine should be a little above the tree's.
In the browser phase, the browser's memory: the largest sum of PSS
(/proc/PID/smaps_rollup) over the daemon's Chromium processes seen while
renders ran.

Nothing is downloaded; semclip is built by `cargo build --bin semclip`
(the dev profile optimises; set --semclip for another build). Not run in CI.
Results: a table on stdout and bench/browser/results.json.
"""

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROWS = 200
TICK = os.sysconf("SC_CLK_TCK")


def page(i):
    rows = "".join(
        f"['T{r:03d}', '{100 + i + r / 100:.2f}', '{99 + r / 100:.2f}'],"
        for r in range(ROWS)
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>Quotes {i}</title></head><body><h1>Market</h1>"
        "<div id=m>Loading...</div><script>setTimeout(function () {"
        f"var rows = [{rows}];"
        "var h = '<table id=quotes><caption>Shares</caption><tr><th>Ticker</th>"
        "<th>Last</th><th>Open</th></tr>';"
        "rows.forEach(function (r) { h += '<tr><td>' + r[0] + '</td><td>' + r[1]"
        " + '</td><td>' + r[2] + '</td></tr>'; });"
        "document.getElementById('m').innerHTML = h + '</table>';"
        "}, 0);</script></body></html>"
    ).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        name = self.path.strip("/")
        if not (name.startswith("p") and name.endswith(".html")):
            self.send_error(404)
            return
        body = page(int(name[1:-5]))
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def tree(root):
    """The pids of root and its descendants."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        parents.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    # utime, stime, and cutime, cstime: the CPU of its children already
    # exited and reaped (Chromium's renderers, one per browser context,
    # exit after each render and are reaped by its zygote).
    return sum(int(fields[i]) for i in (11, 12, 13, 14))


def tree_ticks(root):
    """CPU ticks of root's tree, reaped descendants included."""
    return sum(t for t in map(cpu_ticks, tree(root)) if t is not None)


def machine_busy_ticks():
    """Busy ticks of the whole machine (user, nice, system, irq, softirq;
    not idle, iowait or steal), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7))


def name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def phase(kind, args, port, tabs):
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(f"{d}/watches")
        with open(f"{d}/semclip.yaml", "w") as f:
            f.write(
                "database: state/semclip.db\nwatches: watches\n"
                f"browser: {{executable: {args.chromium}, max_pages: {tabs or 1}}}\n"
                "limits: {per_host: 64, host_spacing: 0s, concurrency: 64}\n"
            )
        fetch = (
            "fetch: {render: browser, retries: 0, timeout: 30s, wait_for: \"#quotes td\"}\n"
            if kind == "browser"
            else "fetch: {retries: 0}\n"
        )
        for i in range(args.pages):
            with open(f"{d}/watches/{kind}{i}.yaml", "w") as f:
                f.write(
                    f"url: http://127.0.0.1:{port}/p{i}.html\nschedule: {{every: 1s}}\n{fetch}"
                )
        log = open(f"{d}/log", "w")
        daemon = subprocess.Popen(
            [args.semclip, "run", "--log-level", "info", "--config", f"{d}/semclip.yaml"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=d,
        )
        peak_pss = 0
        warm = time.monotonic() + 10
        start = end = None
        while True:
            now = time.monotonic()
            pids = tree(daemon.pid)
            if start is None and now >= warm:
                # Measure from here: the browser is started and warm.
                start = now
                base, busy0 = tree_ticks(daemon.pid), machine_busy_ticks()
                lines0 = open(f"{d}/log").read().count("check finished")
                end = start + args.seconds
            if start is not None:
                chromium = [p for p in pids if name(p).startswith("chrom")]
                peak_pss = max(peak_pss, sum(pss_kb(p) for p in chromium))
                if now >= end:
                    cpu = (tree_ticks(daemon.pid) - base) / TICK
                    busy = (machine_busy_ticks() - busy0) / TICK
                    break
            time.sleep(0.25)
        text = open(f"{d}/log").read()
        daemon.terminate()
        daemon.wait(timeout=30)
        finished = [l for l in text.splitlines() if "check finished" in l]
        measured = finished[lines0:]
        ok = [l for l in measured if "outcome=failed" not in l]
        return {
            "kind": kind,
            "tabs": tabs,
            "pages": args.pages,
            "seconds": args.seconds,
            "checks": len(ok),
            "failed": len(measured) - len(ok),
            "checks_per_second": len(ok) / args.seconds,
            "cpu_seconds": cpu,
            "cpu_ms_per_check": 1000 * cpu / max(len(ok), 1),
            "machine_busy_seconds": busy,
            "peak_browser_pss_mb": peak_pss / 1024 if kind == "browser" else None,
        }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pages", type=int, default=8)
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument(
        "--tabs",
        type=lambda v: [int(n) for n in v.split(",")],
        default=[1, 2, 4],
        help="browser.max_pages of each browser phase, comma-separated",
    )
    p.add_argument("--semclip", default="target/debug/semclip")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    args = p.parse_args()
    args.semclip = os.path.abspath(args.semclip)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    results = [phase("http", args, port, None)]
    results += [phase("browser", args, port, tabs) for tabs in args.tabs]
    server.shutdown()
    print(
        f"{'phase':8} {'tabs':>4} {'checks/s':>9} {'failed':>7} {'CPU ms/check':>13} "
        f"{'machine busy s':>15} {'browser PSS':>12}"
    )
    for r in results:
        pss = f"{r['peak_browser_pss_mb']:.0f} MB" if r["peak_browser_pss_mb"] else "-"
        print(
            f"{r['kind']:8} {r['tabs'] or '-':>4} {r['checks_per_second']:9.2f} {r['failed']:7d} "
            f"{r['cpu_ms_per_check']:13.1f} {r['machine_busy_seconds']:15.1f} {pss:>12}"
        )
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
