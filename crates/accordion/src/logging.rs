//! How the binary logs: structured events (the store's flushes,
//! compactions, WAL rolls, splits, recovery, DDL; client errors) as plain
//! text, without ANSI colours unless the output is a terminal, or as one
//! JSON object per line (`--log-format json`), on stderr or appended to
//! `--log-file`; and, as plain text, into the ring the status page's
//! `/logs` shows (`server::recent_logs`).
//!
//! The level (or a filter such as `info,store=debug`) comes from
//! `--log-level`, else `RUST_LOG`, else the server's `log_level` setting
//! (applied once its configuration is read, through [`LogHandle`]), else
//! `info` (`warn` for the bench, whose tables the events would drown). A
//! running server's `/logLevel` changes one module's level through
//! [`LogHandle::control`].

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry, reload};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args, Debug, Clone)]
pub struct LogArgs {
    /// Log level (error, warn, info, debug, trace) or a filter such as
    /// info,store=debug; wins over RUST_LOG and the configuration.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Append the log to this file instead of writing it to stderr.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// text (default) or json (one object per line).
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// Changes the level after start-up, unless a flag or `RUST_LOG` set it.
pub struct LogHandle {
    handle: reload::Handle<EnvFilter, Registry>,
    explicit: bool,
}

impl LogHandle {
    /// Applies a configured level (the server's `log_level`), if the level
    /// was not given on the command line or in `RUST_LOG`.
    pub fn apply_configured(&self, level: Option<&str>) -> anyhow::Result<()> {
        let Some(level) = level.filter(|_| !self.explicit) else { return Ok(()) };
        let filter = EnvFilter::try_new(level).with_context(|| format!("log_level {level:?}"))?;
        self.handle.reload(filter).context("changing the log level")?;
        Ok(())
    }

    /// What the server's `/logLevel` reads and changes the filter through
    /// (a change there wins over the flag, `RUST_LOG` and the setting).
    pub fn control(&self) -> Box<dyn server::log_level::LogLevelControl> {
        Box::new(ReloadControl(self.handle.clone()))
    }
}

/// The filter behind the reload layer, for `server::log_level`.
struct ReloadControl(reload::Handle<EnvFilter, Registry>);

impl server::log_level::LogLevelControl for ReloadControl {
    fn current(&self) -> String {
        self.0.with_current(|f| f.to_string()).unwrap_or_else(|e| format!("(the logger is gone: {e})"))
    }

    fn set(&self, filter: &str) -> Result<(), String> {
        let filter = EnvFilter::try_new(filter).map_err(|e| e.to_string())?;
        self.0.reload(filter).map_err(|e| e.to_string())
    }
}

/// Installs the global subscriber; `default_level` applies when neither
/// `--log-level` nor `RUST_LOG` gives one (and, for the server, until its
/// configuration is read).
pub fn init(args: &LogArgs, default_level: &str) -> anyhow::Result<LogHandle> {
    let env = std::env::var("RUST_LOG").ok().filter(|v| !v.is_empty());
    let explicit = args.log_level.is_some() || env.is_some();
    let level = args.log_level.clone().or(env).unwrap_or_else(|| default_level.into());
    let filter = EnvFilter::try_new(&level).with_context(|| format!("log level {level:?}"))?;
    let (filter, handle) = reload::Layer::new(filter);
    let (writer, ansi) = match &args.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening the log file {}", path.display()))?;
            (BoxMakeWriter::new(std::sync::Mutex::new(file)), false)
        }
        None => (BoxMakeWriter::new(std::io::stderr), std::io::stderr().is_terminal()),
    };
    let output = match args.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
    };
    // The status page's /logs: the same events as plain text, kept in a
    // bounded ring (whatever the format and destination above).
    let recent =
        tracing_subscriber::fmt::layer().with_ansi(false).with_writer(|| server::recent_logs::global().writer());
    tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .with(recent)
        .try_init()
        .context("installing the logger")?;
    Ok(LogHandle { handle, explicit })
}
