#!/usr/bin/env python3
"""Scale-out benchmark (issue 18): one round of N watches with SQLite, and
with PostgreSQL at 1, 2 and 4 replicas on this machine.

    python3 bench/replicas/run.py [--watches 10000] [--replicas 1,2,4]
                                  [--no-sqlite] [--claim-seconds 10]

Needs release builds (`cargo build --release --bin semclip --example
fixture_site`; SEMCLIP_TARGET_DIR if the target directory is elsewhere,
SEMCLIP_PROFILE=debug for the dev builds of `cargo build --bin semclip
--example fixture_site`) and
PostgreSQL's binaries ($SEMCLIP_PG_BINDIR, else the newest
/usr/lib/postgresql/<version>/bin). Python 3 standard library only.

What it does:

- starts the fixture site (examples/fixture_site.rs) with N quote pages
  (`/p/{i}.html`, 3.8 KB, no ETag: every check downloads and parses);
- starts a throwaway PostgreSQL cluster (initdb in a temporary directory,
  pg_ctl on a Unix socket there, no TCP; as root it runs as `nobody`, as
  tests/it/pg.rs does), with PostgreSQL's default durability settings and
  `pg_stat_statements` loaded (to count the claims);
- for each engine and replica count: writes one daemon file and N watch
  files (`schedule: {every: 1h}`, one threshold that never fires,
  `limits: {concurrency: 32, per_host: 32, host_spacing: 0s}`: the
  daemon benchmark's settings), starts the replicas (`semclip run`) at
  once on a new database, waits until every watch has been checked once
  (the `check finished` lines of their logs), and then reads:
  - semclip's CPU: utime+stime of every replica from /proc at that moment
    (start-up, loading N watch files, included);
  - PostgreSQL's CPU: the postmaster's utime+stime+cutime+cstime (its
    exited children) plus every live child's utime+stime, as a difference
    over the round;
  - the claims (`SELECT ... FOR UPDATE SKIP LOCKED` on `watch_claim`),
    all transactions of the database in the round (pg_stat_statements,
    pg_stat_database) and every statement with its calls per check;
- then, what the database sustains for claims alone: pgbench with the
  claim statement of src/store/claim.rs (insert the row at a first claim,
  lock it with SKIP LOCKED, decide on it, take the lease) on the database
  of the last run, 1, 2 and 4 clients, `--claim-seconds` each: claims per
  second (wall; the machine is shared, so also per CPU-second of
  PostgreSQL).

Results: a table on stdout and bench/replicas/results.json (each
statement with its calls, rows, plans, planning and execution times).
CPU-seconds, not wall time, are what count on a shared machine.

For looking into plans: SEMCLIP_BENCH_PG_OPTIONS adds server options to
the cluster (`-c ...`; keep pg_stat_statements in shared_preload_libraries
when setting it, e.g. with auto_explain), and SEMCLIP_BENCH_PG_LOG names a
file the server's log is copied to before the cluster is removed. Both
change what PostgreSQL's CPU measures; leave them unset for figures.
"""

import argparse
import json
import os
import platform
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
PROFILE = os.environ.get("SEMCLIP_PROFILE", "release")
SEMCLIP = os.environ.get("SEMCLIP_BIN", os.path.join(TARGET, PROFILE, "semclip"))
FIXTURE = os.path.join(TARGET, PROFILE, "examples", "fixture_site")
CONCURRENCY = 32
TICK = os.sysconf("SC_CLK_TCK")
PG_USER = "semclip"
PG_PORT = "5432"
GAZP = "//table[@label='Shares']/row[@key='GAZP']/cell[@col='Last']/@num"

