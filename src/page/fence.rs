//! The fence around local files and internal hosts: which files a `file://`
//! watch may read, and which addresses the daemon's fetches may reach.
//!
//! Takes the daemon file's `fetch` policy ([`Fence`]) and gives the checks
//! the configuration ([`Fence::check_file_url`], [`Fence::check_watch_url`])
//! and the fetcher ([`Fence::route`], [`Fence::read_file`],
//! [`FencedResolver`]) apply.
//!
//! # The threat
//!
//! A watch's page becomes clips and feeds that others read, some without a
//! token (`public: true`). A `file://` watch of `/etc/shadow` or
//! `/proc/self/environ` (every `{env:}` secret, the admin token too) would
//! serve that file; a remote page answering `302 Location:
//! http://169.254.169.254/...` or `http://127.0.0.1:6379/` would make the
//! daemon fetch an internal service and publish the answer.
//!
//! # Guarantees
//!
//! - A `file://` watch reads only files under the file roots (default: the
//!   watches directory's parent). `semclip validate` and every load refuse a
//!   URL outside them; each fetch checks again where the *opened* file
//!   really is (on Linux the kernel's own answer, `/proc/self/fd`), so a
//!   symlink or `..` planted after validation does not escape. Only regular
//!   files are read: a FIFO, a device or a directory is refused, and opening
//!   one never blocks.
//! - A redirect is followed only to `http` and `https` (never `file:`), and
//!   never to a loopback, private, link-local (cloud metadata:
//!   169.254.169.254, `fd00:ec2::254`), shared (CGNAT), multicast, reserved
//!   or otherwise non-public address ([`non_public`]), unless
//!   `fetch.allow_private` or an `fetch.allow_hosts` entry admits it.
//! - Host names are judged by the addresses they resolve to, not by their
//!   text: the fetcher's resolver ([`FencedResolver`]) drops the addresses
//!   the fence refuses, and the connection goes to the addresses it
//!   checked, so DNS rebinding (a name that answers a public address to the
//!   check and a private one to the connection) does not get through.
//!
//! # Decisions
//!
//! - **Watch URLs are trusted by default.** The operator wrote them, and the
//!   bundled demo and many deployments watch `127.0.0.1` or an intranet
//!   host. Trust covers the watch's own host *and port*: a redirect from
//!   `http://127.0.0.1:8787/` to `/other` stays trusted, one to
//!   `http://127.0.0.1:6379/` does not. `fetch.trust_watch_urls: false` holds
//!   watch URLs to the redirect rule as well (literal addresses are then
//!   refused by `validate`, names when they resolve).
//! - **Mixed answers.** A name resolving to both public and private
//!   addresses connects to the public ones only; it is refused when none is
//!   left.
//! - **Proxies.** Through a proxy the proxy resolves names, so the resolver
//!   cannot see them: semclip then resolves the redirect's host itself
//!   before the request and refuses it as above (best effort: the proxy
//!   resolves again). Fence internal addresses at the proxy as well. The
//!   proxy's own host is always reachable.
//! - **One-shot commands are not fenced.** `semclip hierarchy FILE` and the
//!   other CLI commands read what the user names, as `cat` would.

use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use url::{Host, Url};

/// The daemon's fetch policy: the file roots and the address rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// Directories `file://` watches may read under (absolute, as
    /// configured; symlinks are resolved when checking). Empty: no `file://`
    /// watch at all.
    pub file_roots: Vec<PathBuf>,
    /// Redirects (and untrusted watch URLs) may reach any address.
    pub allow_private: bool,
    /// Hosts and networks admitted even when internal.
    pub allow_hosts: Vec<AllowHost>,
    /// A watch's own host and port are exempt from the address rule.
    pub trust_watch_urls: bool,
}

impl Default for Fence {
    /// Nothing admitted: no file roots, no internal addresses, watch URLs
    /// trusted.
    fn default() -> Fence {
        Fence {
            file_roots: Vec::new(),
            allow_private: false,
            allow_hosts: Vec::new(),
            trust_watch_urls: true,
        }
    }
}

