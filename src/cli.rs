//! The command line: clap definitions in, parsed arguments out.
//!
//! Kept in the library so that tests can compare the README's usage text
//! with `--help` and drive the same parser the binary uses.

use clap::{Parser, Subcommand, ValueEnum};

/// semclip: semantic web clipping and monitoring.
///
/// Turns web pages into a semantic hierarchy (an XML document of the page's
/// data, every node labelled with its own XPath) and queries it.
#[derive(Debug, Parser)]
#[command(name = "semclip", version, about, long_about = None)]
pub struct Cli {
    /// Log verbosity on stderr (error, warn, info, debug, trace; default: info for `run`,
    /// warn otherwise); RUST_LOG overrides.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log line format: text (coloured only on a terminal, without NO_COLOR) or json (one
    /// object per line); default: SEMCLIP_LOG_FORMAT, else text.
    #[arg(
        long,
        global = true,
        value_name = "FORMAT",
        value_enum,
        hide_possible_values = true
    )]
    pub log_format: Option<LogFormat>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`, `spans`.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the semantic hierarchy of a page.
    Hierarchy(HierarchyArgs),
    /// Evaluate an XPath 1.0 expression over a page's hierarchy.
    Xpath(XpathArgs),
    /// Extract a page's article, its data records, or the data region around keywords.
    Extract(ExtractArgs),
    /// Learn the templates of a site's pages and store them under a name.
    Learn(LearnArgs),
    /// Print the semantic changes between two pages (exit 0 same, 1 different).
    Diff(DiffArgs),
    /// Run watches once and print what changed and what is alerted (exit 1 if alerts).
    Check(CheckArgs),
    /// Replay a threshold, clip or ignore list over a watch's history (exit 1 if it fires).
    Backtest(BacktestArgs),
    /// Run the monitoring daemon on the watches directory.
    Run(RunArgs),
    /// Serve clips, feeds, the API and status pages from the store, without checking.
    Serve(ServeArgs),
    /// Check the daemon file and every watch file (exit 0 valid, 2 problems).
    Validate(ValidateArgs),
    /// Write a starter watch file for a page: its tables and numeric columns, commented.
    Init(InitArgs),
    /// Copy the SQLite store into an empty PostgreSQL database, history and alerts included.
    Migrate(MigrateArgs),
    /// Fill or clear a session's stored cookie jar (import a browser's cookies.txt).
    #[command(subcommand)]
    Cookies(CookiesCommand),
}

/// What `semclip cookies` does.
#[derive(Debug, Subcommand)]
pub enum CookiesCommand {
    /// Add the cookies of a Netscape cookies.txt to a session's jar (nothing on a bad line).
    Import(CookiesImportArgs),
    /// Empty a session's jar: its next check starts logged out.
    Clear(CookiesClearArgs),
}

/// Arguments of `semclip cookies import`.
#[derive(Debug, clap::Args)]
pub struct CookiesImportArgs {
    /// The session, as declared under `sessions` in the daemon file.
    pub session: String,
    /// The cookies.txt file (as browsers' export extensions and curl write it), or `-`.
    pub file: String,
    /// Configuration (where the store and the sessions are).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip cookies clear`.
#[derive(Debug, clap::Args)]
pub struct CookiesClearArgs {
    /// The session, as declared under `sessions` in the daemon file.
    pub session: String,
    /// Configuration (where the store and the sessions are).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Where the configuration is: shared by `run`, `check` and `validate`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigArgs {
    /// The daemon file [default: semclip.yaml if it exists, else built-in defaults].
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// The watches directory [default: the daemon file's `watches`].
    #[arg(long, value_name = "DIR")]
    pub watches: Option<std::path::PathBuf>,
}

impl ConfigArgs {
    /// The daemon file to read: the one given, else `semclip.yaml` in the
    /// current directory if there is one, else none (built-in defaults).
    pub fn config_file(&self) -> Option<std::path::PathBuf> {
        self.config.clone().or_else(|| {
            let default = std::path::PathBuf::from("semclip.yaml");
            default.is_file().then_some(default)
        })
    }
}

/// Arguments of `semclip run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Address to listen on [default: the daemon file's `listen`].
    #[arg(long, value_name = "IP:PORT")]
    pub listen: Option<std::net::SocketAddr>,
    /// Configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on [default: the daemon file's `listen`].
    #[arg(long, value_name = "IP:PORT")]
    pub listen: Option<std::net::SocketAddr>,
    /// Configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Watch ids to check [default: all].
    pub watch: Vec<String>,
    /// Configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Record nothing and send nothing: only print what would happen.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `semclip backtest`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("rule").required(true).args(["threshold", "clip", "ignore"])))]
