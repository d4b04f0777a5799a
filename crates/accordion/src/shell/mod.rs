//! `accordion shell`: HBase shell's everyday commands against a server, in
//! HBase shell's syntax (`scan 't', LIMIT => 5` or `scan 't', {LIMIT =>
//! 5}`) and output layout, over Thrift — and over the server's HTTP port
//! for `status`, `list_regions` and the admin calls the Thrift v1 IDL
//! lacks (flush, split, merge_region, unassign, assign).
//!
//! Interactive (line editing and history), or non-interactive with `-e` or
//! a script file. Rules: every failure prints one `ERROR: <message>` line
//! (as HBase's shell does), never a backtrace or debug dump; a
//! non-interactive run that had one, or a shell that cannot start, exits
//! with status 1.
//!
//! Files: `parse` (the syntax), `args` (checking arguments and options),
//! `session` (script and interactive loops), `help` (the command catalog),
//! `ddl`, `data` and `regions` (the commands), `http_port` (finding and
//! calling the HTTP port).

mod args;
mod completion;
mod data;
mod ddl;
mod general;
mod help;
mod http_port;
mod namespaces;
mod parse;
mod regions;
mod session;
mod split_keys;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, anyhow};
use http_port::HttpPort;
use parse::{Command, parse_line};
use server::thrift::client::{ThriftClient, connect, error_message};
use session::Flow;

#[derive(clap::Args, Debug)]
pub struct ShellArgs {
    /// The server's Thrift address.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub server: String,
    /// The server's HTTP address (status, flush, split, ...). By default
    /// the --server host's port 16030, used if the server there says it
    /// serves the --server Thrift port.
    #[arg(long)]
    pub http: Option<String>,
    /// The server's admin token file (its admin_token_file), for the
    /// commands that change things through its HTTP port (flush, split,
    /// alter, ...).
    #[arg(long)]
    pub admin_token_file: Option<PathBuf>,
    /// Connect over TLS, trusting the server certificates these CAs
    /// (PEM) signed: the server's tls_enabled.
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// With --tls-ca: present this client certificate (PEM), for a server
    /// with tls_client_ca (mutual TLS; it also authenticates admin calls).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Framed transport (default buffered).
    #[arg(long)]
    pub framed: bool,
    /// Compact protocol (default binary).
    #[arg(long)]
    pub compact: bool,
    /// Commands to run (separated by ';' or newlines), then exit.
    #[arg(short = 'e', long = "execute")]
    pub execute: Option<String>,
    /// A script file to run, then exit.
    pub script: Option<PathBuf>,
}

/// Runs the shell. Its errors are printed here, as `ERROR: ...` lines, and
/// end the process with status 1: returned to `main`, they would print as
/// `Error: ...` with a backtrace under `RUST_BACKTRACE`.
pub fn run(args: &ShellArgs) -> anyhow::Result<()> {
    let outcome = session_of(args);
    let _ = std::io::stdout().flush();
    match outcome {
        Ok(true) => Ok(()),
        // Each failed command has printed its ERROR line already.
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ERROR: {e:#}");
            std::process::exit(1)
        }
    }
}

/// The session `args` ask for; false if a non-interactive command failed.
fn session_of(args: &ShellArgs) -> anyhow::Result<bool> {
    let script = match (&args.execute, &args.script) {
        (Some(e), _) => Some(e.clone()),
        (None, Some(path)) => {
            Some(std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?)
        }
        (None, None) => None,
    };
    let tls = match (&args.tls_ca, &args.tls_cert, &args.tls_key) {
        (None, None, None) => None,
        (Some(ca), cert, key) => {
            Some(server::tls::client_config_with(ca, cert.as_deref().zip(key.as_deref())).map_err(anyhow::Error::msg)?)
        }
        (None, _, _) => anyhow::bail!("--tls-cert and --tls-key need --tls-ca (the CA of the server's certificate)"),
    };
    let (addr, framed, compact, tls_config) = (args.server.clone(), args.framed, args.compact, tls.clone());
    let connect = Box::new(move || {
        match &tls_config {
            None => connect(&addr, framed, compact),
            Some(config) => server::thrift::client::connect_tls_with(&addr, config, framed, compact),
        }
        .map_err(|e| format!("cannot connect to {addr}: {}", thrift_message(&e)))
    });
    let client = connect();
    if let (Err(e), None) = (&client, &script) {
        eprintln!("WARNING: {e}; help works, and each command tries to connect again");
    }
    let mut http = HttpPort::new(&args.server, args.http.as_deref(), tls);
    if let Some(path) = &args.admin_token_file {
        http.set_admin_token(server::admin_auth::read_token_file(path).map_err(anyhow::Error::msg)?);
    }
    let mut shell = Shell { client, connect, http, out: std::io::stdout() };
    match script {
        Some(text) => session::run_script(&mut shell, &text),
        None => session::interactive(&mut shell).map(|()| true),
    }
}

/// Connects to the server's Thrift port, or says why it cannot.
type Connect = Box<dyn Fn() -> Result<ThriftClient, String>>;

struct Shell<W: Write> {
    /// The Thrift connection, or why there is none: `help` and `exit` need
    /// no server, and a shell started before its server connects at the
    /// first command that needs one.
    client: Result<ThriftClient, String>,
    connect: Connect,
    http: HttpPort,
    out: W,
}

/// HBase shell's `Bytes.toStringBinary`: printable ASCII as is, the rest as
/// `\xNN`.
fn text(b: &[u8]) -> String {
    b.iter()
        .map(|&c| if (0x20..0x7f).contains(&c) && c != b'\\' { (c as char).to_string() } else { format!("\\x{c:02X}") })
        .collect()
}

