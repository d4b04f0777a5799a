//! The gateway's table calls: create, delete, enable, disable, list,
//! describe, compact, and where a table's regions are. In a cluster, a
//! DDL call returns once every other server has taken the table's new
//! state from the root, as HBase's DDL returns once every region server
//! has acted on it.

use store::{RegionInfo, RegionState, StoreError, TableDescriptor};

use super::{Gateway, GatewayError, GatewayResult, RegionLocation};
use crate::peer::region_ops::{self, RegionOpError, query_value};

/// A region operation's failure as the gateway says it: a region with no
/// holder for a while is NotServingRegion (the client tries again).
fn op_error(e: RegionOpError) -> GatewayError {
    match e {
        RegionOpError::Store(e) => GatewayError::Store(e),
        e @ RegionOpError::InTransition { .. } => GatewayError::NotServing(e.to_string()),
        RegionOpError::Refused { status: 409 | 503, text } => GatewayError::NotServing(text.trim_end().to_string()),
        RegionOpError::Refused { status: 400 | 404, text } => {
            GatewayError::IllegalArgument(text.trim_end().to_string())
        }
        RegionOpError::Refused { text, .. } => {
            GatewayError::Remote { kind: super::RemoteKind::IoError, message: text.trim_end().to_string() }
        }
    }
}

impl Gateway {
    /// In a cluster, has every other server take `table`'s state from the
    /// root (`done`: what this server did) before the call returns.
    fn ddl_everywhere(&self, table: &str, done: &'static str) -> GatewayResult<()> {
        let failed = self.router.sync_table_everywhere(table);
        if failed.is_empty() {
            return Ok(());
        }
        Err(GatewayError::NotEverywhere { table: table.to_string(), done, failed: failed.join("; ") })
    }

    /// Creates a table (with the durability tables created here get).
    pub fn create_table(&self, desc: TableDescriptor) -> GatewayResult<()> {
        self.create_table_split(desc, &[])
    }

    /// Creates a table whose first regions start at each of `split_keys`
    /// (HBase's `createTable(desc, splitKeys)`).
    pub fn create_table_split(&self, mut desc: TableDescriptor, split_keys: &[Vec<u8>]) -> GatewayResult<()> {
        desc.durability = self.table_durability;
        let name = desc.name.clone();
        self.store.create_table(desc, split_keys)?;
        // Every server of a cluster lists it before the call returns.
        self.ddl_everywhere(&name, "created")
    }

    /// Deletes a disabled table.
    pub fn delete_table(&self, name: &str) -> GatewayResult<()> {
        // In a cluster every server must have the table disabled (its
        // regions flushed) before its files go, and forget it after.
        self.ddl_everywhere(name, "disabled")?;
        self.store.delete_table(name)?;
        self.ddl_everywhere(name, "deleted")?;
        // Its latencies join the dropped tables', as its store counters do.
        self.requests.table_dropped(name);
        Ok(())
    }

    /// Empties disabled table `name` as HBase's `truncateTable` does: the
    /// table is dropped and created again from its descriptor, with its
    /// regions' start keys when `preserve_splits`, and is enabled after
    /// (as HBase leaves it). Two steps, not one: a crash between the drop
    /// and the create leaves no table (HBase's procedure would finish the
    /// create on restart); the caller asked for its rows to go.
    pub fn truncate_table(&self, name: &str, preserve_splits: bool) -> GatewayResult<()> {
        if self.store.is_table_enabled(name)? {
            return Err(StoreError::TableEnabled(name.to_string()).into());
        }
        let desc = self.store.describe_table(name)?;
        let splits: Vec<Vec<u8>> = if preserve_splits {
            let mut keys: Vec<Vec<u8>> =
                self.store.table_regions(name)?.into_iter().map(|r| r.start_key).filter(|k| !k.is_empty()).collect();
            keys.sort();
            keys
        } else {
            Vec::new()
        };
        match self.delete_table(name) {
            Ok(()) => {}
            // Dropped here, not yet taken by every member: the create goes
            // on (its own broadcast tells them), or the table would be gone.
            Err(e @ GatewayError::NotEverywhere { .. }) if !self.store.list_tables().iter().any(|t| t == name) => {
                tracing::warn!(table = %name, error = %e, "truncate: a member did not take the drop; creating again");
            }
            Err(e) => return Err(e),
        }
        self.create_table_split(desc, &splits)
    }

    pub fn enable_table(&self, name: &str) -> GatewayResult<()> {
        self.store.enable_table(name)?;
        self.ddl_everywhere(name, "enabled")
    }