# The claim of src/store/claim.rs (`CLAIM`, one statement), with every run
# due and every lease expired (`now` far ahead), so each one takes a lease.
CLAIM_SQL = """\\set w random(0, {last})
WITH stored AS (SELECT (SELECT next_run FROM watch_status WHERE watch = 'p' || :w) AS next_run),
fresh AS (INSERT INTO watch_claim (watch, owner, lease_until, next_run)
  SELECT 'p' || :w, CASE WHEN due THEN 'bench' END, CASE WHEN due THEN 0 END, next_run
  FROM (SELECT next_run, next_run IS NULL OR next_run <= 9000000000000000 AS due FROM stored) d
  ON CONFLICT (watch) DO NOTHING
  RETURNING CAST(NULL AS TEXT) AS owner, CAST(NULL AS BIGINT) AS lease_until, next_run, owner IS NOT NULL AS taken),
found AS (SELECT owner, lease_until, next_run FROM watch_claim WHERE watch = 'p' || :w
  AND (next_run IS NULL OR next_run <= 9000000000000000)
  AND (owner IS NULL OR owner = 'bench' OR lease_until IS NULL OR lease_until <= 9000000000000000)
  FOR UPDATE SKIP LOCKED),
took AS (UPDATE watch_claim c SET owner = 'bench', lease_until = 0 FROM found f
  WHERE c.watch = 'p' || :w RETURNING c.watch)
SELECT owner, lease_until, next_run, taken FROM fresh
UNION ALL SELECT owner, lease_until, next_run, EXISTS (SELECT 1 FROM took) FROM found
UNION ALL SELECT owner, lease_until, next_run, FALSE FROM watch_claim
  WHERE watch = 'p' || :w AND NOT EXISTS (SELECT 1 FROM found);
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read()
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {timeout} s")


def quote_page(i):
    """A quote page shaped like examples/fixture_site.rs's `/p/{i}.html` (a
    nav, a 20-row x 5-column table, a footer; about 3.8 KB), for
    `--python-fixture` when the Rust fixture is not built."""
    rows = []
    for r in range(20):
        h = (i * 2654435761 + r * 40503) % 1000003
        last, open_ = 1000 + h * 7 % 900000, 1000 + h * 13 % 900000
        rows.append(f"<tr><td><a href=\"/q/T{r}\"><b>{'GAZP' if r == 0 else f'T{r:03}'}</b></a></td>"
                    f"<td class=\"up\">{last // 100}.{last % 100:02}</td>"
                    f"<td>{open_ // 100}.{open_ % 100:02}</td><td>{last // 90}.00</td>"
                    f"<td>{last // 110}.00</td><td>{10000 + h * 31}</td></tr>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>Quotes board {i}</title>\n</head>\n<body>\n"
        "<nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/shares\">Shares</a></li>"
        "<li><a href=\"/bonds\">Bonds</a></li></ul></nav>\n<main>\n"
        f"<h1>Trading results, board {i}</h1>\n<table class=\"quotes\">\n<caption>Shares</caption>\n"
        "<thead><tr><th>Ticker</th><th>Last</th><th>Open</th><th>High</th><th>Low</th>"
        "<th>Volume</th></tr></thead>\n<tbody>\n" + "\n".join(rows) +
        "\n</tbody>\n</table>\n<p>Prices in roubles.</p>\n</main>\n<footer><p>Example Exchange "
        "Data.</p></footer>\n</body>\n</html>\n"
    ).encode()


def python_fixture(port, n):
    """Serves quote_page(i) at /p/{i}.html and ok at /health, from a thread."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = b"ok\n"
            if self.path.startswith("/p/") and self.path.endswith(".html"):
                body = quote_page(int(self.path[3:-5]))
            elif self.path != "/health":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def pg_bindir():
    env = os.environ.get("SEMCLIP_PG_BINDIR")
    if env:
        return env
    versions = []
    for v in os.listdir("/usr/lib/postgresql") if os.path.isdir("/usr/lib/postgresql") else []:
        b = os.path.join("/usr/lib/postgresql", v, "bin")
        if v.isdigit() and os.path.isfile(os.path.join(b, "initdb")):
            versions.append((int(v), b))
    if not versions:
        sys.exit("PostgreSQL's binaries are not installed (apt-get install postgresql)")
    return max(versions)[1]


