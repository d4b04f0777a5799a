//! `accordion shell`: HBase shell's everyday commands against a server,
//! over Thrift (and the HTTP info port for `status` and the admin calls the
//! Thrift v1 IDL lacks: flush, split, merge_region, unassign, assign). Interactive, or non-interactive with `-e` or a
//! script file; output follows HBase shell's layout.

mod parse;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, anyhow, bail};
use parse::{Command, Value, parse_line, split_statements};
use server::client::{THbaseSyncClient, ThriftClient, connect, error_message};
use server::hbase_thrift::{ColumnDescriptor, Mutation, TRowResult, TScan};

#[derive(clap::Args, Debug)]
pub struct ShellArgs {
    /// The server's Thrift address.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub server: String,
    /// The server's HTTP address (flush, status).
    #[arg(long, default_value = "127.0.0.1:16030")]
    pub http: String,
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

pub fn run(args: &ShellArgs) -> anyhow::Result<()> {
    let client = connect(&args.server, args.framed, args.compact)
        .map_err(|e| anyhow!("cannot connect to {}: {e}", args.server))?;
    let mut shell = Shell { client, http: args.http.clone(), out: std::io::stdout() };
    let script = match (&args.execute, &args.script) {
        (Some(e), _) => Some(e.clone()),
        (None, Some(path)) => Some(std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?),
        (None, None) => None,
    };
    match script {
        Some(text) => {
            let mut failed = false;
            for stmt in split_statements(&text) {
                if let Err(e) = shell.run_line(&stmt) {
                    writeln!(shell.out, "ERROR: {e}")?;
                    failed = true;
                }
            }
            if failed {
                bail!("some commands failed");
            }
            Ok(())
        }
        None => {
            let stdin = std::io::stdin();
            loop {
                print!("accordion> ");
                std::io::stdout().flush()?;
                let mut line = String::new();
                if stdin.lock().read_line(&mut line)? == 0 {
                    println!();
                    return Ok(());
                }
                if matches!(line.trim(), "exit" | "quit") {
                    return Ok(());
                }
                for stmt in split_statements(&line) {
                    if let Err(e) = shell.run_line(&stmt) {
                        println!("ERROR: {e}");
                    }
                }
            }
        }
    }
}

struct Shell<W: Write> {
    client: ThriftClient,
    http: String,
    out: W,
}

fn text(b: &[u8]) -> String {
    // HBase shell's Bytes.toStringBinary: printable ASCII as is, the rest as \xNN.
    b.iter()
        .map(|&c| if (0x20..0x7f).contains(&c) && c != b'\\' { (c as char).to_string() } else { format!("\\x{c:02X}") })
        .collect()
}

fn arg_bytes(cmd: &Command, i: usize, what: &str) -> anyhow::Result<Vec<u8>> {
    cmd.args
        .get(i)
        .and_then(Value::bytes)
        .ok_or_else(|| anyhow!("{}: argument {} ({what}) is missing", cmd.name, i + 1))
}

fn dict(cmd: &Command, i: usize) -> BTreeMap<String, Value> {
    match cmd.args.get(i) {
        Some(Value::Dict(d)) => d.clone(),
        _ => BTreeMap::new(),
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::Int(i)) => Some(*i),
        _ => None,
    }
}

/// A boolean family option (`BLOCKCACHE => false` or `'false'`), or the
/// shell's default when absent.
fn flag(v: Option<&Value>, name: &str, default: bool) -> anyhow::Result<bool> {
    match v {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => match v.bytes().map(|b| text(&b).to_ascii_lowercase()).as_deref() {
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            _ => bail!("create: {name} must be true or false, got {v:?}"),
        },
    }
}

fn thrift_err(e: thrift::Error) -> anyhow::Error {
    anyhow!(error_message(&e))
}

