//! The table commands (HBase's `ddl` group, and truncate): list, create,
//! describe, alter, truncate, exists, enable, disable, is_enabled,
//! is_disabled, drop.
//!
//! What the server lacks is said, not faked: Thrift v1's createTable takes
//! no split keys, so `create ..., SPLITS => [...]` creates the table and then
//! splits it at each key through the admin split call; Thrift v1 has no
//! call that changes a table's families, so `alter` uses the admin alter
//! call (`POST /admin/alter`).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, anyhow, bail};
use server::thrift::client::THbaseSyncClient;
use server::thrift::hbase_thrift::ColumnDescriptor;

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
    // Not in Thrift's column descriptor: set by an alter after the create.
    ("BLOCKSIZE", Kind::Int),
    ("IN_MEMORY_COMPACTION", Kind::Bytes),
    ("INDEX_BLOCK_ENCODING", Kind::Bytes),
    ("KEEP_DELETED_CELLS", Kind::Bool),
    ("DATA_BLOCK_ENCODING", Kind::Bytes),
    ("MIN_VERSIONS", Kind::Int),
    ("REPLICATION_SCOPE", Kind::Int),
];

/// create's settings that Thrift's createTable cannot carry; the shell sets
/// them with an admin alter right after the create.
const SET_AFTER_CREATE: &[&str] = &["BLOCKSIZE", "IN_MEMORY_COMPACTION"];

/// HBase family settings that have one value here: the value (what
/// `describe` shows, HBase's default) and why another is refused.
const FIXED: &[(&str, &str, &str)] = &[
    ("INDEX_BLOCK_ENCODING", "NONE", "index blocks are stored unencoded"),
    (
        "KEEP_DELETED_CELLS",
        "FALSE",
        "reads drop delete markers and the cells they cover, and major compactions purge them",
    ),
    (
        "DATA_BLOCK_ENCODING",
        "NONE",
        "data blocks are stored unencoded (COMPRESSION => 'LZ4' or 'ZSTD' makes them smaller)",
    ),
    ("MIN_VERSIONS", "0", "a TTL expires every version of a cell"),
    ("REPLICATION_SCOPE", "0", "there is no replication between clusters"),
];

/// Refuses a FIXED setting given another value than its one.
fn check_fixed(cmd: &str, opts: &Options) -> anyhow::Result<()> {
    for (key, only, why) in FIXED {
        let given = opts.bytes(key).map(|b| text(&b)).or_else(|| opts.flag(key).map(|b| b.to_string()));
        if let Some(v) = given
            && !v.eq_ignore_ascii_case(only)
        {
            bail!("{cmd}: {key} => '{v}' is not supported: {why} (it is always '{only}')");
        }
    }
    Ok(())
}

const TABLE_OPTIONS: &[(&str, Kind)] =
    &[("SPLITS", Kind::BytesList), ("SPLITS_FILE", Kind::Bytes), ("NUMREGIONS", Kind::Int), ("SPLITALGO", Kind::Bytes)];

/// What `alter` takes for a family: create's settings, and more.
const ALTER_OPTIONS: &[(&str, Kind)] = &[
    ("NAME", Kind::Bytes),
    ("METHOD", Kind::Bytes),
    ("VERSIONS", Kind::Int),
    ("TTL", Kind::Bytes),
    ("BLOOMFILTER", Kind::Bytes),
    ("COMPRESSION", Kind::Bytes),
    ("IN_MEMORY", Kind::Bool),
    ("BLOCKCACHE", Kind::Bool),
    ("BLOCKSIZE", Kind::Int),
    ("IN_MEMORY_COMPACTION", Kind::Bytes),
    ("INDEX_BLOCK_ENCODING", Kind::Bytes),
    ("KEEP_DELETED_CELLS", Kind::Bool),
    ("DATA_BLOCK_ENCODING", Kind::Bytes),
    ("MIN_VERSIONS", Kind::Int),
    ("REPLICATION_SCOPE", Kind::Int),
];