    pub fn disable_table(&self, name: &str) -> GatewayResult<()> {
        self.store.disable_table(name)?;
        self.ddl_everywhere(name, "disabled")
    }

    pub fn is_table_enabled(&self, name: &str) -> GatewayResult<bool> {
        Ok(self.store.is_table_enabled(name)?)
    }

    /// Compacts every region of a table (`major`: into one file per
    /// family), on every member of a cluster.
    pub fn compact_table(&self, name: &str, major: bool) -> GatewayResult<()> {
        let query = format!("table={}&major={major}", query_value(name.as_bytes()));
        region_ops::table_wide(&self.router, false, "compact", &query, || self.store.compact_table(name, major))
            .map_err(op_error)
    }

    /// Changes a table's families to `desc`'s (HBase's modifyTable; the
    /// store keeps what a family's data needs, see `Store::alter_table`).
    /// In a cluster an enabled table is disabled for the change and
    /// enabled after, every member told at each step, as the admin port's
    /// alter does: to the client it is HBase's online schema change (its
    /// regions close and reopen once); a member that cannot drain the table
    /// leaves it unaltered and serving.
    pub fn alter_table(&self, desc: TableDescriptor) -> GatewayResult<()> {
        let name = desc.name.clone();
        let around = self.router.is_cluster() && self.store.is_table_enabled(&name)?;
        if around {
            self.store.disable_table(&name)?;
            if let Err(e) = self.ddl_everywhere(&name, "disabled") {
                // Nothing altered: the table serves again, or says why not.
                let enabled = self.store.enable_table(&name).map_err(GatewayError::from);
                if let Err(again) = enabled.and_then(|()| self.ddl_everywhere(&name, "enabled")) {
                    tracing::error!(table = %name, error = %again, "an alter's rollback left the table disabled");
                }
                return Err(e);
            }
        }
        let altered = self
            .store
            .alter_table(desc)
            .map_err(GatewayError::from)
            .and_then(|()| self.ddl_everywhere(&name, "altered"));
        if around {
            self.store.enable_table(&name)?;
            self.ddl_everywhere(&name, "enabled")?;
        }
        altered
    }

    /// Flushes every region of a table, on every member of a cluster.
    pub fn flush_table(&self, name: &str) -> GatewayResult<()> {
        let query = format!("table={}", query_value(name.as_bytes()));
        region_ops::table_wide(&self.router, false, "flush", &query, || self.store.flush_table(name)).map_err(op_error)
    }

    /// Flushes region `region`.
    pub fn flush_region(&self, region: &RegionInfo) -> GatewayResult<()> {
        Ok(self.store.flush_region(&region.table, &region.start_key)?)
    }

    /// Compacts `family`'s store (every store with `None`) of `region`.
    pub fn compact_region(&self, region: &RegionInfo, family: Option<&[u8]>, major: bool) -> GatewayResult<()> {
        Ok(self.store.compact_named_region(&region.dir_name(), family, major)?)
    }

    /// Splits the region of `table` holding `row` at `at` (its midpoint
    /// with `None`) on the member holding it; whether it split. In a
    /// cluster every server takes the daughters before the call returns.
    pub fn split_region(&self, table: &str, row: &[u8], at: Option<&[u8]>) -> GatewayResult<bool> {
        let mut query = format!("table={}&row={}", query_value(table.as_bytes()), query_value(row));
        if let Some(at) = at {
            query.push_str(&format!("&at={}", query_value(at)));
        }
        let done = region_ops::split(&self.store, &self.router, table, row, at, &query).map_err(op_error)?;
        if done.here {
            self.ddl_everywhere(table, "split")?;
        }
        Ok(done.split)
    }

    /// Merges two adjacent regions named by their encoded names
    /// ([`RegionInfo::dir_name`]); returns the merged region's. In a
    /// cluster every server takes the merged region before the call
    /// returns, as after a split.
    pub fn merge_regions(&self, a: &str, b: &str) -> GatewayResult<String> {
        let query = format!("a={}&b={}", query_value(a.as_bytes()), query_value(b.as_bytes()));
        let (merged, here) = region_ops::merge(&self.store, &self.router, a, b, &query).map_err(op_error)?;
        if here && let Some(table) = self.store.table_of_region(&merged) {
            self.ddl_everywhere(&table, "merged")?;
        }
        Ok(merged)
    }

    /// The store's counters and levels now, per region among them (what
    /// HBase's region servers report as their load).
    pub fn store_metrics(&self) -> store::metrics::StoreMetrics {
        self.store.metrics()
    }

    pub fn list_tables(&self) -> Vec<String> {
        self.store.list_tables()
    }

    pub fn describe_table(&self, name: &str) -> GatewayResult<TableDescriptor> {
        Ok(self.store.describe_table(name)?)
    }