def cpu_of(pid, children=False):
    """utime+stime (and cutime+cstime) of pid, in seconds; 0 when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command: state is fields[0]; utime is field 14 of stat.
    u, s, cu, cs = (int(x) for x in fields[11:15])
    return (u + s + (cu + cs if children else 0)) / TICK


def ppid_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class Cluster:
    """A throwaway PostgreSQL cluster on a Unix socket in a temporary directory."""

    def __init__(self, bindir):
        self.bin = bindir
        self.dir = tempfile.mkdtemp(prefix="semclip-bench-pg-")
        self.as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody", "nogroup" if _group("nogroup") else "nobody")
            self.as_user = ["runuser", "-u", "nobody", "--"]
        data = os.path.join(self.dir, "data")
        self._run([os.path.join(bindir, "initdb"), "-D", data, "-U", PG_USER, "-A", "trust",
                   "-E", "UTF8", "--no-locale"])
        opts = (f"-c listen_addresses='' -k {self.dir} -p {PG_PORT} -c max_connections=300 "
                "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on "
                + os.environ.get("SEMCLIP_BENCH_PG_OPTIONS", ""))
        self._run([os.path.join(bindir, "pg_ctl"), "-D", data, "-l",
                   os.path.join(self.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start"])
        with open(os.path.join(data, "postmaster.pid")) as f:
            self.postmaster = int(f.readline())
        self.n = 0

    def _run(self, cmd):
        out = subprocess.run(self.as_user + cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {out.stdout}{out.stderr}")

    def createdb(self):
        self.n += 1
        name = f"bench{self.n}"
        subprocess.run([os.path.join(self.bin, "createdb"), "-h", self.dir, "-p", PG_PORT,
                        "-U", PG_USER, name], check=True)
        self.psql(name, "CREATE EXTENSION pg_stat_statements")
        return name

    def url(self, name):
        return f"postgresql://{PG_USER}@{self.dir.replace('/', '%2F')}:{PG_PORT}/{name}"

    def psql(self, name, sql):
        out = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-At", "-v",
                              "ON_ERROR_STOP=1", "-h", self.dir, "-p", PG_PORT, "-U", PG_USER,
                              "-d", name, "-c", sql], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {out.stderr}")
        return out.stdout.strip()

    def cpu(self):
        """CPU seconds of the postmaster, its exited children and its live ones."""
        total = cpu_of(self.postmaster, children=True)
        for entry in os.listdir("/proc"):
            if entry.isdigit() and ppid_of(int(entry)) == self.postmaster:
                total += cpu_of(int(entry))
        return total

    def stop(self):
        subprocess.run(self.as_user + [os.path.join(self.bin, "pg_ctl"), "-D",
                                       os.path.join(self.dir, "data"), "-m", "fast", "stop"],
                       capture_output=True)
        if os.environ.get("SEMCLIP_BENCH_PG_LOG"):
            shutil.copy(os.path.join(self.dir, "server.log"), os.environ["SEMCLIP_BENCH_PG_LOG"])
        shutil.rmtree(self.dir, ignore_errors=True)


def _group(name):
    try:
        import grp
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def setup(work, database, base, n):
    os.makedirs(os.path.join(work, "watches"))
    with open(os.path.join(work, "semclip.yaml"), "w") as f:
        f.write(
            f"database: \"{database}\"\n"
            "watches: watches\n"
            "notifiers:\n  log:\n    file: {path: alerts.jsonl}\n"
            f"limits: {{concurrency: {CONCURRENCY}, per_host: {CONCURRENCY}, host_spacing: 0s}}\n"
        )
    for i in range(n):
        with open(os.path.join(work, "watches", f"p{i}.yaml"), "w") as f:
            f.write(
                f"url: {base}/p/{i}.html\n"
                "schedule: {every: 1h}\n"
                "thresholds:\n"
                "  - name: never\n"
                f"    xpath: \"{GAZP}\"\n"
                "    above: 8900\n"
                "    notify: [log]\n"
            )


def checked(paths):
    """Checks finished (and failed) in the replicas' logs."""
    done = failed = 0
    for p in paths:
        with open(p, errors="replace") as f:
            for line in f:
                if "check finished" in line:
                    done += 1
                    if "outcome=failed" in line or "outcome=blocked" in line:
                        failed += 1
    return done, failed