/// A family with HBase's shell defaults (not the Thrift IDL's): one
/// version, in the block cache, and a ROW bloom filter
/// (`ColumnFamilyDescriptorBuilder.DEFAULT_BLOOMFILTER`; HBase's Thrift
/// gateway gives a happybase family without options NONE, and so do we).
fn family(name: Vec<u8>) -> ColumnDescriptor {
    ColumnDescriptor {
        name: Some(name),
        max_versions: Some(1),
        in_memory: Some(false),
        block_cache_enabled: Some(true),
        bloom_filter_type: Some("ROW".to_string()),
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
        bloom_filter_type: opts.bytes("BLOOMFILTER").map(|b| text(&b)).or(defaults.bloom_filter_type.clone()),
        compression: opts.bytes("COMPRESSION").map(|b| text(&b)),
        time_to_live: ttl,
        in_memory: opts.flag("IN_MEMORY").or(defaults.in_memory),
        block_cache_enabled: opts.flag("BLOCKCACHE").or(defaults.block_cache_enabled),
        ..defaults
    })
}

/// A family as `describe` prints it: every setting HBase 2.6's shell
/// shows, in its order, with our in-memory compaction policy.
fn describe_descriptor(f: &store::FamilyDescriptor) -> String {
    let fixed = |key: &str| FIXED.iter().find(|(k, _, _)| *k == key).map_or("", |(_, v, _)| v);
    let (bloom, compression) = (f.bloom.name(), f.compression.name());
    format!(
        "{{NAME => '{}', INDEX_BLOCK_ENCODING => '{}', VERSIONS => '{}', KEEP_DELETED_CELLS => '{}', \
         DATA_BLOCK_ENCODING => '{}', TTL => '{}', MIN_VERSIONS => '{}', REPLICATION_SCOPE => '{}', \
         BLOOMFILTER => '{bloom}', IN_MEMORY => '{}', IN_MEMORY_COMPACTION => '{}', COMPRESSION => '{compression}', \
         BLOCKCACHE => '{}', BLOCKSIZE => '{}'}}",
        f.name,
        fixed("INDEX_BLOCK_ENCODING"),
        f.max_versions,
        fixed("KEEP_DELETED_CELLS"),
        fixed("DATA_BLOCK_ENCODING"),
        f.ttl_secs.map_or("FOREVER".to_string(), human_ttl),
        fixed("MIN_VERSIONS"),
        fixed("REPLICATION_SCOPE"),
        f.in_memory,
        f.memstore_policy.to_ascii_uppercase(),
        f.block_cache,
        human_block_size(f.block_size),
    )
}

/// A TTL as HBase's `PrettyPrinter` shows it: `86400 SECONDS (1 DAY)`.
fn human_ttl(secs: u64) -> String {
    if secs < 60 {
        return format!("{secs} SECOND{}", if secs == 1 { "" } else { "S" });
    }
    let parts =
        [(secs / 86400, "DAY"), (secs % 86400 / 3600, "HOUR"), (secs % 3600 / 60, "MINUTE"), (secs % 60, "SECOND")];
    let named: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}{}", if *n == 1 { "" } else { "S" }))
        .collect();
    format!("{secs} SECONDS ({})", named.join(" "))
}

/// A block size as HBase 2.6's shell shows it: `65536 B (64KB)`.
fn human_block_size(bytes: usize) -> String {
    let human = if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}MB", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{}KB", bytes >> 10)
    } else {
        format!("{bytes}B")
    };
    format!("{bytes} B ({human})")
}

/// A family's settings in a message (Thrift's column descriptor).
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

/// The split keys a create's table options name: SPLITS, the lines of
/// SPLITS_FILE, and NUMREGIONS keys of SPLITALGO (HBase's shell takes each).
fn table_splits(opts: &Options) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut splits = opts.bytes_list("SPLITS");
    if let Some(file) = opts.bytes("SPLITS_FILE") {
        splits.extend(super::split_keys::splits_file(&String::from_utf8_lossy(&file))?);
    }
    match (opts.int("NUMREGIONS"), opts.bytes("SPLITALGO")) {
        (Some(n), Some(algo)) => splits.extend(super::split_keys::split_keys(&String::from_utf8_lossy(&algo), n)?),
        (None, None) => {}
        (Some(_), None) => {
            bail!("create: NUMREGIONS needs SPLITALGO (HexStringSplit, DecimalStringSplit or UniformSplit)")
        }
        (None, Some(_)) => bail!("create: SPLITALGO needs NUMREGIONS"),
    }
    Ok(splits)
}