impl<W: Write> Shell<W> {
    fn run_line(&mut self, line: &str) -> anyhow::Result<()> {
        let Some(cmd) = parse_line(line).map_err(|e| anyhow!("syntax: {e}"))? else { return Ok(()) };
        let started = std::time::Instant::now();
        match cmd.name.as_str() {
            "list" => self.list()?,
            "create" => self.create(&cmd)?,
            "describe" | "desc" => self.describe(&cmd)?,
            "put" => self.put(&cmd)?,
            "get" => self.get(&cmd)?,
            "scan" => self.scan(&cmd)?,
            "count" => self.count(&cmd)?,
            "delete" => self.delete(&cmd, false)?,
            "deleteall" => self.delete(&cmd, true)?,
            "incr" => self.incr(&cmd)?,
            "flush" => {
                let t = arg_bytes(&cmd, 0, "table")?;
                self.admin("flush", &[("table", &t)])?;
            }
            "split" => self.split(&cmd)?,
            "unassign" | "close_region" => {
                self.admin("unassign", &[("region", &arg_bytes(&cmd, 0, "encoded region name")?)])?;
            }
            "assign" => {
                self.admin("assign", &[("region", &arg_bytes(&cmd, 0, "encoded region name")?)])?;
            }
            "merge_region" => {
                let (a, b) = (arg_bytes(&cmd, 0, "encoded region name")?, arg_bytes(&cmd, 1, "encoded region name")?);
                let merged = self.admin("merge", &[("a", &a), ("b", &b)])?;
                write!(self.out, "{merged}")?;
            }
            "list_regions" => self.list_regions(&cmd)?,
            "compact" => self.client.compact(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?,
            "major_compact" => self.client.major_compact(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?,
            "disable" => self.client.disable_table(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?,
            "enable" => self.client.enable_table(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?,
            "is_enabled" => {
                let e = self.client.is_table_enabled(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?;
                writeln!(self.out, "{e}")?;
            }
            "drop" => self.client.delete_table(arg_bytes(&cmd, 0, "table")?).map_err(thrift_err)?,
            "exists" => {
                let t = arg_bytes(&cmd, 0, "table")?;
                let exists = self.client.get_table_names().map_err(thrift_err)?.contains(&t);
                writeln!(self.out, "Table {} does {}exist", text(&t), if exists { "" } else { "not " })?;
            }
            "status" => self.status()?,
            "help" => writeln!(
                self.out,
                "commands: create list describe exists put get scan count delete deleteall incr flush compact \
                 major_compact split merge_region unassign assign list_regions disable enable is_enabled drop status"
            )?,
            other => bail!("unknown command {other:?} (try help)"),
        }
        writeln!(self.out, "Took {:.4} seconds", started.elapsed().as_secs_f64())?;
        Ok(())
    }

    fn list(&mut self) -> anyhow::Result<()> {
        let names = self.client.get_table_names().map_err(thrift_err)?;
        writeln!(self.out, "TABLE")?;
        for n in &names {
            writeln!(self.out, "{}", text(n))?;
        }
        writeln!(self.out, "{} row(s)", names.len())?;
        Ok(())
    }

    fn create(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = arg_bytes(cmd, 0, "table")?;
        let mut families = Vec::new();
        for a in &cmd.args[1..] {
            let cd = match a {
                Value::Dict(d) => {
                    let name =
                        d.get("NAME").and_then(Value::bytes).ok_or_else(|| anyhow!("create: a family needs NAME"))?;
                    ColumnDescriptor {
                        name: Some(name),
                        max_versions: Some(int(d.get("VERSIONS")).unwrap_or(1) as i32),
                        bloom_filter_type: d.get("BLOOMFILTER").and_then(Value::bytes).map(|b| text(&b)),
                        compression: d.get("COMPRESSION").and_then(Value::bytes).map(|b| text(&b)),
                        time_to_live: int(d.get("TTL")).map(|t| t as i32),
                        // HBase's shell defaults, not the Thrift IDL's.
                        in_memory: Some(flag(d.get("IN_MEMORY"), "IN_MEMORY", false)?),
                        block_cache_enabled: Some(flag(d.get("BLOCKCACHE"), "BLOCKCACHE", true)?),
                        ..Default::default()
                    }
                }
                v => ColumnDescriptor {
                    name: Some(v.bytes().ok_or_else(|| anyhow!("create: bad family {v:?}"))?),
                    max_versions: Some(1),
                    in_memory: Some(false),
                    block_cache_enabled: Some(true),
                    ..Default::default()
                },
            };
            families.push(cd);
        }
        if families.is_empty() {
            bail!("create: at least one column family is required");
        }
        self.client.create_table(table.clone(), families).map_err(thrift_err)?;
        writeln!(self.out, "Created table {}", text(&table))?;
        Ok(())
    }

    fn describe(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = arg_bytes(cmd, 0, "table")?;
        let enabled = self.client.is_table_enabled(table.clone()).map_err(thrift_err)?;
        let fams = self.client.get_column_descriptors(table.clone()).map_err(thrift_err)?;
        writeln!(self.out, "Table {} is {}", text(&table), if enabled { "ENABLED" } else { "DISABLED" })?;
        writeln!(self.out, "COLUMN FAMILIES DESCRIPTION")?;
        for (name, f) in &fams {
            let name = text(name);
            writeln!(
                self.out,
                "{{NAME => '{}', VERSIONS => '{}', BLOOMFILTER => '{}', COMPRESSION => '{}', TTL => '{}'}}",
                name.trim_end_matches(':'),
                f.max_versions.unwrap_or(1),
                f.bloom_filter_type.clone().unwrap_or_default(),
                f.compression.clone().unwrap_or_default(),
                match f.time_to_live {
                    Some(t) if t != i32::MAX => t.to_string(),
                    _ => "FOREVER".to_string(),
                }
            )?;
        }
        writeln!(self.out, "{} row(s)", fams.len())?;
        Ok(())
    }

    fn put(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let (t, r, c, v) = (
            arg_bytes(cmd, 0, "table")?,
            arg_bytes(cmd, 1, "row")?,
            arg_bytes(cmd, 2, "column")?,
            arg_bytes(cmd, 3, "value")?,
        );
        let m = Mutation { is_delete: Some(false), column: Some(c), value: Some(v), write_to_w_a_l: Some(true) };
        match int(cmd.args.get(4)) {
            Some(ts) => self.client.mutate_row_ts(t, r, vec![m], ts, BTreeMap::new()),
            None => self.client.mutate_row(t, r, vec![m], BTreeMap::new()),
        }
        .map_err(thrift_err)
    }

    fn get(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let (t, r) = (arg_bytes(cmd, 0, "table")?, arg_bytes(cmd, 1, "row")?);
        let opts = dict(cmd, 2);
        let mut columns: Vec<Vec<u8>> = match cmd.args.get(2) {
            Some(Value::Str(c)) => vec![c.clone()],
            _ => Vec::new(),
        };
        match opts.get("COLUMN").or(opts.get("COLUMNS")) {
            Some(Value::List(l)) => columns.extend(l.iter().filter_map(Value::bytes)),
            Some(v) => columns.extend(v.bytes()),
            None => {}
        }
        let versions = int(opts.get("VERSIONS")).unwrap_or(1) as i32;
        let ts = int(opts.get("TIMESTAMP"));
        writeln!(self.out, "{:<32}CELL", "COLUMN")?;
        let mut n = 0;
        if versions > 1 || ts.is_some() {
            // Per column, with versions: getVer / getVerTs (ts is inclusive in
            // the shell, exclusive over Thrift).
            if columns.is_empty() {
                let fams = self.client.get_column_descriptors(t.clone()).map_err(thrift_err)?;
                columns = fams.keys().cloned().collect();
            }
            for c in &columns {
                let cells = match ts {
                    Some(ts) => self.client.get_ver_ts(
                        t.clone(),
                        r.clone(),
                        c.clone(),
                        ts.saturating_add(1),
                        versions,
                        BTreeMap::new(),
                    ),
                    None => self.client.get_ver(t.clone(), r.clone(), c.clone(), versions, BTreeMap::new()),
                }
                .map_err(thrift_err)?;
                for cell in cells {
                    n += 1;
                    writeln!(
                        self.out,
                        " {:<31}timestamp={}, value={}",
                        text(c),
                        cell.timestamp.unwrap_or_default(),
                        text(&cell.value.unwrap_or_default())
                    )?;
                }
            }
        } else {
            let rows = if columns.is_empty() {
                self.client.get_row(t, r, BTreeMap::new())
            } else {
                self.client.get_row_with_columns(t, r, columns, BTreeMap::new())
            }
            .map_err(thrift_err)?;
            for row in rows {
                for (c, cell) in row.columns.unwrap_or_default() {
                    n += 1;
                    writeln!(
                        self.out,
                        " {:<31}timestamp={}, value={}",
                        text(&c),
                        cell.timestamp.unwrap_or_default(),
                        text(&cell.value.unwrap_or_default())
                    )?;
                }
            }
        }
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    fn open_scan(&mut self, t: &[u8], opts: &BTreeMap<String, Value>) -> anyhow::Result<i32> {
        let columns: Vec<Vec<u8>> = match opts.get("COLUMNS").or(opts.get("COLUMN")) {
            Some(Value::List(l)) => l.iter().filter_map(Value::bytes).collect(),
            Some(v) => v.bytes().into_iter().collect(),
            None => Vec::new(),
        };
        let mut filter = opts.get("FILTER").and_then(Value::bytes);
        if let Some(p) = opts.get("ROWPREFIXFILTER").and_then(Value::bytes) {
            let prefix = format!("PrefixFilter('{}')", String::from_utf8_lossy(&p).replace('\'', "''"));
            filter = Some(match filter {
                Some(f) => format!("{prefix} AND ({})", String::from_utf8_lossy(&f)).into_bytes(),
                None => prefix.into_bytes(),
            });
        }
        let scan = TScan {
            start_row: opts.get("STARTROW").and_then(Value::bytes),
            stop_row: opts.get("STOPROW").and_then(Value::bytes),
            timestamp: None,
            columns: (!columns.is_empty()).then_some(columns),
            caching: Some(100),
            filter_string: filter,
            batch_size: None,
            sort_columns: Some(true),
            reversed: Some(matches!(opts.get("REVERSED"), Some(Value::Bool(true)))),
        };
        self.client.scanner_open_with_scan(t.to_vec(), scan, BTreeMap::new()).map_err(thrift_err)
    }

    /// Rows of a scan, `limit` at most, handed to `each`.
    fn scan_rows(
        &mut self,
        t: &[u8],
        opts: &BTreeMap<String, Value>,
        mut each: impl FnMut(&mut W, TRowResult) -> anyhow::Result<()>,
    ) -> anyhow::Result<u64> {
        let limit = int(opts.get("LIMIT")).map(|l| l.max(0) as u64);
        let id = self.open_scan(t, opts)?;
        let mut n = 0u64;
        let result = (|| -> anyhow::Result<()> {
            loop {
                let rows = self.client.scanner_get_list(id, 100).map_err(thrift_err)?;
                if rows.is_empty() {
                    return Ok(());
                }
                for row in rows {
                    if limit.is_some_and(|l| n >= l) {
                        return Ok(());
                    }
                    n += 1;
                    each(&mut self.out, row)?;
                }
            }
        })();
        let _ = self.client.scanner_close(id);
        result.map(|()| n)
    }

    fn scan(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = arg_bytes(cmd, 0, "table")?;
        let opts = dict(cmd, 1);
        writeln!(self.out, "{:<32}COLUMN+CELL", "ROW")?;
        let n = self.scan_rows(&t, &opts, |out, row| {
            let key = text(&row.row.unwrap_or_default());
            for c in row.sorted_columns.unwrap_or_default() {
                let cell = c.cell.unwrap_or_default();
                writeln!(
                    out,
                    " {:<31}column={}, timestamp={}, value={}",
                    key,
                    text(&c.column_name.unwrap_or_default()),
                    cell.timestamp.unwrap_or_default(),
                    text(&cell.value.unwrap_or_default())
                )?;
            }
            Ok(())
        })?;
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    fn count(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = arg_bytes(cmd, 0, "table")?;
        let mut opts = dict(cmd, 1);
        opts.insert("FILTER".into(), Value::Str(b"FirstKeyOnlyFilter() AND KeyOnlyFilter()".to_vec()));
        let n = self.scan_rows(&t, &opts, |_, _| Ok(()))?;
        writeln!(self.out, "{n} row(s)")?;
        Ok(())
    }

    fn delete(&mut self, cmd: &Command, all: bool) -> anyhow::Result<()> {
        let (t, r) = (arg_bytes(cmd, 0, "table")?, arg_bytes(cmd, 1, "row")?);
        let column = cmd.args.get(2).and_then(Value::bytes);
        let ts = int(cmd.args.get(3));
        let attrs = BTreeMap::new();
        match (column, ts, all) {
            (None, None, true) => self.client.delete_all_row(t, r, attrs),
            (None, Some(ts), true) => self.client.delete_all_row_ts(t, r, ts, attrs),
            (Some(c), None, _) => self.client.delete_all(t, r, c, attrs),
            (Some(c), Some(ts), _) => self.client.delete_all_ts(t, r, c, ts, attrs),
            (None, _, false) => bail!("delete: needs a column ('family:qualifier'); use deleteall for a whole row"),
        }
        .map_err(thrift_err)
    }

    fn incr(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let (t, r, c) = (arg_bytes(cmd, 0, "table")?, arg_bytes(cmd, 1, "row")?, arg_bytes(cmd, 2, "column")?);
        let by = int(cmd.args.get(3)).unwrap_or(1);
        let v = self.client.atomic_increment(t, r, c, by).map_err(thrift_err)?;
        writeln!(self.out, "COUNTER VALUE = {v}")?;
        Ok(())
    }

    /// `POST /admin/<call>` on the server's HTTP port; returns its answer
    /// (HBase's shell prints nothing but the time for most admin calls).
    fn admin(&mut self, call: &str, params: &[(&str, &[u8])]) -> anyhow::Result<String> {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", urlencode(v))).collect();
        let url = format!("http://{}/admin/{call}?{}", self.http, query.join("&"));
        match ureq::post(&url).config().http_status_as_error(false).build().send_empty() {
            Ok(mut response) => {
                let body = response.body_mut().read_to_string().unwrap_or_default();
                if response.status().is_success() { Ok(body) } else { bail!("{call}: {}", body.trim_end()) }
            }
            Err(e) => bail!("{call}: cannot reach the server's HTTP port {}: {e}", self.http),
        }
    }

    /// `split 'table'` splits every region at its midpoint; `split 'table',
    /// 'key'` splits the region holding `key` at `key` (HBase's forms).
    fn split(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = arg_bytes(cmd, 0, "table")?;
        if let Some(key) = cmd.args.get(1) {
            let key = key.bytes().ok_or_else(|| anyhow!("split: the split key must be a string"))?;
            return self.admin("split", &[("table", &t), ("row", &key), ("at", &key)]).map(|_| ());
        }
        let regions = self.client.get_table_regions(t.clone()).map_err(thrift_err)?;
        for r in regions {
            // A region too small to split is not an error for `split 'table'`.
            if let Err(e) = self.admin("split", &[("table", &t), ("row", &r.start_key.unwrap_or_default())]) {
                writeln!(self.out, "{e}")?;
            }
        }
        Ok(())
    }

    /// `list_regions 'table'`: each region's encoded name, keys and state.
    fn list_regions(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = String::from_utf8_lossy(&arg_bytes(cmd, 0, "table")?).into_owned();
        let status = self.status_json()?;
        let table = status["tables"]
            .as_array()
            .and_then(|ts| ts.iter().find(|x| x["name"] == t.as_str()))
            .ok_or_else(|| anyhow!("list_regions: unknown table {t:?}"))?;
        writeln!(
            self.out,
            "{:<18} {:<10} {:<20} {:<20} {:>12}",
            "ENCODED NAME", "STATE", "START KEY", "END KEY", "FILES (MB)"
        )?;
        for r in table["regions"].as_array().into_iter().flatten() {
            writeln!(
                self.out,
                "{:<18} {:<10} {:<20} {:<20} {:>12.1}",
                r["id"].as_str().unwrap_or_default(),
                r["state"].as_str().unwrap_or_default(),
                r["start_key"].as_str().unwrap_or_default(),
                r["end_key"].as_str().unwrap_or_default(),
                r["files_bytes"].as_f64().unwrap_or(0.0) / 1048576.0
            )?;
        }
        Ok(())
    }

    fn status_json(&mut self) -> anyhow::Result<serde_json::Value> {
        let url = format!("http://{}/status", self.http);
        let body = ureq::get(&url)
            .call()
            .map_err(|e| anyhow!("status: cannot reach {url}: {e}"))?
            .body_mut()
            .read_to_string()
            .map_err(|e| anyhow!("status: {e}"))?;
        serde_json::from_str(&body).context("status: bad JSON")
    }

    fn status(&mut self) -> anyhow::Result<()> {
        let v = self.status_json()?;
        let t = &v["totals"];
        let tables = v["tables"].as_array().map_or(0, Vec::len);
        writeln!(
            self.out,
            "1 active server, {} tables, {} regions, memstore {:.1} MB, {} disk flushes, {} in-memory flushes, {} compactions",
            tables,
            t["regions"],
            t["memstore_data_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
            t["disk_flushes"],
            t["inmemory_flushes"],
            t["disk_compactions"]
        )?;
        Ok(())
    }
}

fn urlencode(b: &[u8]) -> String {
    b.iter()
        .map(|&c| {
            if c.is_ascii_alphanumeric() || b"-_.~".contains(&c) {
                (c as char).to_string()
            } else {
                format!("%{c:02X}")
            }
        })
        .collect()
}