/// What the fence refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// A redirect, or an untrusted watch URL, leads to an internal address.
    #[error(
        "refused {} private address {address} ({kind}) at {url}: admit it with \
         fetch.allow_private or fetch.allow_hosts in the daemon file",
        if *.redirect { "redirect to" } else { "watch URL at" }
    )]
    PrivateAddress {
        /// Whether a redirect led there (else it is the watch's own URL).
        redirect: bool,
        /// The URL asked for (boxed: errors stay small).
        url: Box<Url>,
        /// The refused address.
        address: IpAddr,
        /// What kind of address it is ([`non_public`]).
        kind: &'static str,
    },
    /// A redirect to a scheme other than `http` and `https`.
    #[error("refused redirect to `{url}`: only http and https redirects are followed")]
    Scheme {
        /// Where the redirect pointed (boxed: errors stay small).
        url: Box<Url>,
    },
    /// A file outside every file root.
    #[error(
        "`{}` is outside the file roots ({}): add a directory holding it to fetch.file_roots \
         in the daemon file",
        path.display(),
        roots_text(roots)
    )]
    OutsideRoots {
        /// The file, as named.
        path: PathBuf,
        /// The file roots in force.
        roots: Vec<PathBuf>,
    },
    /// A file path with a `..` component.
    #[error("`{}` has a `..` component: name the file by its own path", path.display())]
    DotDot {
        /// The file, as named.
        path: PathBuf,
    },
    /// Something other than a regular file.
    #[error("`{}` is a {kind}, not a regular file", path.display())]
    NotRegular {
        /// The file, as named.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
}

