//! The tools commands (HBase's `tools` group) and `status`: compactions
//! over Thrift; flush, split, merge, assign and unassign through the
//! server's admin calls on its HTTP port (Thrift v1 has none of them) — in
//! a cluster, assign, unassign and move through the active master's, the
//! one authority over where regions open; list_regions and status from its
//! `/status` document.

use std::io::Write;

use anyhow::{anyhow, bail};
use server::thrift::client::THbaseSyncClient;

use super::args::Args;
use super::parse::Command;
use super::{Shell, text, thrift_err};

impl<W: Write> Shell<W> {
    pub(super) fn flush(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        self.http.admin("flush", &[("table", &t)]).map(|_| ())
    }

    /// `compact 'NAME'[, 'FAMILY']` and `major_compact` the same: NAME is
    /// a table or, as in HBase's shell, a region (in any form
    /// `encoded_region` takes); with FAMILY, only that family's stores.
    pub(super) fn compact(&mut self, cmd: &Command, major: bool) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 2, &[])?;
        let name = args.bytes(0, "table or region name")?;
        let family = args.opt_bytes(1, "column family")?;
        // A table by that name comes first, as in HBase's shell.
        let tables = self.client()?.get_table_names().map_err(thrift_err)?;
        let (kind, target) =
            if tables.contains(&name) { ("table", name) } else { ("region", encoded_region(&cmd.name, &name)?) };
        let mut params: Vec<(&str, &[u8])> = vec![(kind, &target)];
        if let Some(f) = &family {
            params.push(("family", f));
        }
        if major {
            params.push(("major", b"true"));
        }
        self.http.admin("compact", &params).map(|_| ())
    }

    /// `split 'table'` splits every region at its midpoint; `split 'table',
    /// 'key'` splits the region holding `key` at `key` (HBase's forms).
    pub(super) fn split(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 2, &[])?;
        let t = args.bytes(0, "table")?;
        if let Some(key) = args.opt_bytes(1, "split key")? {
            return self.http.admin("split", &[("table", &t), ("row", &key), ("at", &key)]).map(|_| ());
        }
        let regions = self.client()?.get_table_regions(t.clone()).map_err(thrift_err)?;
        for r in regions {
            // A region too small to split is not an error for `split 'table'`.
            if let Err(e) = self.http.admin("split", &[("table", &t), ("row", &r.start_key.unwrap_or_default())]) {
                writeln!(self.out, "{e}")?;
            }
        }
        Ok(())
    }

    /// `unassign 'ENCODED'` (and `close_region`) and `assign 'ENCODED'`:
    /// the server's own call, or in a cluster the active master's.
    pub(super) fn assignment(&mut self, cmd: &Command, open: bool) -> anyhow::Result<()> {
        let call = if open { "assign" } else { "unassign" };
        let region = encoded_region(call, &Args::parse(cmd, 1, &[])?.bytes(0, "region name")?)?;
        match self.active_master(call)? {
            Some(master) => self.http.admin_at(&master, call, &[("region", &region)]),
            None => self.http.admin(call, &[("region", &region)]),
        }
        .map(|_| ())
    }

    /// `move 'ENCODED'[, 'SERVER']`, through the active master.
    pub(super) fn move_region(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 2, &[])?;
        let region = encoded_region("move", &args.bytes(0, "region name")?)?;
        let server = args.opt_bytes(1, "server name")?.unwrap_or_default();
        let master = self
            .active_master("move")?
            .ok_or_else(|| anyhow!("move: this server is not in a cluster (a standalone server holds every region)"))?;
        let answer = self.http.admin_at(&master, "move", &[("region", &region), ("server", &server)])?;
        write!(self.out, "{answer}")?;
        Ok(())
    }

    /// `balancer`: runs the cluster's balancer now, through the active
    /// master; `balance_switch true|false` switches the periodic balancer
    /// and prints the previous state (HBase's shell's two commands).
    pub(super) fn balancer(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 1, &[])?;
        let params: Vec<(&str, &[u8])> = match cmd.name.as_str() {
            "balance_switch" => match args.opt_bool(0, "on")? {
                Some(true) => vec![("on", b"true".as_slice())],
                Some(false) => vec![("on", b"false".as_slice())],
                None => bail!("balance_switch: argument 1 (on) is missing: true or false"),
            },
            _ if !args.positional().is_empty() => bail!("balancer: takes no arguments (there is no 'force')"),
            _ => Vec::new(),
        };
        let Some(master) = self.active_master(&cmd.name)? else {
            bail!("{}: this server is not in a cluster; a standalone server holds every region", cmd.name);
        };
        let answer = self.http.admin_at(&master, &cmd.name, &params)?;
        write!(self.out, "{answer}")?;
        Ok(())
    }

    /// In a cluster, the active master's HTTP address (`None`: standalone).
    fn active_master(&mut self, call: &str) -> anyhow::Result<Option<String>> {
        let status = self.http.status()?;
        let Some(cluster) = status.server.cluster else { return Ok(None) };
        let http = cluster.active_master.map(|m| m.http).filter(|h| !h.is_empty());
        http.map(Some).ok_or_else(|| anyhow!("{call}: the cluster has no active master; regions move only through it"))
    }

    pub(super) fn merge_region(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 2, &[])?;
        let a = encoded_region("merge_region", &args.bytes(0, "region name")?)?;
        let b = encoded_region("merge_region", &args.bytes(1, "region name")?)?;
        let merged = self.http.admin("merge", &[("a", &a), ("b", &b)])?;
        write!(self.out, "{merged}")?;
        Ok(())
    }

    /// `get_splits 't'`: the table's split keys (every region's start key
    /// but the first), as HBase's shell prints them.
    pub(super) fn get_splits(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = Args::parse(cmd, 1, &[])?.bytes(0, "table")?;
        let regions = self.client()?.get_table_regions(t).map_err(thrift_err)?;
        let mut splits: Vec<Vec<u8>> =
            regions.into_iter().filter_map(|r| r.start_key).filter(|k| !k.is_empty()).collect();
        splits.sort();
        writeln!(self.out, "Total number of splits = {}", splits.len())?;
        for s in &splits {
            writeln!(self.out, "{}", text(s))?;
        }
        Ok(())
    }

    /// `locate_region 't', 'row'`: the region holding `row` and its server.
    pub(super) fn locate_region(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 2, &[])?;
        let (t, row) = (args.bytes(0, "table")?, args.bytes(1, "row")?);
        let regions = self.client()?.get_table_regions(t.clone()).map_err(thrift_err)?;
        let holds = |r: &server::thrift::hbase_thrift::TRegionInfo| {
            let (start, end) = (r.start_key.clone().unwrap_or_default(), r.end_key.clone().unwrap_or_default());
            start <= row && (end.is_empty() || row < end)
        };
        let r = regions
            .into_iter()
            .find(holds)
            .ok_or_else(|| anyhow!("locate_region: no region of {} holds {}", text(&t), text(&row)))?;
        writeln!(self.out, "{:<32}REGION", "HOST")?;
        writeln!(
            self.out,
            " {:<31}{{NAME => '{}', STARTKEY => '{}', ENDKEY => '{}', ID => {}}}",
            format!("{}:{}", text(&r.server_name.unwrap_or_default()), r.port.unwrap_or_default()),
            text(&r.name.unwrap_or_default()),
            text(&r.start_key.unwrap_or_default()),
            text(&r.end_key.unwrap_or_default()),
            r.id.unwrap_or_default()
        )?;
        writeln!(self.out, "1 row(s)")?;
        Ok(())
    }

    /// `list_regions 'table'`: each region's encoded name, keys and state.
    pub(super) fn list_regions(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let t = String::from_utf8_lossy(&Args::parse(cmd, 1, &[])?.bytes(0, "table")?).into_owned();
        let status = self.http.status()?;
        let table = status.table(&t).ok_or_else(|| anyhow!("list_regions: unknown table {t:?}"))?;
        writeln!(
            self.out,
            "{:<18} {:<10} {:<20} {:<20} {:>12}",
            "ENCODED NAME", "STATE", "START KEY", "END KEY", "FILES (MB)"
        )?;
        for r in &table.regions {
            writeln!(
                self.out,
                "{:<18} {:<10} {:<20} {:<20} {:>12.1}",
                r.id,
                r.state.name(),
                r.start_key,
                r.end_key,
                r.files_bytes as f64 / 1048576.0
            )?;
        }
        Ok(())
    }

    /// `status`, or HBase's `status 'simple'|'summary'|'detailed'` (all
    /// print the same summary here: one line per server in a cluster).
    pub(super) fn status(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let args = Args::parse(cmd, 1, &[])?;
        if let Some(kind) = args.opt_bytes(0, "format")? {
            let kind = String::from_utf8_lossy(&kind).into_owned();
            if !["simple", "summary", "detailed", "replication"].contains(&kind.as_str()) {
                bail!("status: format must be 'summary', 'simple' or 'detailed', got {kind:?}");
            }
            if kind == "replication" {
                bail!("status: 'replication': this server does not replicate");
            }
        }
        let v = self.http.status()?;
        if let Some(cluster) = &v.server.cluster {
            return self.cluster_status(cluster);
        }
        let t = &v.totals;
        let tables = v.tables.len();
        writeln!(
            self.out,
            "1 active server, {} tables, {} regions, memstore {:.1} MB, {} disk flushes, {} in-memory flushes, {} compactions",
            tables,
            t.regions,
            t.memstore_data_bytes as f64 / 1048576.0,
            t.disk_flushes,
            t.inmemory_flushes,
            t.disk_compactions
        )?;
        Ok(())
    }

    /// `status` of a cluster member: the active master, the live servers
    /// with their regions and memstore (each one's own `/status`), and the
    /// totals, as HBase's `status 'simple'` lists them.
    fn cluster_status(&mut self, cluster: &http_api::ClusterSeen) -> anyhow::Result<()> {
        if let Some(e) = &cluster.error {
            anyhow::bail!("status: this server cannot read the cluster from ZooKeeper: {e}");
        }
        match &cluster.active_master {
            Some(m) => writeln!(
                self.out,
                "active master: {} (http {}), {} backup masters",
                m.name,
                m.http,
                cluster.masters.saturating_sub(1)
            )?,
            None => writeln!(self.out, "no active master")?,
        }
        writeln!(self.out, "{} live servers", cluster.servers.len())?;
        let (mut regions, mut memstore) = (0u64, 0f64);
        for s in &cluster.servers {
            let (name, thrift) = (&s.name, &s.thrift);
            match Some(&s.http).filter(|h| !h.is_empty()).map(|h| self.http.status_of(h)) {
                Some(Ok(status)) => {
                    let open = status.open_regions().count() as u64;
                    let mb = status.totals.memstore_data_bytes as f64 / 1048576.0;
                    writeln!(self.out, "    {name} thrift {thrift}: regions={open}, memstore={mb:.1} MB")?;
                    regions += open;
                    memstore += mb;
                }
                Some(Err(e)) => writeln!(self.out, "    {name} thrift {thrift}: unreachable ({e})")?,
                None => writeln!(self.out, "    {name}: starting")?,
            }
        }
        writeln!(self.out, "{regions} regions open, memstore {memstore:.1} MB")?;
        Ok(())
    }
}

