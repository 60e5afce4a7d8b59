//! A throwaway PostgreSQL cluster for the tests, started by the tests: no
//! service needs to be running.
//!
//! The first test that asks for a database ([`database`]) starts one cluster
//! for the whole test binary: `initdb` in a new temporary directory, then
//! `pg_ctl start` listening on a Unix socket in that directory only (no TCP
//! port, so nothing collides with another cluster or test run), `fsync`
//! off. Each test gets a database of its own (`createdb`), named uniquely.
//!
//! **Teardown.** The cluster is run by a small shell script (the watchdog)
//! whose standard input is a pipe from this process. When the test binary
//! exits, however it exits, the pipe closes; the watchdog then runs
//! `pg_ctl stop -m immediate` and removes the directory.
//!
//! **Binaries.** `$SEMCLIP_PG_BINDIR` if set (and only there); else the newest
//! `/usr/lib/postgresql/<version>/bin` (where Debian's `postgresql` package
//! puts them, off `PATH`); else `pg_config --bindir`. When none has
//! `initdb`, a test that needs PostgreSQL says so and returns, or fails
//! when `CI` is set (`.ci/run` installs the package).
//!
//! **Root.** `initdb` and `postgres` refuse to run as root. As root (a CI
//! container, this machine) the watchdog runs as the user `nobody` through
//! `runuser` (util-linux, on every Debian system), with the temporary
//! directory given to `nobody`; the tests themselves connect as root over
//! the socket, which root can reach. As any other user everything runs as
//! that user.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use semclip::store::Database;

use crate::util::missing;

/// The cluster of this test binary.
pub struct Cluster {
    dir: PathBuf,
    bindir: PathBuf,
    next: AtomicU64,
    /// The watchdog and its standard input, held until the process exits
    /// (statics are never dropped: closing happens at exit).
    _watchdog: Mutex<(Child, ChildStdin)>,
}

/// Why there is no cluster.
enum NoCluster {
    /// PostgreSQL is not installed: skip (or fail under `CI`).
    Absent(String),
    /// It is installed but would not start: always a failure.
    Failed(String),
}

static CLUSTER: OnceLock<Result<Cluster, NoCluster>> = OnceLock::new();

/// The port in the socket's name (`.s.PGSQL.<port>`); nothing listens on
/// TCP.
const PORT: u16 = 5432;

/// The database superuser `initdb` creates, and the user tests log in as.
const USER: &str = "semclip";

/// Runs the cluster until its standard input closes. `$1`: the binaries,
/// `$2`: the directory.
const WATCHDOG: &str = r#"
bin=$1 dir=$2
if ! "$bin/initdb" -D "$dir/data" -U semclip -A trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
  echo "initdb failed:"; cat "$dir/initdb.log"; exit 1
fi
if ! "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $dir -p 5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null 2>&1; then
  echo "pg_ctl start failed:"; cat "$dir/server.log"; exit 1
fi
echo ready
cat >/dev/null
"$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
rm -rf "$dir"
"#;

/// A new, empty database for `test`, or `None` after saying why there is
/// none (PostgreSQL is not installed and `CI` is not set).
pub fn database(test: &str) -> Option<Database> {
    match CLUSTER.get_or_init(Cluster::start) {
        Ok(cluster) => Some(cluster.create_database()),
        Err(NoCluster::Absent(why)) => {
            missing(test, why);
            None
        }
        Err(NoCluster::Failed(why)) => panic!("{test}: cannot start PostgreSQL: {why}"),
    }
}

/// Runs one SQL command in `database` with `psql`, as the superuser: for
/// tests that damage or inspect a database behind the store's back.
pub fn psql(database: &Database, sql: &str) -> String {
    psql_in(&database_name(database), sql)
}

/// Runs one SQL command in the database named `name` (`postgres` to act on
/// a test database from outside it).
pub fn psql_in(name: &str, sql: &str) -> String {
    let Some(Ok(cluster)) = CLUSTER.get() else {
        panic!("psql without a cluster")
    };
    let out = Command::new(cluster.bindir.join("psql"))
        .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(&cluster.dir)
        .args(["-p", &PORT.to_string(), "-U", USER, "-d", name, "-c", sql])
        .output()
        .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
    assert!(
        out.status.success(),
        "psql -c {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The database name at the end of a test database's URL.
pub fn database_name(database: &Database) -> String {
    let url = database.to_string();
    url.rsplit('/').next().unwrap_or_default().to_owned()
}

/// The directory holding `initdb` and friends, if installed.
fn bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SEMCLIP_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        return dir.join("initdb").is_file().then_some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let bin = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && bin.join("initdb").is_file()).then_some(bin)
}

/// The output of `id ARGS`, as a number.
fn id(args: &[&str]) -> Result<u32, String> {
    let out = Command::new("id")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("`id {}` printed no number", args.join(" ")))
}

impl Cluster {
    fn start() -> Result<Cluster, NoCluster> {
        let bindir = bindir().ok_or_else(|| {
            NoCluster::Absent(
                "PostgreSQL's binaries (initdb, pg_ctl) are not installed \
                 (Debian: apt-get install postgresql; or set SEMCLIP_PG_BINDIR)"
                    .to_owned(),
            )
        })?;
        Cluster::start_with(bindir).map_err(NoCluster::Failed)
    }

    fn start_with(bindir: PathBuf) -> Result<Cluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("semclip-pg-")
            .tempdir()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?
            .keep();
        let mut command = if id(&["-u"])? == 0 {
            let uid = id(&["-u", "nobody"])?;
            let gid = id(&["-g", "nobody"])?;
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot give {} to nobody: {e}", dir.display()))?;
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--", "sh"]);
            c
        } else {
            Command::new("sh")
        };
        let mut child = command
            .args(["-c", WATCHDOG, "sh"])
            .arg(&bindir)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the cluster's watchdog: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the watchdog has no pipes".to_owned());
        };
        let mut stdout = BufReader::new(stdout);
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        if first.trim() != "ready" {
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            let _ = child.wait();
            return Err(format!("{first}{rest}"));
        }
        Ok(Cluster {
            dir,
            bindir,
            next: AtomicU64::new(0),
            _watchdog: Mutex::new((child, stdin)),
        })
    }

    /// A new database, with the URL the store is given.
    fn create_database(&self) -> Database {
        let name = format!("t{}", self.next.fetch_add(1, Ordering::Relaxed));
        let out = Command::new(self.bindir.join("createdb"))
            .arg("-h")
            .arg(&self.dir)
            .args(["-p", &PORT.to_string(), "-U", USER, &name])
            .output()
            .unwrap_or_else(|e| panic!("cannot run createdb: {e}"));
        assert!(
            out.status.success(),
            "createdb {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = self.url(&name, "");
        Database::parse(&url, Path::new("/")).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    /// The URL of database `name`, with `query` appended.
    pub fn url(&self, name: &str, query: &str) -> String {
        let host = self.dir.display().to_string().replace('/', "%2F");
        format!("postgresql://{USER}@{host}:{PORT}/{name}{query}")
    }
}

/// The URL of a test database with `query` appended (`?sslmode=require`).
pub fn url_with(database: &Database, query: &str) -> String {
    let Some(Ok(cluster)) = CLUSTER.get() else {
        panic!("url_with without a cluster")
    };
    cluster.url(&database_name(database), query)
}