/// The roots for a message: `none configured` or a comma-separated list.
fn roots_text(roots: &[PathBuf]) -> String {
    if roots.is_empty() {
        return "none configured".to_owned();
    }
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An `allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowHost {
    /// A host name (lower case, IDNA), any port.
    Name(String),
    /// A host name on one port.
    NamePort(String, u16),
    /// A network (a bare address is a /32 or /128), any port.
    Net(IpAddr, u8),
    /// One address on one port.
    AddrPort(SocketAddr),
}

impl AllowHost {
    /// Parses `example.internal`, `example.internal:8080`, `10.1.2.3`,
    /// `10.1.2.3:8080`, `[fd00::1]:8080`, `10.0.0.0/8` or `fd00::/8` (host
    /// bits are cleared).
    pub fn parse(text: &str) -> Result<AllowHost, String> {
        let t = text.trim();
        let bad = |why: &str| {
            format!(
                "`{text}` {why}: write a host name, HOST:PORT, an IP address, IP:PORT or a CIDR network like 10.0.0.0/8"
            )
        };
        if t.is_empty() {
            return Err(bad("is empty"));
        }
        if let Some((addr, len)) = t.split_once('/') {
            let addr: IpAddr = addr
                .trim_matches(|c| c == '[' || c == ']')
                .parse()
                .map_err(|_| bad("is not a network"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len: u8 = len
                .parse()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| bad("has a bad prefix length"))?;
            return Ok(AllowHost::Net(mask(addr, len), len));
        }
        if let Ok(ip) = t.trim_matches(|c| c == '[' || c == ']').parse::<IpAddr>() {
            let len = if ip.is_ipv4() { 32 } else { 128 };
            return Ok(AllowHost::Net(ip, len));
        }
        if let Ok(sa) = t.parse::<SocketAddr>() {
            return Ok(AllowHost::AddrPort(sa));
        }
        let (name, port) = match t.rsplit_once(':') {
            Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
                let port: u16 = port.parse().map_err(|_| bad("has a bad port"))?;
                (name, Some(port))
            }
            _ => (t, None),
        };
        let name = match Host::parse(name) {
            Ok(Host::Domain(d)) => d.trim_end_matches('.').to_owned(),
            Ok(Host::Ipv4(ip)) => {
                // Numeric forms like 127.1 are addresses, as in URLs.
                return Ok(match port {
                    Some(p) => AllowHost::AddrPort(SocketAddr::new(IpAddr::V4(ip), p)),
                    None => AllowHost::Net(IpAddr::V4(ip), 32),
                });
            }
            Ok(Host::Ipv6(_)) | Err(_) => return Err(bad("is not a host name")),
        };
        if name.is_empty() {
            return Err(bad("is not a host name"));
        }
        Ok(match port {
            Some(p) => AllowHost::NamePort(name, p),
            None => AllowHost::Name(name),
        })
    }

    /// Whether this entry admits host name `name` on `port`.
    fn admits_name(&self, name: &str, port: u16) -> bool {
        let name = name.trim_end_matches('.');
        match self {
            AllowHost::Name(n) => n.eq_ignore_ascii_case(name),
            AllowHost::NamePort(n, p) => *p == port && n.eq_ignore_ascii_case(name),
            AllowHost::Net(..) | AllowHost::AddrPort(_) => false,
        }
    }

    /// Whether this entry admits address `ip` on any port.
    fn admits_ip(&self, ip: IpAddr) -> bool {
        match *self {
            AllowHost::Net(net, len) => {
                let ip = canonical(ip);
                ip.is_ipv4() == net.is_ipv4() && mask(ip, len) == net
            }
            _ => false,
        }
    }

    /// Whether this entry admits address `ip` on `port`.
    fn admits_socket(&self, ip: IpAddr, port: u16) -> bool {
        match *self {
            AllowHost::AddrPort(sa) => sa.port() == port && canonical(sa.ip()) == canonical(ip),
            _ => self.admits_ip(ip),
        }
    }
}

impl fmt::Display for AllowHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllowHost::Name(n) => f.write_str(n),
            AllowHost::NamePort(n, p) => write!(f, "{n}:{p}"),
            AllowHost::Net(ip, len) => write!(f, "{ip}/{len}"),
            AllowHost::AddrPort(sa) => write!(f, "{sa}"),
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is; others as given.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// `ip` with all but its first `len` bits cleared.
fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX
                .checked_shl(32 - u32::from(len.min(32)))
                .unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & kept))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX
                .checked_shl(128 - u32::from(len.min(128)))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & kept))
        }
    }
}

/// Whether the first `len` bits of `ip` are those of `net`.
fn in_v4(ip: Ipv4Addr, net: [u8; 4], len: u8) -> bool {
    mask(IpAddr::V4(ip), len) == IpAddr::V4(Ipv4Addr::from(net))
}

/// Whether the first `len` bits of `ip` are those of `net`.
fn in_v6(ip: Ipv6Addr, net: [u16; 8], len: u8) -> bool {
    mask(IpAddr::V6(ip), len) == IpAddr::V6(Ipv6Addr::from(net))
}

/// What kind of non-public address `ip` is, or `None` for a public
/// (globally routable unicast) one.
///
/// Covers the IANA special-purpose registries: loopback, private (RFC 1918),
/// shared (CGNAT, 100.64/10, where Alibaba's metadata service lives),
/// link-local (169.254/16, where AWS, GCP and Azure serve instance metadata
/// and credentials), "this network" (0/8: 0.0.0.0 reaches the local host on
/// Linux), IETF protocol assignments (192.0.0/24, Oracle's metadata at
/// 192.0.0.192), documentation, benchmarking, multicast, reserved and
/// broadcast; for IPv6, the unspecified and loopback addresses, unique
/// local (fc00::/7, AWS metadata at `fd00:ec2::254`), link-local,
/// site-local, multicast, documentation, discard, and the IPv4 address
/// inside IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96) and 6to4
/// addresses, judged as IPv4.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const TABLE: [([u8; 4], u8, &str); 16] = [
        ([0, 0, 0, 0], 8, "\"this network\", reaches this host"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "shared, carrier-grade NAT"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local, cloud metadata"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "IETF protocol assignments"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 88, 99, 0], 24, "reserved"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([255, 255, 255, 255], 32, "broadcast"),
        ([240, 0, 0, 0], 4, "reserved"),
    ];
    // The first match counts: broadcast before the reserved block holding it.
    TABLE
        .iter()
        .find(|(net, len, _)| in_v4(ip, *net, *len))
        .map(|(_, _, kind)| *kind)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-mapped (::ffff:0:0/96) and IPv4-compatible (::/96, deprecated).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return non_public_v4(embedded(s[6], s[7]));
    }
    // NAT64, well-known prefix: a gateway forwards to the IPv4 address.
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return non_public_v4(embedded(s[6], s[7]));
    }
    // 6to4: the IPv4 address follows the prefix.
    if s[0] == 0x2002 {
        return non_public_v4(embedded(s[1], s[2]));
    }
    const TABLE: [([u16; 8], u8, &str); 7] = [
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "NAT64, local use"),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
        (
            [0xfc00, 0, 0, 0, 0, 0, 0, 0],
            7,
            "unique local, cloud metadata",
        ),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
    ];
    TABLE
        .iter()
        .find(|(net, len, _)| in_v6(ip, *net, *len))
        .map(|(_, _, kind)| *kind)
}

/// Which client a request goes out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Any address: a trusted watch URL, an admitted host, or
    /// `allow_private`.
    Open,
    /// Through [`FencedResolver`]: a host name whose addresses must be
    /// public or admitted.
    Fenced,
}

impl Fence {
    /// Whether `ip` may be connected to without further ado: public, or
    /// admitted by `allow_private` or a network in `allow_hosts`.
    pub fn admits_ip(&self, ip: IpAddr) -> bool {
        self.allow_private
            || non_public(ip).is_none()
            || self.allow_hosts.iter().any(|a| a.admits_ip(ip))
    }

    /// How to request `target`, reached from the watch URL `start` after
    /// `redirects` redirects (0: `target` is `start`).
    ///
    /// # Errors
    ///
    /// [`FenceError::Scheme`] for a redirect to another scheme than http and
    /// https, [`FenceError::PrivateAddress`] for a literal internal address
    /// the policy refuses. Host names are judged later, on their addresses.
    pub fn route(&self, start: &Url, target: &Url, redirects: usize) -> Result<Route, FenceError> {
        if !matches!(target.scheme(), "http" | "https") {
            return Err(FenceError::Scheme {
                url: Box::new(target.clone()),
            });
        }
        if self.allow_private {
            return Ok(Route::Open);
        }
        let port = target.port_or_known_default().unwrap_or(0);
        let same_origin =
            target.host() == start.host() && port == start.port_or_known_default().unwrap_or(0);
        if self.trust_watch_urls && same_origin {
            return Ok(Route::Open);
        }
        self.route_untrusted(target, redirects > 0)
    }

    /// How to request `target` when no trust of a watch URL covers it:
    /// literal addresses judged here, names left to their addresses.
    fn route_untrusted(&self, target: &Url, redirect: bool) -> Result<Route, FenceError> {
        let port = target.port_or_known_default().unwrap_or(0);
        let ip = match target.host() {
            Some(Host::Domain(name)) => {
                return Ok(
                    if self.allow_hosts.iter().any(|a| a.admits_name(name, port)) {
                        Route::Open
                    } else {
                        Route::Fenced
                    },
                );
            }
            Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
            None => return Ok(Route::Fenced),
        };
        match non_public(ip) {
            None => Ok(Route::Open),
            Some(_) if self.allow_hosts.iter().any(|a| a.admits_socket(ip, port)) => {
                Ok(Route::Open)
            }
            Some(kind) => Err(FenceError::PrivateAddress {
                redirect,
                url: Box::new(target.clone()),
                address: ip,
                kind,
            }),
        }
    }

    /// Judges one request a page rendered for the watch URL `watch` makes
    /// (its navigation, a redirect, a frame, a subresource, a script's
    /// `fetch`, a worker's script; see [`crate::page::browser`]): http and
    /// https only; the watch's own origin (scheme, host and port) trusted
    /// as for an HTTP fetch, any other URL held to the redirect rule, a
    /// name by the addresses semclip resolves it to (one refused, or none
    /// found: refused). Gives why a request is refused.
    ///
    /// Decision: the browser resolves the name again to connect, so a name
    /// that answers a public address to semclip and an internal one to the
    /// browser a moment later (DNS rebinding) is not stopped here, as with
    /// a proxy (module docs); literal addresses and honest names are.
    ///
    /// # Errors
    ///
    /// Why the request is refused, for the check's diagnostics.
    pub async fn judge_request(&self, watch: &Url, target: &Url) -> Result<(), String> {
        if !matches!(target.scheme(), "http" | "https") {
            return Err(format!(
                "scheme `{}`: only http and https are requested",
                target.scheme()
            ));
        }
        if self.allow_private || (self.trust_watch_urls && target.origin() == watch.origin()) {
            return Ok(());
        }
        match self.route_untrusted(target, true) {
            Err(FenceError::PrivateAddress { address, kind, .. }) => {
                Err(format!("{kind} address {address}"))
            }
            Err(error) => Err(error.to_string()),
            Ok(Route::Open) => Ok(()),
            Ok(Route::Fenced) => {
                let Some(Host::Domain(name)) = target.host() else {
                    return Err("no host".to_owned());
                };
                let port = target.port_or_known_default().unwrap_or(0);
                let found: Vec<SocketAddr> = match tokio::net::lookup_host((name, port)).await {
                    Ok(found) => found.collect(),
                    Err(error) => return Err(format!("{name} cannot be resolved: {error}")),
                };
                if found.is_empty() {
                    return Err(format!("{name} has no address"));
                }
                // Every address must be admitted, not one (as the fenced
                // resolver asks): the browser picks its own among them.
                match found.iter().find(|a| !self.admits_ip(a.ip())) {
                    Some(refused) => Err(format!(
                        "{name} resolves to {} ({})",
                        refused.ip(),
                        non_public(refused.ip()).unwrap_or("refused")
                    )),
                    None => Ok(()),
                }
            }
        }
    }

    /// The check `validate` makes of an http(s) watch URL: with
    /// `trust_watch_urls: false`, a literal internal address is refused.
    ///
    /// # Errors
    ///
    /// [`FenceError::PrivateAddress`].
    pub fn check_watch_url(&self, url: &Url) -> Result<(), FenceError> {
        if self.trust_watch_urls {
            return Ok(());
        }
        self.route(url, url, 0).map(|_| ())
    }

    /// The check `validate` makes of a `file://` watch's path: no `..`,
    /// and under a file root once symlinks are resolved (the file itself may
    /// not exist yet: its nearest existing ancestor is resolved).
    ///
    /// # Errors
    ///
    /// [`FenceError::DotDot`] and [`FenceError::OutsideRoots`].
    pub fn check_file_url(&self, path: &Path) -> Result<(), FenceError> {
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(FenceError::DotDot {
                path: path.to_owned(),
            });
        }
        if self.inside_roots(&resolve_lenient(path)) {
            Ok(())
        } else {
            Err(self.outside(path))
        }
    }

    /// Whether the resolved path `real` is under a resolved file root.
    fn inside_roots(&self, real: &Path) -> bool {
        self.file_roots
            .iter()
            .any(|root| real.starts_with(resolve_lenient(root)))
    }

    fn outside(&self, path: &Path) -> FenceError {
        FenceError::OutsideRoots {
            path: path.to_owned(),
            roots: self.file_roots.clone(),
        }
    }

    /// Reads the page file at `path` for a `file://` watch (blocking: call
    /// from a blocking thread): opened without blocking, checked to be a
    /// regular file whose real location is under a file root, then read up
    /// to `limit` bytes.
    ///
    /// # Errors
    ///
    /// [`FencedRead::Fence`] when the fence refuses the file,
    /// [`FencedRead::TooLarge`] past `limit`, [`FencedRead::Io`] when it
    /// cannot be opened or read.
    pub fn read_file(&self, path: &Path, limit: u64) -> Result<Vec<u8>, FencedRead> {
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(FencedRead::Fence(FenceError::DotDot {
                path: path.to_owned(),
            }));
        }
        let file = open_nonblocking(path).map_err(FencedRead::Io)?;
        let real = real_path(&file, path).map_err(FencedRead::Io)?;
        if !self.inside_roots(&real) {
            return Err(FencedRead::Fence(self.outside(path)));
        }
        read_regular_open(file, path, limit)
    }
}