pub struct BacktestArgs {
    /// The watch whose stored versions are replayed.
    pub watch: String,
    /// A threshold of the watch file, by name (edit the file to try a new rule: no reload needed).
    #[arg(long, value_name = "NAME")]
    pub threshold: Option<String>,
    /// A clip of the watch file, by name: when it would have changed.
    #[arg(long, value_name = "NAME")]
    pub clip: Option<String>,
    /// An XPath to ignore, in place of the watch's `ignore:` (repeat for several): what it would have silenced.
    #[arg(long, value_name = "XPATH")]
    pub ignore: Vec<String>,
    /// Print the backtest as JSON.
    #[arg(long)]
    pub json: bool,
    /// Configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip migrate`.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// The PostgreSQL database to copy into: a postgres:// URL without a password.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The environment variable holding the target's password.
    #[arg(long, value_name = "NAME", conflicts_with = "password_file")]
    pub password_env: Option<String>,
    /// A file holding the target's password.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<std::path::PathBuf>,
    /// The SQLite store to copy [default: the daemon file's `database`].
    #[arg(long, value_name = "FILE")]
    pub from: Option<std::path::PathBuf>,
    /// The daemon file [default: semclip.yaml if it exists, else built-in defaults].
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// Arguments of `semclip validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Configuration.
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Read no secret: check each `{env: NAME}` and `{file: PATH}` for its form only (in CI,
    /// or on a machine without the secrets).
    #[arg(long)]
    pub syntax: bool,
}

/// Arguments of `semclip init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The page: an http(s):// or file:// URL, or a file path.
    pub url: String,
    /// Write the watch file here instead of stdout (refuses to overwrite).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// The daemon file whose fetch fence and page budget apply [default: semclip.yaml if it
    /// exists, else built-in defaults].
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// Arguments of `semclip diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The old page: a file, `-`, a URL, or a saved hierarchy document.
    pub old: String,
    /// The new page: a file, `-`, a URL, or a saved hierarchy document.
    pub new: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Leave out what this XPath selects (in either page); repeatable.
    #[arg(long, value_name = "XPATH")]
    pub ignore: Vec<String>,
}

/// Output formats of `semclip diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// One line per change, in data terms.
    Text,
    /// `{"version": "1", "changes": [...]}`.
    Json,
    /// `<changes version="1">` with one `<change>` per change.
    Xml,
}

/// Arguments of `semclip hierarchy`.
#[derive(Debug, clap::Args)]
pub struct HierarchyArgs {
    /// A file path, `-` for stdin, or an http(s):// or file:// URL.
    pub source: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = Format::Xml)]
    pub format: Format,
}

/// Output formats of `semclip hierarchy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The XML document (the public vocabulary).
    Xml,
    /// The same tree as JSON.
    Json,
    /// An indented outline for people.
    Outline,
}

/// Arguments of `semclip extract`.
#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// What to extract.
    #[command(subcommand)]
    pub what: Extract,
}

/// What `semclip extract` extracts.
#[derive(Debug, Subcommand)]
pub enum Extract {
    /// The main article: title, byline, date and body.
    Article(ExtractArticleArgs),
    /// The repeated data records of a list page.
    Records(ExtractRecordsArgs),
    /// The data region holding the given keywords, its records and a reusable wrapper (DEIP).
    Region(ExtractRegionArgs),
}

/// Arguments of `semclip extract article`.
#[derive(Debug, clap::Args)]
pub struct ExtractArticleArgs {
    /// A file path, `-` for stdin, or an http(s):// or file:// URL.
    pub source: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = ExtractFormat::Xml)]
    pub format: ExtractFormat,
    /// Use the site's template set learned with `semclip learn NAME`: when the page
    /// fits one of its templates, title and body come from that template's
    /// ne-pattern; otherwise (and without this option) from the page alone.
    #[arg(long, value_name = "NAME")]
    pub template: Option<String>,
    /// Configuration (where the store with the template sets is).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip extract records`.
#[derive(Debug, clap::Args)]
pub struct ExtractRecordsArgs {
    /// A file path, `-` for stdin, or an http(s):// or file:// URL.
    pub source: String,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = ExtractFormat::Xml)]
    pub format: ExtractFormat,
    /// Use the site's template set learned with `semclip learn NAME`: on a page that
    /// fits one of its templates, only lists whose texts vary between the site's
    /// pages are records (menus and tag lists drop out).
    #[arg(long, value_name = "NAME")]
    pub template: Option<String>,
    /// Configuration (where the store with the template sets is).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip extract region`.
#[derive(Debug, clap::Args)]
pub struct ExtractRegionArgs {
    /// A file path, `-` for stdin, or an http(s):// or file:// URL.
    pub source: String,
    /// Text that appears in the wanted data, e.g. an issuer name (give two or three,
    /// from different records).
    #[arg(
        long = "keyword",
        short,
        value_name = "TEXT",
        required_unless_present = "wrapper"
    )]
    pub keywords: Vec<String>,
    /// Reuse the wrapper of an earlier run (its JSON output, or just its `wrapper`
    /// object) instead of keywords.
    #[arg(long, value_name = "FILE", conflicts_with = "keywords")]
    pub wrapper: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, short, value_enum, default_value_t = ExtractFormat::Xml)]
    pub format: ExtractFormat,
}

/// Output formats of `semclip extract`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtractFormat {
    /// A hierarchy document (`<page>`) holding the result in the public vocabulary.
    Xml,
    /// JSON with source positions (index XPaths), for scripts and scoring.
    Json,
    /// Plain text for people.
    Text,
}

/// Arguments of `semclip learn`.
#[derive(Debug, clap::Args)]
pub struct LearnArgs {
    /// The template set's name ([A-Za-z0-9._-]+), as watches name it in `layout.template`.
    pub name: String,
    /// Pages of one site: files, directories (their .html and .htm files), or URLs.
    #[arg(required = true)]
    pub sources: Vec<String>,
    /// Structural distance (1 - depth-weighted LCS similarity) below which pages share a
    /// template.
    #[arg(long, default_value_t = crate::template::cluster::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Pages a template needs; smaller groups stay pending until more such pages are seen.
    #[arg(long, default_value_t = 2)]
    pub min_pages: usize,
    /// Print the clusters only; store nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Configuration (where the store is).
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Arguments of `semclip xpath`.
#[derive(Debug, clap::Args)]
pub struct XpathArgs {
    /// A file path, `-` for stdin, or an http(s):// or file:// URL.
    pub source: String,
    /// An XPath 1.0 expression over the hierarchy document.
    pub expr: String,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}
