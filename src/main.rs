//! The `semclip` binary: parses the command line, sets up logging, runs the
//! command on a tokio runtime and maps the result to an exit code
//! (0 success, 1 negative answer, 2 trouble; see README "Exit codes").

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use semclip::cli::{Cli, Command, LogFormat};
use semclip::commands::{self, Outcome};
use tracing_subscriber::EnvFilter;

/// Directives that keep dependencies from logging page contents: html5ever
/// logs each token at debug and each character at trace.
const PAGE_DUMPERS_CAPPED: &str = "html5ever=warn,markup5ever=warn";

fn main() -> ExitCode {
    let cli = Cli::parse();
    // html5ever logs the page's own markup errors ("foster parenting not
    // implemented") as warnings: about the page, not semclip, so they show
    // only at debug and trace. Its own debug and trace events print every
    // token and character of the page: never shown, so that debug logging
    // never dumps whole pages. RUST_LOG overrides the levels, not that cap
    // (unless it names html5ever itself).
    let default_level = if matches!(cli.command, Command::Run(_) | Command::Serve(_)) {
        "info"
    } else {
        "warn"
    };
    let level = match cli.log_level.as_deref().unwrap_or(default_level) {
        level @ ("debug" | "trace") => format!("{level},{PAGE_DUMPERS_CAPPED}"),
        other => format!("{other},html5ever=error"),
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(env) if env.trim().is_empty() => None,
        Ok(env) if !env.contains("html5ever") => {
            EnvFilter::try_new(format!("{env},{PAGE_DUMPERS_CAPPED}")).ok()
        }
        Ok(env) => EnvFilter::try_new(env).ok(),
        Err(_) => None,
    }
    .or_else(|| EnvFilter::try_new(&level).ok())
    .unwrap_or_else(|| EnvFilter::new("warn,html5ever=error"));
    init_logging(filter, log_format(cli.log_format));

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("semclip: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = runtime.block_on(async {
        match &cli.command {
            Command::Hierarchy(args) => commands::hierarchy::run(args, &mut out).await,
            Command::Xpath(args) => commands::xpath::run(args, &mut out).await,
            Command::Extract(args) => commands::extract::run(args, &mut out).await,
            Command::Learn(args) => commands::learn::run(args, &mut out).await,
            Command::Diff(args) => commands::diff::run(args, &mut out).await,
            Command::Check(args) => commands::check::run(args, &mut out).await,
            Command::Backtest(args) => commands::backtest::run(args, &mut out).await,
            Command::Run(args) => commands::run::run(args).await,
            Command::Serve(args) => commands::serve::run(args).await,
            Command::Validate(args) => commands::validate::run(args, &mut out),
            Command::Init(args) => commands::init::run(args, &mut out).await,
            Command::Migrate(args) => commands::migrate::run(args, &mut out).await,
            Command::Cookies(command) => commands::cookies::run(command, &mut out).await,
        }
    });
    let _ = out.flush();
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Negative) => ExitCode::from(1),
        Err(e) => {
            // A closed stdout (`| head`) is not an error worth reporting.
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("semclip: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The log format: the option, else `SEMCLIP_LOG_FORMAT` (`json` or
/// `text`; anything else is text, so a typo never silences the log).
fn log_format(option: Option<LogFormat>) -> LogFormat {
    option.unwrap_or_else(|| match std::env::var("SEMCLIP_LOG_FORMAT") {
        Ok(v) if v.trim().eq_ignore_ascii_case("json") => LogFormat::Json,
        _ => LogFormat::Text,
    })
}

/// Logs to stderr. Colour codes only when stderr is a terminal and
/// `NO_COLOR` is unset or empty (<https://no-color.org>): a log file or
/// the journal must not fill with escape sequences.
fn init_logging(filter: EnvFilter, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // JSON lines carry no colour whatever the terminal.
        LogFormat::Json => builder.json().with_ansi(false).init(),
        LogFormat::Text => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !no_color;
            builder.with_ansi(ansi).init();
        }
    }
}
