#!/usr/bin/env python3
"""Load benchmark of the clip server (issue 5), with wrk on loopback.

Starts the fixture site (examples/fixture_site.rs) and `semclip run` with one
watch of one of its pages (checked once an hour, so nothing changes during
the run) and clips of its quote table, waits for the first snapshot, then
runs wrk (2 threads, 64 connections, 10 s each) against:

  baseline  GET /healthz: the same server and layers, no clip work
  xml       GET /clips/bench/quotes (cached clip, 200 with the body)
  xml-304   the same with If-None-Match: the clip's ETag (304, no body)
  json      GET /clips/bench/quotes?format=json
  html      GET /clips/bench/quotes?format=html (XSLT output, cached)
  page      GET /clips/bench (the whole hierarchy)

and reports requests per second, p50/p99 latency and the ratio to the
baseline measured in the same run. Then it restarts the server with
`server.max_in_flight: 8` and loads the status page (store reads on
blocking threads) with 512 connections:
the server must shed with 503 and keep answering (no socket errors, p99
stays bounded) rather than queue or fail.

wrk and the server share the machine's cores, so figures are lower than
on separate machines; compare ratios, not absolute numbers.

Needs `cargo build --release --bin semclip --example fixture_site` and wrk
(Debian: apt-get install wrk). Writes bench/serve/results.json.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SEMCLIP = os.path.join(TARGET, "release", "semclip")
FIXTURE = os.path.join(TARGET, "release", "examples", "fixture_site")
DURATION = os.environ.get("BENCH_DURATION", "10s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, headers=None, timeout=5):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def wait(url, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            status, headers, body = get(url)
            if status == 200:
                return headers, body
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"{url} did not answer 200 within {timeout}s")


def parse_ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    if not m:
        return None
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v


def wrk(url, connections=64, headers=()):
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{DURATION}", "--latency", url]
    for h in headers:
        cmd[1:1] = ["-H", h]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = parse_ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = parse_ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "requests": total,
        "non_2xx_3xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(int(x) for x in errors.groups()) if errors else 0,
        "raw": out,
    }


def start(work, port, site_port, max_in_flight=None):
    server = "server:\n  xslt: " + os.path.join(ROOT, "xslt") + "\n"
    if max_in_flight:
        server += f"  max_in_flight: {max_in_flight}\n"
    with open(os.path.join(work, "semclip.yaml"), "w") as f:
        f.write(f"database: semclip.db\nwatches: watches\nlisten: 127.0.0.1:{port}\n{server}")
    os.makedirs(os.path.join(work, "watches"), exist_ok=True)
    with open(os.path.join(work, "watches", "bench.yaml"), "w") as f:
        f.write(
            f"url: http://127.0.0.1:{site_port}/p/7.html\nschedule: {{every: 1h}}\n"
            "clips:\n  quotes:\n    xpath: \"//table\"\n"
        )
    log = open(os.path.join(work, "semclip.log"), "a")
    p = subprocess.Popen([SEMCLIP, "run", "--log-level", "warn", "--config",
                          os.path.join(work, "semclip.yaml")], stdout=log, stderr=log)
    return p


def main():
    for exe in (SEMCLIP, FIXTURE):
        if not os.path.exists(exe):
            sys.exit(f"{exe} missing: cargo build --release --bin semclip --example fixture_site")
    if not shutil.which("wrk"):
        sys.exit("wrk missing: apt-get install wrk")
    work = tempfile.mkdtemp(prefix="semclip-serve-bench-")
    site_port, port = free_port(), free_port()
    site = subprocess.Popen([FIXTURE, "--listen", f"127.0.0.1:{site_port}", "--pages", "10"])
    results = {"duration": DURATION, "cpus": os.cpu_count(), "runs": {}}
    server = None
    try:
        wait(f"http://127.0.0.1:{site_port}/health")
        server = start(work, port, site_port)
        base = f"http://127.0.0.1:{port}"
        headers, _ = wait(f"{base}/clips/bench/quotes")
        etag = headers["etag"] if "etag" in headers else headers["ETag"]
        status, _, _ = get(f"{base}/clips/bench/quotes", {"If-None-Match": etag})
        assert status == 304, status
        wait(f"{base}/clips/bench/quotes?format=html")
        cases = [
            ("baseline", f"{base}/healthz", ()),
            ("xml", f"{base}/clips/bench/quotes", ()),
            ("xml-304", f"{base}/clips/bench/quotes", (f"If-None-Match: {etag}",)),
            ("json", f"{base}/clips/bench/quotes?format=json", ()),
            ("html", f"{base}/clips/bench/quotes?format=html", ()),
            ("page", f"{base}/clips/bench", ()),
        ]
        for name, url, hdrs in cases:
            r = wrk(url, headers=hdrs)
            results["runs"][name] = r
            print(f"{name:9} {r['rps']:>10.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
                  f"  non-2xx/3xx {r['non_2xx_3xx']}  socket errors {r['socket_errors']}", flush=True)
        server.terminate()
        server.wait(timeout=30)

        # Overload: a tiny in-flight limit and 512 connections on the status
        # page, which reads the store on a blocking thread (a cached clip is
        # answered before the next request is read, so it never piles up).
        server = start(work, port, site_port, max_in_flight=8)
        wait(f"{base}/status/bench")
        r = wrk(f"{base}/status/bench", connections=512)
        results["runs"]["overload"] = r
        print(f"overload  {r['rps']:>10.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
              f"  503s {r['non_2xx_3xx']} of {r['requests']}  socket errors {r['socket_errors']}",
              flush=True)
        status, _, _ = get(f"{base}/status/bench")
        results["after_overload_status"] = status
        print(f"after the overload: /status/bench answers {status}", flush=True)
    finally:
        if server:
            server.terminate()
        site.terminate()
    base_rps = results["runs"]["baseline"]["rps"]
    print("\nratio to the /healthz baseline of this run:")
    for name, r in results["runs"].items():
        if name not in ("baseline", "overload"):
            print(f"  {name:9} {r['rps'] / base_rps:.2f}")
    for r in results["runs"].values():
        r.pop("raw", None)
    with open(os.path.join(ROOT, "bench", "serve", "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