/// Why [`Fence::read_file`] or [`read_regular`] failed.
#[derive(Debug)]
pub enum FencedRead {
    /// The fence refused the file.
    Fence(FenceError),
    /// The file holds more than the limit.
    TooLarge,
    /// It could not be opened or read.
    Io(io::Error),
}

/// Reads the regular file at `path` (blocking), at most `limit` bytes,
/// without ever blocking on a FIFO or reading an endless device: the file
/// is opened non-blocking and must be a regular file. Symlinks are
/// followed.
///
/// # Errors
///
/// [`FencedRead::Fence`] with [`FenceError::NotRegular`] for anything but a
/// regular file, [`FencedRead::TooLarge`], [`FencedRead::Io`].
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FencedRead> {
    let file = open_nonblocking(path).map_err(FencedRead::Io)?;
    read_regular_open(file, path, limit)
}

/// Checks that the opened `file` is a regular file, then reads it under
/// `limit`.
fn read_regular_open(file: std::fs::File, path: &Path, limit: u64) -> Result<Vec<u8>, FencedRead> {
    let metadata = file.metadata().map_err(FencedRead::Io)?;
    if !metadata.is_file() {
        return Err(FencedRead::Fence(FenceError::NotRegular {
            path: path.to_owned(),
            kind: file_kind(&metadata.file_type()),
        }));
    }
    if metadata.len() > limit {
        return Err(FencedRead::TooLarge);
    }
    // The length may change while reading: the read is capped as well.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FencedRead::Io)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(FencedRead::TooLarge);
    }
    Ok(bytes)
}