fn thrift_err(e: thrift::Error) -> anyhow::Error {
    anyhow!(thrift_message(&e))
}

/// A Thrift error's message: HBase's exceptions unwrapped, and for a
/// transport failure the I/O error behind it ("Connection refused"), which
/// the Thrift crate's own text ("not open") leaves out.
fn thrift_message(e: &thrift::Error) -> String {
    match e {
        thrift::Error::Transport(t) if !t.message.is_empty() => t.message.clone(),
        e => error_message(e),
    }
}

impl<W: Write> Shell<W> {
    /// The Thrift client, connecting first if there is none yet.
    fn client(&mut self) -> anyhow::Result<&mut ThriftClient> {
        if self.client.is_err() {
            self.client = (self.connect)();
        }
        self.client.as_mut().map_err(|e| anyhow!("{e}"))
    }

    /// Runs one statement; prints "Took N seconds" after a command, as
    /// HBase's shell does.
    fn run_line(&mut self, line: &str) -> anyhow::Result<Flow> {
        let Some(cmd) = parse_line(line).map_err(|e| anyhow!("syntax: {e}"))? else { return Ok(Flow::Continue) };
        let started = std::time::Instant::now();
        match cmd.name.as_str() {
            "exit" | "quit" => return Ok(Flow::Exit),
            "help" => {
                self.help(&cmd)?;
                return Ok(Flow::Continue);
            }
            _ => self.dispatch(&cmd)?,
        }
        writeln!(self.out, "Took {:.4} seconds", started.elapsed().as_secs_f64())?;
        Ok(Flow::Continue)
    }

    fn dispatch(&mut self, cmd: &Command) -> anyhow::Result<()> {
        match cmd.name.as_str() {
            "list" => self.list(cmd),
            "create_namespace" => self.create_namespace(cmd),
            "drop_namespace" => self.drop_namespace(cmd),
            "describe_namespace" => self.describe_namespace(cmd),
            "list_namespace" => self.list_namespace(cmd),
            "list_namespace_tables" => self.list_namespace_tables(cmd),
            "create" => self.create(cmd),
            "describe" | "desc" => self.describe(cmd),
            "alter" => self.alter(cmd),
            "truncate" => self.truncate(cmd),
            "exists" => self.exists(cmd),
            "enable" | "disable" | "drop" | "is_enabled" | "is_disabled" => self.table_state(cmd),
            "put" => self.put(cmd),
            "get" => self.get(cmd),
            "scan" => self.scan(cmd),
            "count" => self.count(cmd),
            "delete" => self.delete(cmd, false),
            "deleteall" => self.delete(cmd, true),
            "incr" => self.incr(cmd),
            "get_counter" => self.get_counter(cmd),
            "flush" => self.flush(cmd),
            "compact" => self.compact(cmd, false),
            "major_compact" => self.compact(cmd, true),
            "split" => self.split(cmd),
            "unassign" | "close_region" => self.assignment(cmd, false),
            "assign" => self.assignment(cmd, true),
            "move" => self.move_region(cmd),
            "balancer" | "balance_switch" => self.balancer(cmd),
            "merge_region" => self.merge_region(cmd),
            "list_regions" => self.list_regions(cmd),
            "status" => self.status(cmd),
            "get_splits" => self.get_splits(cmd),
            "locate_region" => self.locate_region(cmd),
            "version" => self.version(cmd),
            "whoami" => self.whoami(cmd),
            "table_help" => {
                args::Args::parse(cmd, 0, &[])?;
                let text = help::topic("table_help").ok_or_else(|| anyhow!("table_help has no help text"))?;
                write!(self.out, "{text}")?;
                Ok(())
            }
            other => Err(anyhow!("unknown command {other:?} (try help)")),
        }
    }

    /// `help`, `help 'command'` or `help 'group'`.
    fn help(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = args::Args::parse(cmd, 1, &[])?;
        let text = match args.opt_bytes(0, "command or group")? {
            None => help::overview(),
            Some(name) => {
                let name = String::from_utf8_lossy(&name).into_owned();
                help::topic(&name).ok_or_else(|| anyhow!("help: no command or group named {name:?}"))?
            }
        };
        write!(self.out, "{text}")?;
        Ok(())
    }

    /// Prints a failure as HBase's shell does: `ERROR: <message>`, with the
    /// causes after colons.
    fn report(&mut self, e: &anyhow::Error) -> anyhow::Result<()> {
        writeln!(self.out, "ERROR: {e:#}")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command in the help catalog is dispatched (none answers
    /// "unknown command"), and every dispatched name has help.
    #[test]
    fn the_dispatch_and_the_help_catalog_agree() {
        let source = include_str!("mod.rs");
        let dispatch = &source[source.find("fn dispatch").expect("dispatch")..source.find("/// `help`").expect("end")];
        for c in help::COMMANDS {
            let handled = matches!(c.name, "help" | "exit") || dispatch.contains(&format!("\"{}\"", c.name));
            assert!(handled, "{} has help but is not dispatched", c.name);
        }
        for name in
            dispatch.split('"').skip(1).step_by(2).filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        {
            assert!(help::find(name).is_some(), "{name} is dispatched but has no help");
        }
    }

    #[test]
    fn binary_bytes_print_as_hbase_prints_them() {
        assert_eq!(text(b"a\x00\\z\xff"), "a\\x00\\x5Cz\\xFF");
    }
}
