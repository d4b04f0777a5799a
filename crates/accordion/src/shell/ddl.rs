//! The table commands (HBase's `ddl` group, and truncate): list, create,
//! describe, alter, truncate, exists, enable, disable, is_enabled,
//! is_disabled, drop.
//!
//! What the server lacks is said, not faked: Thrift v1's createTable takes
//! no split keys, so `create ..., SPLITS => [...]` creates the table and then
//! splits it at each key through the admin split call; nothing the server
//! offers changes a table's families, so `alter` is an error.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, anyhow, bail};
use server::client::THbaseSyncClient;
use server::hbase_thrift::ColumnDescriptor;

use super::args::{Args, Kind, Options, table_arg};
use super::parse::{Command, Value};
use super::{Shell, text, thrift_err};

const FAMILY_OPTIONS: &[(&str, Kind)] = &[
    ("NAME", Kind::Bytes),
    ("VERSIONS", Kind::Int),
    ("TTL", Kind::Int),
    ("BLOOMFILTER", Kind::Bytes),
    ("COMPRESSION", Kind::Bytes),
    ("IN_MEMORY", Kind::Bool),
    ("BLOCKCACHE", Kind::Bool),
];

const TABLE_OPTIONS: &[(&str, Kind)] = &[("SPLITS", Kind::BytesList)];

/// A family with HBase's shell defaults (not the Thrift IDL's).
fn family(name: Vec<u8>) -> ColumnDescriptor {
    ColumnDescriptor {
        name: Some(name),
        max_versions: Some(1),
        in_memory: Some(false),
        block_cache_enabled: Some(true),
        ..Default::default()
    }
}

/// A family from `{NAME => 'f', VERSIONS => 3, ...}`.
fn family_of(opts: &Options) -> anyhow::Result<ColumnDescriptor> {
    let name = opts.bytes("NAME").ok_or_else(|| anyhow!("create: a family needs NAME"))?;
    let versions = opts.int("VERSIONS").unwrap_or(1);
    let what = text(&name);
    if !(1..=i32::MAX as i64).contains(&versions) {
        bail!("create: VERSIONS of family {what} must be at least 1, got {versions}");
    }
    let ttl = match opts.int("TTL") {
        Some(t) if !(1..=i32::MAX as i64).contains(&t) => {
            bail!("create: TTL of family {what} must be a positive number of seconds, got {t}")
        }
        t => t.map(|t| t as i32),
    };
    let defaults = family(name);
    Ok(ColumnDescriptor {
        max_versions: Some(versions as i32),
        bloom_filter_type: opts.bytes("BLOOMFILTER").map(|b| text(&b)),
        compression: opts.bytes("COMPRESSION").map(|b| text(&b)),
        time_to_live: ttl,
        in_memory: opts.flag("IN_MEMORY").or(defaults.in_memory),
        block_cache_enabled: opts.flag("BLOCKCACHE").or(defaults.block_cache_enabled),
        ..defaults
    })
}

/// A family's settings as `describe` prints them.
fn describe_family(name: &[u8], f: &ColumnDescriptor) -> String {
    format!(
        "{{NAME => '{}', VERSIONS => '{}', BLOOMFILTER => '{}', COMPRESSION => '{}', TTL => '{}'}}",
        text(name).trim_end_matches(':'),
        f.max_versions.unwrap_or(1),
        f.bloom_filter_type.clone().unwrap_or_default(),
        f.compression.clone().unwrap_or_default(),
        match f.time_to_live {
            Some(t) if t != i32::MAX => t.to_string(),
            _ => "FOREVER".to_string(),
        }
    )
}