/// Opens `path` for reading; on Unix with `O_NONBLOCK`, so that opening a
/// FIFO with no writer returns at once instead of waiting for one (the flag
/// changes nothing for a regular file).
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Where the opened `file` really is: on Linux the kernel's answer for its
/// descriptor (no race with a symlink swapped in after opening), elsewhere
/// `path` with its symlinks resolved.
fn real_path(file: &std::fs::File, path: &Path) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return Ok(real);
        }
    }
    let _ = file;
    std::fs::canonicalize(path)
}

/// What a non-regular file is, for messages.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        return "directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_socket() {
            return "socket";
        }
        if t.is_char_device() {
            return "character device";
        }
        if t.is_block_device() {
            return "block device";
        }
    }
    "special file"
}

/// `path` made absolute with its symlinks resolved as far as it exists:
/// the nearest existing ancestor is canonicalized and the rest appended
/// (with `..` in the rest applied lexically).
pub fn resolve_lenient(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut existing = absolute.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                if *part == ".." {
                    out.pop();
                } else if *part != "." {
                    out.push(part);
                }
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            (Some(parent), None) => {
                // `..` or `.` at the end: keep it for the lexical pass.
                rest.push(
                    existing
                        .components()
                        .next_back()
                        .map_or(std::ffi::OsStr::new("."), |c| c.as_os_str()),
                );
                existing = parent;
            }
            (None, _) => return absolute,
        }
    }
}