/// The encoded name of the region `name` names, in any form HBase's shell
/// takes: the encoded name itself (`0000000000000002`), or the full region
/// name `table,startkey,id` as getTableRegions (and happybase's
/// `regions()`) gives it (`mg,,2`, the id in decimal), as the status page
/// lists it (`mg,,0000000000000002`), or in HBase's own form
/// `table,startkey,id.ENCODED.`. The start key may hold commas: the id is
/// what follows the last one.
fn encoded_region(call: &str, name: &[u8]) -> anyhow::Result<Vec<u8>> {
    let text = String::from_utf8_lossy(name);
    let is_encoded = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let Some((_, id)) = text.rsplit_once(',') else {
        // An encoded name, or something the server will say it lacks.
        return Ok(name.to_vec());
    };
    let id = id.trim_end_matches('.');
    let encoded = match id.split_once('.') {
        Some((_, encoded)) => encoded.to_string(),
        None if is_encoded(id) => id.to_string(),
        None => match id.parse::<u64>() {
            Ok(n) => format!("{n:016x}"),
            Err(_) => bail!("{call}: {text:?} is not a region name (table,startkey,id) or an encoded region name"),
        },
    };
    Ok(encoded.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::encoded_region;

    #[test]
    fn a_region_is_named_in_every_form_hbases_shell_takes() {
        let enc = |name: &str| String::from_utf8(encoded_region("t", name.as_bytes()).expect(name)).expect("utf8");
        assert_eq!(enc("0000000000000002"), "0000000000000002");
        assert_eq!(enc("mg,,2"), "0000000000000002");
        assert_eq!(enc("mg,,0000000000000002"), "0000000000000002");
        assert_eq!(enc("mg,a,b,26"), "000000000000001a", "a start key with a comma");
        assert_eq!(enc("mg,,1700000000000.0000000000000003."), "0000000000000003");
        assert_eq!(enc("nope"), "nope", "left for the server to refuse by name");
        assert!(encoded_region("t", b"mg,,x").is_err());
    }
}