impl<W: Write> Shell<W> {
    /// `list` or `list 'regex'` (tables whose whole name matches, as
    /// Java's `Pattern.matches` in HBase's shell).
    pub(super) fn list(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 1, &[])?;
        let pattern = match args.opt_bytes(0, "regex")? {
            Some(p) => {
                let p = String::from_utf8(p).map_err(|_| anyhow!("list: the regular expression is not UTF-8"))?;
                // The regex crate's message draws the pattern and a caret
                // over several lines; its last line says what is wrong.
                let whole = regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                    let e = e.to_string();
                    let reason = e.lines().last().unwrap_or_default().trim_start_matches("error: ").to_string();
                    anyhow!("list: bad regex {p:?}: {reason}")
                })?;
                Some(whole)
            }
            None => None,
        };
        let names = self.client.get_table_names().map_err(thrift_err)?;
        let names: Vec<String> =
            names.iter().map(|n| text(n)).filter(|n| pattern.as_ref().is_none_or(|p| p.is_match(n))).collect();
        writeln!(self.out, "TABLE")?;
        for n in &names {
            writeln!(self.out, "{n}")?;
        }
        writeln!(self.out, "{} row(s)", names.len())?;
        Ok(())
    }

    /// `create 't', 'f1', {NAME => 'f2', ...}[, SPLITS => [...]]`: a
    /// dictionary with NAME is a family, one without holds table options
    /// (HBase's rule).
    pub(super) fn create(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = table_arg(cmd)?;
        let mut families = Vec::new();
        let mut splits = Vec::new();
        for (i, a) in cmd.args.iter().enumerate().skip(1) {
            match a {
                Value::Dict(d) if d.contains_key("NAME") => {
                    families.push(family_of(&Options::check("create", d, FAMILY_OPTIONS)?)?);
                }
                Value::Dict(d) => splits.extend(Options::check("create", d, TABLE_OPTIONS)?.bytes_list("SPLITS")),
                Value::Str(name) => families.push(family(name.clone())),
                v => bail!("create: argument {} must be a family name or a dictionary, got {v}", i + 1),
            }
        }
        if families.is_empty() {
            bail!("create: at least one column family is required");
        }
        if splits.iter().any(Vec::is_empty) {
            bail!("create: a split key must not be empty");
        }
        splits.sort();
        splits.dedup();
        self.client.create_table(table.clone(), families).map_err(thrift_err)?;
        // The Thrift createTable has no split keys: split the new (empty)
        // table at each, in order, each key going to the region holding it.
        for key in &splits {
            self.http
                .admin("split", &[("table", &table), ("row", key), ("at", key)])
                .with_context(|| format!("created table {} but could not split it at {}", text(&table), text(key)))?;
        }
        writeln!(self.out, "Created table {}", text(&table))?;
        Ok(())
    }

    pub(super) fn describe(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        let enabled = self.client.is_table_enabled(table.clone()).map_err(thrift_err)?;
        let fams = self.client.get_column_descriptors(table.clone()).map_err(thrift_err)?;
        writeln!(self.out, "Table {} is {}", text(&table), if enabled { "ENABLED" } else { "DISABLED" })?;
        writeln!(self.out, "COLUMN FAMILIES DESCRIPTION")?;
        for (name, f) in &fams {
            writeln!(self.out, "{}", describe_family(name, f))?;
        }
        writeln!(self.out, "{} row(s)", fams.len())?;
        Ok(())
    }

    /// `alter`: the server has no call that changes a table (neither
    /// Thrift v1 nor its admin port, nor the store's API), so this is an
    /// error rather than a pretence.
    pub(super) fn alter(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = table_arg(cmd)?;
        bail!(
            "alter is not supported by this server: neither its Thrift API nor its admin calls can change the \
             families of a table; table {} is unchanged (to change it: disable, drop and create it again)",
            text(&table)
        )
    }

    /// `truncate 't'`: disable, drop and create again with the families
    /// the server describes, as HBase's shell does.
    pub(super) fn truncate(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        let name = text(&table);
        writeln!(self.out, "Truncating '{name}' table (it may take a while):")?;
        let fams: BTreeMap<Vec<u8>, ColumnDescriptor> =
            self.client.get_column_descriptors(table.clone()).map_err(thrift_err)?;
        if self.client.is_table_enabled(table.clone()).map_err(thrift_err)? {
            writeln!(self.out, "Disabling table...")?;
            self.client.disable_table(table.clone()).map_err(thrift_err)?;
        }
        writeln!(self.out, "Truncating table...")?;
        self.client.delete_table(table.clone()).map_err(thrift_err)?;
        let families: Vec<ColumnDescriptor> = fams.values().cloned().collect();
        self.client.create_table(table, families).map_err(|e| {
            let described: Vec<String> = fams.iter().map(|(n, f)| describe_family(n, f)).collect();
            anyhow!(
                "truncate: dropped {name} but could not create it again ({}); its families were: {}",
                thrift_err(e),
                described.join(", ")
            )
        })
    }

    pub(super) fn exists(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        let exists = self.client.get_table_names().map_err(thrift_err)?.contains(&t);
        writeln!(self.out, "Table {} does {}exist", text(&t), if exists { "" } else { "not " })?;
        Ok(())
    }

    /// enable, disable, drop, is_enabled, is_disabled: one table argument.
    pub(super) fn table_state(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        match cmd.name.as_str() {
            "enable" => self.client.enable_table(t).map_err(thrift_err)?,
            "disable" => self.client.disable_table(t).map_err(thrift_err)?,
            "drop" => self.client.delete_table(t).map_err(thrift_err)?,
            "is_enabled" => {
                let enabled = self.client.is_table_enabled(t).map_err(thrift_err)?;
                writeln!(self.out, "{enabled}")?;
            }
            "is_disabled" => {
                let enabled = self.client.is_table_enabled(t).map_err(thrift_err)?;
                writeln!(self.out, "{}", !enabled)?;
            }
            other => bail!("{other}: not a table state command"),
        }
        Ok(())
    }
}