/// The resolver of the fenced clients: resolves a name as the system does
/// and keeps only the addresses the fence admits, so the connection goes to
/// a checked address. A name left with none fails with
/// [`ResolverRefusal`].
#[derive(Debug, Clone)]
pub struct FencedResolver {
    fence: Arc<Fence>,
    /// Proxy hosts: always reachable.
    proxies: Arc<Vec<String>>,
}

impl FencedResolver {
    /// A resolver for `fence`, letting the `proxies` hosts through.
    pub fn new(fence: Arc<Fence>, proxies: Vec<String>) -> FencedResolver {
        FencedResolver {
            fence,
            proxies: Arc::new(proxies),
        }
    }
}

/// A name resolved only to addresses the fence refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} resolves only to refused addresses, such as {address} ({kind})")]
pub struct ResolverRefusal {
    /// The name.
    pub host: String,
    /// One refused address.
    pub address: IpAddr,
    /// Its kind ([`non_public`]).
    pub kind: &'static str,
}

/// The addresses of `host` the fence admits: Ok with at least one, or the
/// refusal naming one refused address.
pub fn admitted(
    fence: &Fence,
    host: &str,
    addresses: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, ResolverRefusal> {
    let mut kept = Vec::new();
    let mut refused = None;
    for address in addresses {
        if fence.admits_ip(address.ip()) {
            kept.push(address);
        } else if refused.is_none() {
            refused = Some(address.ip());
        }
    }
    match refused {
        Some(address) if kept.is_empty() => Err(ResolverRefusal {
            host: host.to_owned(),
            address,
            kind: non_public(address).unwrap_or("refused"),
        }),
        _ => Ok(kept),
    }
}

impl reqwest::dns::Resolve for FencedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let fence = Arc::clone(&self.fence);
        let proxies = Arc::clone(&self.proxies);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = if proxies.iter().any(|p| p.eq_ignore_ascii_case(&host)) {
                found
            } else {
                admitted(&fence, &host, found)?
            };
            let addrs: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for (addr, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.20.30.40", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local, cloud metadata"),
            ("100.100.100.200", "shared, carrier-grade NAT"),
            ("192.0.0.192", "IETF protocol assignments"),
            ("0.0.0.0", "\"this network\", reaches this host"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fd00:ec2::254", "unique local, cloud metadata"),
            ("fe80::1", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local, cloud metadata"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local, cloud metadata"),
            ("2002:7f00:1::", "loopback"),
            ("ff02::1", "multicast"),
        ] {
            assert_eq!(non_public(ip(addr)), Some(kind), "{addr}");
        }
        for addr in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "169.255.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "2002:808:808::",
        ] {
            assert_eq!(non_public(ip(addr)), None, "{addr}");
        }
    }

    #[test]
    fn allow_entries_parse_and_match() {
        let p = |s: &str| AllowHost::parse(s).unwrap();
        assert_eq!(
            p("Intranet.Example."),
            AllowHost::Name("intranet.example".into())
        );
        assert_eq!(
            p("wiki.corp:8080"),
            AllowHost::NamePort("wiki.corp".into(), 8080)
        );
        assert_eq!(p("10.1.2.3"), AllowHost::Net(ip("10.1.2.3"), 32));
        assert_eq!(p("10.1.2.3/8"), AllowHost::Net(ip("10.0.0.0"), 8));
        assert_eq!(p("fd00::/8"), AllowHost::Net(ip("fd00::"), 8));
        assert_eq!(p("[::1]"), AllowHost::Net(ip("::1"), 128));
        assert_eq!(p("127.1"), AllowHost::Net(ip("127.0.0.1"), 32));
        assert_eq!(
            p("127.0.0.1:8787"),
            AllowHost::AddrPort("127.0.0.1:8787".parse().unwrap())
        );
        assert_eq!(
            p("[::1]:80"),
            AllowHost::AddrPort("[::1]:80".parse().unwrap())
        );
        for bad in ["", "10.0.0.0/33", "a b", "x:99999", "::1/129", "host/8"] {
            assert!(AllowHost::parse(bad).is_err(), "{bad:?}");
        }
        assert!(p("10.0.0.0/8").admits_ip(ip("10.9.9.9")));
        assert!(p("10.0.0.0/8").admits_ip(ip("::ffff:10.9.9.9")));
        assert!(!p("10.0.0.0/8").admits_ip(ip("11.0.0.1")));
        assert!(p("0.0.0.0/0").admits_ip(ip("127.0.0.1")));
        assert!(!p("0.0.0.0/0").admits_ip(ip("::1")));
        assert!(p("wiki.corp:8080").admits_name("WIKI.corp", 8080));
        assert!(!p("wiki.corp:8080").admits_name("wiki.corp", 80));
        assert!(p("127.0.0.1:8787").admits_socket(ip("127.0.0.1"), 8787));
        assert!(!p("127.0.0.1:8787").admits_socket(ip("127.0.0.1"), 22));
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn redirects_to_internal_addresses_are_refused_unless_admitted() {
        let fence = Fence::default();
        let start = url("http://127.0.0.1:8787/quotes.html");
        // The watch's own host and port: trusted, also after a redirect.
        assert_eq!(fence.route(&start, &start, 0), Ok(Route::Open));
        assert_eq!(
            fence.route(&start, &url("http://127.0.0.1:8787/b"), 1),
            Ok(Route::Open)
        );
        // Another port on the same host is not.
        let other = url("http://127.0.0.1:6379/");
        let error = fence.route(&start, &other, 1).unwrap_err();
        assert!(
            error.to_string().starts_with(
                "refused redirect to private address 127.0.0.1 (loopback) at http://127.0.0.1:6379/"
            ),
            "{error}"
        );
        for target in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://[::ffff:7f00:1]/",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://0.0.0.0:22/",
        ] {
            assert!(
                matches!(
                    fence.route(&url("https://example.org/"), &url(target), 1),
                    Err(FenceError::PrivateAddress { redirect: true, .. })
                ),
                "{target}"
            );
        }
        // Public addresses and names go out; names through the resolver.
        let public = url("https://example.org/");
        assert_eq!(
            fence.route(&public, &url("http://93.184.216.34/"), 1),
            Ok(Route::Open)
        );
        assert_eq!(
            fence.route(&public, &url("http://localhost:6379/"), 1),
            Ok(Route::Fenced)
        );
        // Never to another scheme.
        assert!(matches!(
            fence.route(&public, &url("file:///etc/passwd"), 1),
            Err(FenceError::Scheme { .. })
        ));
        // Admitted by allow_private, or by an allow-list entry.
        let open = Fence {
            allow_private: true,
            ..Fence::default()
        };
        assert_eq!(open.route(&start, &other, 1), Ok(Route::Open));
        for entry in ["127.0.0.1:6379", "127.0.0.0/8"] {
            let listed = Fence {
                allow_hosts: vec![AllowHost::parse(entry).unwrap()],
                ..Fence::default()
            };
            assert_eq!(listed.route(&start, &other, 1), Ok(Route::Open), "{entry}");
        }
        let listed = Fence {
            allow_hosts: vec![AllowHost::parse("127.0.0.1:8080").unwrap()],
            ..Fence::default()
        };
        assert!(listed.route(&start, &other, 1).is_err());
        let named = Fence {
            allow_hosts: vec![AllowHost::parse("localhost:6379").unwrap()],
            ..Fence::default()
        };
        assert_eq!(
            named.route(&public, &url("http://localhost:6379/"), 1),
            Ok(Route::Open)
        );
        assert_eq!(
            named.route(&public, &url("http://localhost:22/"), 1),
            Ok(Route::Fenced)
        );
    }

    #[test]
    fn untrusted_watch_urls_follow_the_redirect_rule() {
        let fence = Fence {
            trust_watch_urls: false,
            ..Fence::default()
        };
        let start = url("http://127.0.0.1:8787/");
        let error = fence.route(&start, &start, 0).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("refused watch URL at private address 127.0.0.1"),
            "{error}"
        );
        assert!(fence.check_watch_url(&url("http://[::1]/")).is_err());
        assert!(fence.check_watch_url(&url("https://example.org/")).is_ok());
        assert!(Fence::default().check_watch_url(&start).is_ok());
    }

    #[test]
    fn the_resolver_keeps_admitted_addresses_only() {
        let fence = Fence::default();
        let sa = |s: &str| -> SocketAddr { s.parse().unwrap() };
        assert_eq!(
            admitted(
                &fence,
                "mixed.test",
                [sa("127.0.0.1:0"), sa("93.184.216.34:0")]
            ),
            Ok(vec![sa("93.184.216.34:0")])
        );
        let refusal = admitted(&fence, "evil.test", [sa("10.0.0.1:0"), sa("[::1]:0")]).unwrap_err();
        assert_eq!(refusal.address, ip("10.0.0.1"));
        assert_eq!(refusal.kind, "private");
        let listed = Fence {
            allow_hosts: vec![AllowHost::parse("10.0.0.0/8").unwrap()],
            ..Fence::default()
        };
        assert_eq!(
            admitted(&listed, "intranet.test", [sa("10.0.0.1:0"), sa("[::1]:0")]),
            Ok(vec![sa("10.0.0.1:0")])
        );
    }

    #[tokio::test]
    async fn the_resolver_refuses_localhost() {
        use reqwest::dns::Resolve;
        let resolver = FencedResolver::new(Arc::new(Fence::default()), Vec::new());
        let error = match resolver.resolve("localhost".parse().unwrap()).await {
            Ok(addrs) => panic!("{:?}", addrs.collect::<Vec<_>>()),
            Err(error) => error,
        };
        let refusal = error.downcast_ref::<ResolverRefusal>().unwrap();
        assert_eq!(refusal.host, "localhost");
        assert_eq!(refusal.kind, "loopback");
        // The proxy's own host resolves.
        let resolver = FencedResolver::new(Arc::new(Fence::default()), vec!["localhost".into()]);
        assert!(resolver.resolve("localhost".parse().unwrap()).await.is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn files_outside_the_roots_are_refused_symlinks_and_all() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("pages");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("ok.html"), "<p>ok</p>").unwrap();
        std::fs::write(dir.path().join("secret"), "s3cret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link.html")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let fence = Fence {
            file_roots: vec![root.clone()],
            ..Fence::default()
        };
        assert!(fence.check_file_url(&root.join("ok.html")).is_ok());
        assert!(fence.check_file_url(&root.join("not-yet.html")).is_ok());
        assert_eq!(
            fence.read_file(&root.join("ok.html"), 100).unwrap(),
            b"<p>ok</p>"
        );
        for escape in [
            root.join("link.html"),
            root.join("up/secret"),
            root.join("up/pages/../secret"),
            PathBuf::from("/etc/passwd"),
            PathBuf::from("/proc/self/environ"),
        ] {
            assert!(
                fence.check_file_url(&escape).is_err(),
                "{}",
                escape.display()
            );
            assert!(
                matches!(fence.read_file(&escape, 1 << 20), Err(FencedRead::Fence(_))),
                "{}",
                escape.display()
            );
        }
        // `..` smuggled in a file URL as %2F does not get past either.
        let smuggled = Url::parse(&format!("file://{}/..%2F..%2Fsecret", root.display())).unwrap();
        let path = smuggled.to_file_path().unwrap();
        assert!(fence.check_file_url(&path).is_err(), "{}", path.display());
        // No roots, no files.
        assert!(
            Fence::default()
                .check_file_url(&root.join("ok.html"))
                .is_err()
        );
        // Too large.
        assert!(matches!(
            fence.read_file(&root.join("ok.html"), 3),
            Err(FencedRead::TooLarge)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let fence = Fence {
            file_roots: vec![dir.path().to_owned(), PathBuf::from("/dev")],
            ..Fence::default()
        };
        // This would wait forever for a writer if it opened the FIFO blocking.
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let error = read_regular(path, 1 << 16).unwrap_err();
            assert!(
                matches!(error, FencedRead::Fence(FenceError::NotRegular { .. })),
                "{}: {error:?}",
                path.display()
            );
            assert!(matches!(
                fence.read_file(path, 1 << 16),
                Err(FencedRead::Fence(FenceError::NotRegular { .. }))
            ));
        }
        let FencedRead::Fence(error) = read_regular(&fifo, 10).unwrap_err() else {
            panic!()
        };
        assert!(
            error.to_string().ends_with("is a FIFO, not a regular file"),
            "{error}"
        );
    }

    #[test]
    fn lenient_resolution_handles_missing_tails() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(resolve_lenient(&dir.path().join("a/b")), real.join("a/b"));
        assert_eq!(resolve_lenient(&dir.path().join("a/../b")), real.join("b"));
        assert_eq!(resolve_lenient(dir.path()), real);
    }
}