def run_round(work, database, base, n, replicas, cluster=None, dbname=None):
    setup(work, database, base, n)
    config = os.path.join(work, "semclip.yaml")
    pg0 = cluster.cpu() if cluster else 0.0
    xact0 = int(cluster.psql(dbname, "SELECT xact_commit FROM pg_stat_database "
                                     "WHERE datname = current_database()")) if cluster else 0
    logs = [os.path.join(work, f"replica-{r}.log") for r in range(replicas)]
    env = {k: v for k, v in os.environ.items() if k != "RUST_LOG"}
    t0 = time.monotonic()
    procs = []
    for p in logs:
        with open(p, "wb") as out:
            procs.append(subprocess.Popen([SEMCLIP, "run", "--log-level", "info", "--config",
                                           config], cwd=work, stdout=subprocess.DEVNULL,
                                          stderr=out, env=env))
    while True:
        time.sleep(0.5)
        done, failed = checked(logs)
        if done >= n:
            break
        for pr in procs:
            if pr.poll() is not None:
                raise RuntimeError(f"a replica exited ({pr.returncode}): see {work}")
        if time.monotonic() - t0 > 3600:
            raise RuntimeError("no full round within an hour")
    wall = time.monotonic() - t0
    semclip_cpu = [cpu_of(pr.pid) for pr in procs]
    result = {
        "engine": "postgres" if cluster else "sqlite",
        "replicas": replicas,
        "watches": n,
        "checks": done,
        "failed": failed,
        "wall_s": round(wall, 1),
        "semclip_cpu_s": round(sum(semclip_cpu), 2),
        "semclip_cpu_s_per_replica": [round(c, 2) for c in semclip_cpu],
        "checks_per_replica": [checked([p])[0] for p in logs],
    }
    if cluster:
        pg_cpu = cluster.cpu() - pg0
        xacts = int(cluster.psql(dbname, "SELECT xact_commit FROM pg_stat_database "
                                         "WHERE datname = current_database()")) - xact0
        claims = cluster.psql(
            dbname,
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = "
            "(SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND query LIKE '%FROM watch_claim%FOR UPDATE SKIP LOCKED%'")
        # Every statement of the round, by calls: what a check costs.
        statements = cluster.psql(
            dbname,
            "SELECT calls, rows, plans, round(total_plan_time::numeric, 1), "
            "round(total_exec_time::numeric, 1), regexp_replace(query, '\\s+', ' ', 'g') "
            "FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND query NOT LIKE '%pg_stat_%' ORDER BY calls DESC, query")
        result["statements"] = [
            {"calls": int(c), "rows": int(r), "per_check": round(int(c) / done, 2),
             "plans": int(p), "plan_ms": float(pt), "exec_ms": float(et), "query": q}
            for c, r, p, pt, et, q in (line.split("|", 5) for line in statements.splitlines())
        ]
        result.update({
            "postgres_cpu_s": round(pg_cpu, 2),
            "transactions": xacts,
            "claims": int(claims),
            "claims_per_postgres_cpu_s": round(int(claims) / pg_cpu, 0) if pg_cpu else None,
        })
    total = result["semclip_cpu_s"] + result.get("postgres_cpu_s", 0.0)
    result["total_cpu_s"] = round(total, 2)
    result["checks_per_semclip_cpu_s"] = round(done / result["semclip_cpu_s"], 1)
    result["checks_per_total_cpu_s"] = round(done / total, 1)
    result["cpu_ms_per_check"] = round(total / done * 1000, 3)
    for pr in procs:
        pr.send_signal(signal.SIGTERM)
    for pr in procs:
        try:
            pr.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
    return result


def claim_bench(cluster, dbname, n, seconds):
    """pgbench with the claim transaction: claims per second and per PG CPU-second."""
    script = os.path.join(cluster.dir, "claim.sql")
    with open(script, "w") as f:
        f.write(CLAIM_SQL.format(last=n - 1))
    os.chmod(script, 0o644)
    rows = []
    for clients in (1, 2, 4):
        cluster.psql(dbname, "DELETE FROM watch_claim")
        cpu0 = cluster.cpu()
        out = subprocess.run(
            [os.path.join(cluster.bin, "pgbench"), "-n", "-M", "prepared", "-f", script,
             "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(seconds),
             "-h", cluster.dir, "-p", PG_PORT, "-U", PG_USER, dbname],
            capture_output=True, text=True)
        # pgbench's backends exit after it does; their CPU is the
        # postmaster's children's once it has reaped them.
        time.sleep(2)
        cpu = cluster.cpu() - cpu0
        if out.returncode != 0:
            raise RuntimeError(f"pgbench: {out.stderr}")
        tx = next(int(line.split(":")[1].split("/")[0].strip()) for line in out.stdout.splitlines()
                  if line.startswith("number of transactions actually processed"))
        rows.append({
            "clients": clients,
            "claims": tx,
            "seconds": seconds,
            "claims_per_s": round(tx / seconds, 0),
            "postgres_cpu_s": round(cpu, 2),
            "claims_per_postgres_cpu_s": round(tx / cpu, 0) if cpu else None,
        })
        log(rows[-1])
    return rows


