#!/usr/bin/env python3
"""Render starvation: while anonymous clients ask for new variants of a big
public clip, how long does a small clip's HTML take, and how large does the
daemon grow?

    cargo build --release --bin semclip
    python3 bench/hostile/renders.py [--binary target/release/semclip] [--rows 20000]

One daemon (SQLite, `render_threads: 2`, `request_timeout: 10s`) watches a
local page with a table of ROWS rows (clip `big`, public) and a paragraph
(clip `tiny`, public). Once the first check is stored, FLOOD clients each ask
for the big clip's HTML with a title of their own (`?title=flood-N`, a new
variant each), and half a second later the small clip's HTML is asked for,
ROUNDS times. The figures: the small clip's status and latency (median and
worst), the flood's statuses, and the daemon's peak RSS (VmHWM) before the
flood (the first check and both clips' XML) and after it. Figures go
to BENCHMARKS.md, "Hostile pages".
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def get(port, path, timeout=30):
    """Status and seconds of `GET path` over a fresh connection."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            return "timeout", time.monotonic() - start
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = line.split(" ")
    return (parts[1] if len(parts) > 1 else "none"), time.monotonic() - start


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/semclip"))
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--flood", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)

    with tempfile.TemporaryDirectory() as tmp:
        rows = "".join(f"<tr><td>k{i}<td>{i}<td>{i * 2}" for i in range(args.rows))
        page = f"<title>Big</title><p>Small clip</p><table><tr><th>Key<th>A<th>B{rows}</table>"
        with open(os.path.join(tmp, "big.html"), "w") as f:
            f.write(page)
        os.makedirs(os.path.join(tmp, "watches"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(os.path.join(tmp, "semclip.yaml"), "w") as f:
            f.write(f"database: state/semclip.db\nwatches: watches\nlisten: 127.0.0.1:{port}\n"
                    f"server: {{xslt: {ROOT}/xslt, render_threads: 2, request_timeout: 10s}}\n")
        with open(os.path.join(tmp, "watches", "big.yaml"), "w") as f:
            f.write(f"url: file://{tmp}/big.html\nschedule: {{every: 1h}}\n"
                    "clips:\n  big: {xpath: \"//table\", public: true}\n"
                    "  tiny: {xpath: \"/page/text[1]\", public: true}\n")
        log = open(os.path.join(tmp, "daemon.log"), "w")
        env = dict(os.environ, RUST_LOG="warn")
        daemon = subprocess.Popen([args.binary, "run", "--config", "semclip.yaml"],
                                  cwd=tmp, stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    status, _ = get(port, "/clips/big/tiny?format=xml", timeout=5)
                    if status == "200":
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    sys.exit("the daemon never served the first snapshot")
                time.sleep(0.5)
            before_flood_mb = round(peak_rss_mb(daemon.pid))
            small, flood = [], []
            for r in range(args.rounds):
                threads = []
                for n in range(args.flood):
                    def one(n=n):
                        flood.append(get(port, f"/clips/big/big?format=html&title=flood-{r}-{n}")[0])
                    t = threading.Thread(target=one)
                    t.start()
                    threads.append(t)
                time.sleep(0.5)
                small.append(get(port, f"/clips/big/tiny?format=html&title=small-{r}"))
                for t in threads:
                    t.join()
            result = {
                "rows": args.rows,
                "flood_per_round": args.flood,
                "small_statuses": [s for s, _ in small],
                "small_median_s": round(statistics.median(t for _, t in small), 3),
                "small_worst_s": round(max(t for _, t in small), 3),
                "flood_statuses": {s: flood.count(s) for s in sorted(set(flood))},
                "peak_rss_mb_before_flood": before_flood_mb,
                "peak_rss_mb": round(peak_rss_mb(daemon.pid)),
            }
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