    /// Every region of a table and the server holding it; a missing table
    /// has none (as HBase answers). In a cluster, a region held elsewhere
    /// names its owner, as the live servers report it now.
    pub fn table_regions(&self, name: &str) -> GatewayResult<Vec<RegionLocation>> {
        let regions = match self.store.region_states(name) {
            Err(StoreError::TableNotFound(_)) => Vec::new(),
            other => other?,
        };
        let cluster = self.router.is_cluster();
        // With the master's catalog to read, each owner is looked up there
        // now (a client is told where the region is, not where it was);
        // without, the other servers are asked first.
        if cluster && !self.router.has_locator() && regions.iter().any(|(_, s)| *s == RegionState::Offline) {
            self.router.refresh();
        }
        let owner_of = |r: &RegionInfo, state| -> Option<(String, u16)> {
            if state != RegionState::Offline || !cluster {
                return None;
            }
            let owner = if self.router.has_locator() {
                self.router.locate(&r.dir_name())
            } else {
                self.router.owner(&r.dir_name())
            };
            let addr: std::net::SocketAddr = owner?.parse().ok()?;
            Some((addr.ip().to_string(), addr.port()))
        };
        Ok(regions
            .into_iter()
            .map(|(r, state)| match owner_of(&r, state) {
                Some((host, port)) => RegionLocation { info: r, host, port, elsewhere: true },
                None => {
                    let (host, port) = self.here();
                    RegionLocation { info: r, host, port, elsewhere: false }
                }
            })
            .collect())
    }

    /// Every region of table `name` this server lists, each with whether
    /// another server holds it (in a cluster, an OFFLINE one here), without
    /// asking who.
    pub fn regions_here_or_elsewhere(&self, name: &str) -> GatewayResult<Vec<(RegionInfo, bool)>> {
        let regions = match self.store.region_states(name) {
            Err(StoreError::TableNotFound(_)) => Vec::new(),
            other => other?,
        };
        let cluster = self.router.is_cluster();
        Ok(regions.into_iter().map(|(r, state)| (r, cluster && state == RegionState::Offline)).collect())
    }

    /// Where the server holding region `encoded` serves HBase's RPC: as the
    /// master's catalog records it (`fresh`: now; otherwise as last looked
    /// up there), or (without a catalog to read) as the other servers list
    /// it.
    pub fn region_rpc_location(&self, encoded: &str, fresh: bool) -> Option<crate::peer::routing::RpcLocation> {
        let thrift = match (self.router.has_locator(), fresh) {
            (true, true) => self.router.locate(encoded)?,
            (true, false) => self.router.cached(encoded).or_else(|| self.router.locate(encoded))?,
            (false, _) => self.router.owner(encoded)?,
        };
        self.router.rpc_location(&thrift)
    }

    /// Where the servers holding each of `regions` serve HBase's RPC, as
    /// the master's catalog records them now, in one question (a region
    /// left out: no live owner known, or no catalog to ask).
    pub fn regions_rpc_locations_fresh(
        &self,
        regions: &[String],
    ) -> std::collections::HashMap<String, crate::peer::routing::RpcLocation> {
        self.router
            .locate_many(regions)
            .into_iter()
            .filter_map(|(encoded, thrift)| Some((encoded, self.router.rpc_location(&thrift)?)))
            .collect()
    }

    /// Every region of `table` this server lists (in a cluster, also the
    /// ones other servers hold), without asking who holds them.
    pub fn region_infos(&self, name: &str) -> GatewayResult<Vec<RegionInfo>> {
        Ok(self.store.table_regions(name)?)
    }

    /// The region of table `name` whose id is `id`, if this server has it.
    pub fn region_info(&self, name: &str, id: u64) -> GatewayResult<Option<RegionInfo>> {
        Ok(self.store.table_region(name, id)?)
    }

    /// The region of `table` holding `row`, as this server reports it.
    pub fn region_holding(&self, table: &str, row: &[u8]) -> GatewayResult<RegionLocation> {
        let regions = self.store.table_regions(table)?;
        let info = regions.into_iter().find(|r| r.contains(row)).ok_or_else(|| GatewayError::NoRegion {
            table: table.to_string(),
            row: String::from_utf8_lossy(row).into_owned(),
        })?;
        let (host, port) = self.here();
        Ok(RegionLocation { info, host, port, elsewhere: false })
    }

    /// This server's client address (`localhost:0` until it is bound).
    fn here(&self) -> (String, u16) {
        self.served_at.get().map_or(("localhost".to_string(), 0), |a| (a.ip().to_string(), a.port()))
    }
}