impl<W: Write> Shell<W> {
    /// The server's table names, for the interactive shell's completion.
    pub(super) fn table_names(&mut self) -> anyhow::Result<Vec<String>> {
        let names = self.client()?.get_table_names().map_err(thrift_err)?;
        Ok(names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect())
    }

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
        let names = self.client()?.get_table_names().map_err(thrift_err)?;
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
        // Per family, the settings an alter sets after the create.
        let mut after: Vec<Vec<(&str, Vec<u8>)>> = Vec::new();
        for (i, a) in cmd.args.iter().enumerate().skip(1) {
            match a {
                Value::Dict(d) if d.contains_key("NAME") => {
                    let opts = Options::check("create", d, FAMILY_OPTIONS)?;
                    check_fixed("create", &opts)?;
                    let family = family_of(&opts)?;
                    let mut call = vec![("family", family.name.clone().unwrap_or_default())];
                    for key in SET_AFTER_CREATE {
                        let value = opts.int(key).map(|v| v.to_string().into_bytes()).or_else(|| opts.bytes(key));
                        call.extend(value.map(|v| (*key, v)));
                    }
                    if call.len() > 1 {
                        after.push(call);
                    }
                    families.push(family);
                }
                Value::Dict(d) => splits.extend(table_splits(&Options::check("create", d, TABLE_OPTIONS)?)?),
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
        self.client()?.create_table(table.clone(), families).map_err(thrift_err)?;
        for call in &after {
            let mut params: Vec<(&str, &[u8])> = vec![("table", &table)];
            params.extend(call.iter().map(|(k, v)| (*k, v.as_slice())));
            self.http.admin("alter", &params).with_context(|| {
                format!("created table {} but could not set {}", text(&table), SET_AFTER_CREATE.join(" and "))
            })?;
        }
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
        let enabled = self.client()?.is_table_enabled(table.clone()).map_err(thrift_err)?;
        let mut desc = self.http.schema(&table)?;
        desc.families.sort_by(|a, b| a.name.cmp(&b.name));
        writeln!(self.out, "Table {} is {}", text(&table), if enabled { "ENABLED" } else { "DISABLED" })?;
        writeln!(self.out, "COLUMN FAMILIES DESCRIPTION")?;
        for f in &desc.families {
            writeln!(self.out, "{}", describe_descriptor(f))?;
        }
        writeln!(self.out, "{} row(s)", desc.families.len())?;
        Ok(())
    }

    /// `alter 't', NAME => 'f', VERSIONS => 5` (change family f, or add it),
    /// `alter 't', 'delete' => 'f'` or `alter 't', NAME => 'f', METHOD =>
    /// 'delete'` (remove it and its data); several dictionaries apply in
    /// order. Each change is one admin alter call: the server flushes the
    /// table and opens its regions again under the new families.
    pub(super) fn alter(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = table_arg(cmd)?;
        let mut calls: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
        for (i, a) in cmd.args.iter().enumerate().skip(1) {
            let d = match a {
                Value::Dict(d) => d,
                v => bail!("alter: argument {} must be a dictionary (NAME => 'f', ...), got {v}", i + 1),
            };
            let delete = d.iter().find(|(k, _)| k.eq_ignore_ascii_case("delete"));
            if let Some((_, name)) = delete {
                if d.len() > 1 {
                    bail!("alter: 'delete' => 'family' takes no other option in its dictionary");
                }
                let name = name.bytes().ok_or_else(|| anyhow!("alter: 'delete' needs a family name, got {name}"))?;
                calls.push(vec![("delete".into(), name)]);
                continue;
            }
            let opts = Options::check("alter", d, ALTER_OPTIONS)?;
            check_fixed("alter", &opts)?;
            let name = opts.bytes("NAME").ok_or_else(|| anyhow!("alter: a family change needs NAME"))?;
            match opts.bytes("METHOD").map(|m| text(&m).to_ascii_lowercase()) {
                Some(m) if m == "delete" => {
                    if d.len() > 2 {
                        bail!("alter: METHOD => 'delete' takes no settings");
                    }
                    calls.push(vec![("delete".into(), name)]);
                    continue;
                }
                Some(m) => bail!("alter: METHOD => '{m}' is not supported (only 'delete')"),
                None => {}
            }
            let mut call = vec![("family".to_string(), name)];
            let sent = |k: &str| !matches!(k, "NAME" | "METHOD") && !FIXED.iter().any(|(f, _, _)| *f == k);
            for (key, kind) in ALTER_OPTIONS.iter().filter(|(k, _)| sent(k)) {
                let value = match kind {
                    Kind::Int => opts.int(key).map(|v| v.to_string().into_bytes()),
                    Kind::Bool => opts.flag(key).map(|v| v.to_string().into_bytes()),
                    _ => opts.bytes(key),
                };
                if let Some(v) = value {
                    call.push((key.to_string(), v));
                }
            }
            calls.push(call);
        }
        if calls.is_empty() {
            bail!("alter: nothing to change; give NAME => 'family' with its settings, or 'delete' => 'family'");
        }
        for (i, call) in calls.iter().enumerate() {
            let mut params: Vec<(&str, &[u8])> = vec![("table", &table)];
            params.extend(call.iter().map(|(k, v)| (k.as_str(), v.as_slice())));
            self.http.admin("alter", &params).map_err(|e| match i {
                0 => e,
                _ => e.context(format!("the first {i} of the {} changes were made", calls.len())),
            })?;
        }
        writeln!(self.out, "Updating all regions with the new schema...")?;
        writeln!(self.out, "Done.")?;
        Ok(())
    }

    /// `truncate 't'`: disable, drop and create again with the families
    /// the server describes, as HBase's shell does.
    pub(super) fn truncate(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let table = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        let name = text(&table);
        writeln!(self.out, "Truncating '{name}' table (it may take a while):")?;
        let fams: BTreeMap<Vec<u8>, ColumnDescriptor> =
            self.client()?.get_column_descriptors(table.clone()).map_err(thrift_err)?;
        if self.client()?.is_table_enabled(table.clone()).map_err(thrift_err)? {
            writeln!(self.out, "Disabling table...")?;
            self.client()?.disable_table(table.clone()).map_err(thrift_err)?;
        }
        writeln!(self.out, "Truncating table...")?;
        self.client()?.delete_table(table.clone()).map_err(thrift_err)?;
        let families: Vec<ColumnDescriptor> = fams.values().cloned().collect();
        self.client()?.create_table(table, families).map_err(|e| {
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
        let exists = self.client()?.get_table_names().map_err(thrift_err)?.contains(&t);
        writeln!(self.out, "Table {} does {}exist", text(&t), if exists { "" } else { "not " })?;
        Ok(())
    }

    /// enable, disable, drop, is_enabled, is_disabled: one table argument.
    pub(super) fn table_state(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        match cmd.name.as_str() {
            "enable" => self.client()?.enable_table(t).map_err(thrift_err)?,
            "disable" => self.client()?.disable_table(t).map_err(thrift_err)?,
            "drop" => self.client()?.delete_table(t).map_err(thrift_err)?,
            "is_enabled" => {
                let enabled = self.client()?.is_table_enabled(t).map_err(thrift_err)?;
                writeln!(self.out, "{enabled}")?;
            }
            "is_disabled" => {
                let enabled = self.client()?.is_table_enabled(t).map_err(thrift_err)?;
                writeln!(self.out, "{}", !enabled)?;
            }
            other => bail!("{other}: not a table state command"),
        }
        Ok(())
    }
}