def machine():
    try:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
    except OSError:
        load = None
    return {"cpus": os.cpu_count(), "load_at_start": load, "platform": platform.platform()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--watches", type=int, default=10000)
    ap.add_argument("--replicas", default="1,2,4")
    ap.add_argument("--no-sqlite", action="store_true")
    ap.add_argument("--claim-seconds", type=int, default=10)
    ap.add_argument("--python-fixture", action="store_true",
                    help="serve the pages from this script, not examples/fixture_site.rs")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args()
    for exe in (SEMCLIP,) if args.python_fixture else (SEMCLIP, FIXTURE):
        if not os.path.exists(exe):
            sys.exit(f"{exe} missing: cargo build --release --bin semclip --example "
                     "fixture_site (or SEMCLIP_PROFILE=debug)")
    n = args.watches
    port = free_port()
    if args.python_fixture:
        fixture = python_fixture(port, n)
    else:
        fixture = subprocess.Popen([FIXTURE, "--listen", f"127.0.0.1:{port}", "--pages", str(n)],
                                   stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    cluster = None
    results = {"machine": machine(), "profile": PROFILE, "semclip": SEMCLIP,
               "python_fixture": args.python_fixture, "runs": [], "claims": []}
    work = tempfile.mkdtemp(prefix="semclip-bench-replicas-")
    try:
        wait_http(base + "/health")
        if not args.no_sqlite:
            r = run_round(os.path.join(work, "sqlite"), "semclip.db", base, n, 1)
            log(r)
            results["runs"].append(r)
        cluster = Cluster(pg_bindir())
        dbname = None
        for replicas in (int(x) for x in args.replicas.split(",")):
            dbname = cluster.createdb()
            r = run_round(os.path.join(work, f"pg-{replicas}"), cluster.url(dbname), base, n,
                          replicas, cluster, dbname)
            log(r)
            results["runs"].append(r)
        if dbname and args.claim_seconds > 0:
            results["claims"] = claim_bench(cluster, dbname, n, args.claim_seconds)
    finally:
        if args.python_fixture:
            fixture.shutdown()
        else:
            fixture.terminate()
            fixture.wait()
        if cluster:
            cluster.stop()
        shutil.rmtree(work, ignore_errors=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print_table(results)


def print_table(results):
    print(f"{'engine':10} {'repl':>4} {'checks':>7} {'wall s':>7} {'semclip cpu':>11} "
          f"{'pg cpu':>7} {'ms/check':>9} {'checks/cpu-s':>12} {'claims':>7} {'tx':>7}")
    for r in results["runs"]:
        print(f"{r['engine']:10} {r['replicas']:>4} {r['checks']:>7} {r['wall_s']:>7} "
              f"{r['semclip_cpu_s']:>11} {r.get('postgres_cpu_s', '-'):>7} "
              f"{r['cpu_ms_per_check']:>9} {r['checks_per_total_cpu_s']:>12} "
              f"{r.get('claims', '-'):>7} {r.get('transactions', '-'):>7}")
    sqlite = next((r for r in results["runs"] if r["engine"] == "sqlite"), None)
    if sqlite:
        for r in results["runs"]:
            if r["engine"] == "postgres":
                print(f"postgres x{r['replicas']}: {r['cpu_ms_per_check'] / sqlite['cpu_ms_per_check']:.2f}"
                      " x the CPU per check of SQLite")
    for c in results["claims"]:
        print(f"claims, {c['clients']} clients: {c['claims_per_s']}/s, "
              f"{c['claims_per_postgres_cpu_s']} per PostgreSQL CPU-second")


if __name__ == "__main__":
    main()
