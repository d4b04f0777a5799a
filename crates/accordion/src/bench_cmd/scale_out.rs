//! `accordion bench scale-out`: the paper's write shape through Thrift
//! against a cluster of 1, 2, 3… region servers on this machine (the
//! papers' scale-out figure, scaled): for each size, a real ZooKeeper, a
//! master (in this process) and N `accordion server --cluster` processes
//! sharing a fresh root, a table pre-split into `--regions` regions spread
//! evenly by the master's balancer, and the preset's writers driving the
//! cluster as HBase's client does (each client batch split per owning
//! server: `bench::cluster_engine`). Reported per size: rows/s and its
//! ratio to one server, and per server its regions and the user bytes it
//! took. Every server gets the preset's whole memory budget, as a region
//! server has its own heap.
//!
//! On this machine every server shares the same 2 cores with the clients,
//! so the figure shows the cost of the cluster's machinery (forwarding,
//! more WALs and flushers) more than a gain: read it as that.
//!
//! Failover under load (`--kill-after-secs S`): in every run of two servers
//! or more, the last server is SIGKILLed S seconds into the writes. The
//! writers' client retries as HBase's does (`cluster_engine`), so the run
//! goes on; reported are the seconds from the kill to every region open
//! again on the survivors, the longest client batch, the retries, and —
//! after the run, by a key-only scan of the whole table — how many of the
//! distinct keys every acknowledged batch wrote are missing (lost rows).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bench::cluster_engine::{ClusterEngine, ClusterServer};
use bench::engine::Engine;
use bench::presets::Preset;
use bench::server_status::server_counters;
use bench::workload::KeyDist;
use cluster::local_zk::LocalZooKeeper;
use cluster::master::{Master, MasterConfig};
use serde::Serialize;
use store::{FamilyDescriptor, Store, StoreOptions, TableDescriptor};

use crate::cluster_cmd::{ServerChild, spawn_server, stop_servers};

#[derive(clap::Args, Debug, Clone)]
pub struct ScaleOutArgs {
    /// Cluster sizes to measure, in order.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    pub servers: Vec<usize>,
    /// The paper-write preset's scale (1: 4 M rows).
    #[arg(long, default_value_t = 0.5)]
    pub scale: f64,
    /// Regions of the table (a multiple of each size spreads evenly).
    #[arg(long, default_value_t = 6)]
    pub regions: usize,
    /// In-memory compaction policy of the table's family.
    #[arg(long, default_value = "adaptive:0.5")]
    pub policy: String,
    /// Key distribution: zipf or uniform.
    #[arg(long, default_value = "zipf")]
    pub dist: String,
    /// Also write every figure here as JSON.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// ZooKeeper session timeout of the servers and the master, in ms: how
    /// long a dead server goes unnoticed.
    #[arg(long, default_value_t = 10_000)]
    pub session_timeout_ms: u64,
    /// SIGKILL the last server this many seconds into the writes of every
    /// run of two servers or more, and measure the failover (see above).
    #[arg(long)]
    pub kill_after_secs: Option<f64>,
    /// The table's WAL durability (SYNC_WAL, ASYNC_WAL or SKIP_WAL; the
    /// preset's is ASYNC_WAL, the paper's). Under ASYNC_WAL a killed server
    /// loses the edits it had not written out yet, as HBase's does: measure
    /// lost rows under SYNC_WAL.
    #[arg(long, value_parser = super::run_cmd::parse_durability)]
    pub durability: Option<store::wal::Durability>,
}

/// A failover measured under load.
#[derive(Debug, Serialize)]
struct Failover {
    /// When the server was killed, seconds into the writes.
    killed_at_secs: f64,
    /// From the kill until every region was open on the other servers.
    regions_open_again_secs: f64,
    /// The longest client batch of the run (one that waited out the
    /// failover), in ms.
    longest_batch_ms: f64,
    /// Client calls sent again after a failure.
    retries: u64,
    /// Distinct keys the acknowledged batches wrote, and how many of them a
    /// scan of the table after the run did not find.
    distinct_keys: u64,
    lost_keys: u64,
}

/// One cluster size's run.
#[derive(Debug, Serialize)]
struct SizeRun {
    servers: usize,
    rows: u64,
    seconds: f64,
    rows_per_sec: f64,
    put_p99_us: u64,
    flushes: u64,
    compactions: u64,
    /// Per server: regions open, user MB written to it.
    regions_per_server: Vec<usize>,
    user_mb_per_server: Vec<f64>,
    failover: Option<Failover>,
}

pub fn run(args: &ScaleOutArgs) -> anyhow::Result<()> {
    if args.servers.is_empty() || args.servers.contains(&0) {
        bail!("--servers takes cluster sizes of at least 1");
    }
    let mut preset = Preset::paper_write(KeyDist::parse(&args.dist)?, args.scale)?;
    preset.regions = args.regions.max(1);
    if let Some(d) = args.durability {
        preset.durability = d;
    }
    println!(
        "scale-out: {} rows of {} × {} B, {} threads, {} B batches, {} regions, policy {}, {:?}, {} per server",
        preset.workload.ops,
        preset.workload.fields,
        preset.workload.value_size,
        preset.threads,
        preset.batch_bytes,
        preset.regions,
        args.policy,
        preset.durability,
        mib(preset.memstore_bytes)
    );
    let mut runs: Vec<SizeRun> = Vec::new();
    for &n in &args.servers {
        let run = one_size(&preset, args, n).with_context(|| format!("the {n}-server run"))?;
        let base = runs.first().map_or(run.rows_per_sec, |r| r.rows_per_sec);
        println!(
            "{} servers: {:.0} rows/s ({:.2}x the first size), p99 put {} µs, {} flushes, {} compactions; \
             regions per server {:?}, user MB per server {:?}",
            n,
            run.rows_per_sec,
            run.rows_per_sec / base,
            run.put_p99_us,
            run.flushes,
            run.compactions,
            run.regions_per_server,
            run.user_mb_per_server.iter().map(|m| (m * 10.0).round() / 10.0).collect::<Vec<_>>()
        );
        if let Some(f) = &run.failover {
            println!(
                "  failover: server {n} SIGKILLed {:.1} s into the writes; every region open again {:.2} s later \
                 (session timeout {} ms); longest client batch {:.0} ms, {} retries; {} distinct keys written, \
                 {} lost",
                f.killed_at_secs,
                f.regions_open_again_secs,
                args.session_timeout_ms,
                f.longest_batch_ms,
                f.retries,
                f.distinct_keys,
                f.lost_keys
            );
        }
        runs.push(run);
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({
            "experiment": "scale-out",
            "settings": {
                "rows": preset.workload.ops, "key_space": preset.workload.key_space, "threads": preset.threads,
                "batch_bytes": preset.batch_bytes, "regions": preset.regions, "policy": args.policy,
                "dist": args.dist, "memstore_bytes_per_server": preset.memstore_bytes,
                "region_flush_size": preset.region_flush_size, "scale": args.scale,
                "session_timeout_ms": args.session_timeout_ms, "kill_after_secs": args.kill_after_secs,
                "durability": format!("{:?}", preset.durability),
                "commit": bench::settings::GIT_COMMIT,
            },
            "runs": runs,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// The run of one cluster size, in a directory of its own.
fn one_size(preset: &Preset, args: &ScaleOutArgs, n: usize) -> anyhow::Result<SizeRun> {
    let dir = tempfile::tempdir().context("a directory for the cluster")?;
    let root = dir.path().join("root");
    create_table(&root, preset, &args.policy)?;
    let zk = LocalZooKeeper::start(&dir.path().join("zookeeper"))?;
    let url = zk.url("/accordion");
    let master = Master::start(MasterConfig {
        cluster: url.parse()?,
        http_addr: "127.0.0.1:0".parse()?,
        session_timeout: Duration::from_millis(args.session_timeout_ms),
        balancer_period: Some(Duration::from_millis(500)),
        advertised_http: None,
        admit: None,
        root: Some(format!("file://{}", root.display())),
    })?;
    let settings = [
        format!("memory_budget={}", (preset.memstore_bytes as f64 / 0.4) as u64),
        format!("memstore_flush_size={}", preset.region_flush_size),
        format!("wal_roll_size={}", preset.wal_roll_size),
    ];
    let mut extra: Vec<String> = settings.iter().flat_map(|s| ["--set".to_string(), s.clone()]).collect();
    extra.extend(["--log-level".to_string(), "warn".to_string()]);
    let mut servers: Vec<ServerChild> = Vec::with_capacity(n);
    let root_uri = format!("file://{}", root.display());
    let started = (|| -> anyhow::Result<SizeRun> {
        for i in 0..n {
            let log = dir.path().join(format!("server-{}.log", i + 1));
            let session = args.session_timeout_ms;
            servers.push(spawn_server(&url, &root_uri, ["127.0.0.1:0"; 3], session, &extra, &log)?);
        }
        let each = preset.regions / n;
        let spread = Instant::now();
        loop {
            let open: Vec<usize> = servers.iter().map(|s| open_regions(&s.http)).collect();
            if open.iter().sum::<usize>() == preset.regions && open.iter().all(|r| *r >= each && *r <= each + 1) {
                break;
            }
            if spread.elapsed() > Duration::from_secs(60) {
                bail!("the regions did not spread over the servers in 60 s: {open:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let list: Vec<ClusterServer> =
            servers.iter().map(|s| ClusterServer { thrift: s.thrift.clone(), http: s.http.clone() }).collect();
        let before: Vec<_> = list.iter().map(|s| server_counters(&s.http)).collect();
        let engine = ClusterEngine::open(list.clone(), preset.workload.fields)?;
        let kill = args.kill_after_secs.filter(|_| n >= 2);
        let victim = servers[n - 1].child.id();
        let survivors: Vec<String> = list[..n - 1].iter().map(|s| s.http.clone()).collect();
        let (result, reopened) = std::thread::scope(|scope| {
            let watcher = kill
                .map(|after| scope.spawn(move || kill_and_time_reopening(victim, after, &survivors, preset.regions)));
            let result = bench::driver::run(&engine, &preset.workload, preset.threads, preset.batch_bytes, None);
            (result, watcher.map(|w| w.join().expect("the failover watcher")))
        });
        let result = result?;
        let counters = engine.counters();
        let retries = engine.retries();
        engine.finish()?;
        let live = if kill.is_some() { &list[..n - 1] } else { &list[..] };
        let failover = match (kill, reopened) {
            (Some(after), Some(reopened)) => {
                if result.seconds <= after {
                    bail!(
                        "the writes ended {:.1} s in, before the kill at {after} s: no failover under load was \
                         measured; give a smaller --kill-after-secs or a larger --scale",
                        result.seconds
                    );
                }
                let (distinct_keys, found) = (distinct_keys(&preset.workload), count_rows(&live[0].thrift)?);
                Some(Failover {
                    killed_at_secs: after,
                    regions_open_again_secs: reopened?,
                    longest_batch_ms: result.put_latency_us.max() as f64 / 1000.0,
                    retries,
                    distinct_keys,
                    lost_keys: distinct_keys.saturating_sub(found),
                })
            }
            _ => None,
        };
        let user_mb_per_server = list
            .iter()
            .zip(&before)
            .map(|(s, b)| server_counters(&s.http).since(b).user_bytes as f64 / 1048576.0)
            .collect();
        Ok(SizeRun {
            servers: n,
            rows: result.ops,
            seconds: result.seconds,
            rows_per_sec: result.ops as f64 / result.seconds,
            put_p99_us: result.put_latency_us.value_at_quantile(0.99),
            flushes: counters.flushes,
            compactions: counters.compactions,
            regions_per_server: servers.iter().map(|s| open_regions(&s.http)).collect(),
            user_mb_per_server,
            failover,
        })
    })();
    stop_servers(&mut servers);
    master.shutdown()?;
    drop(zk);
    started
}

/// SIGKILLs process `pid` `after` seconds from now, then returns the
/// seconds until the servers at `survivors` hold every one of `regions`
/// regions open between them.
fn kill_and_time_reopening(pid: u32, after: f64, survivors: &[String], regions: usize) -> anyhow::Result<f64> {
    std::thread::sleep(Duration::from_secs_f64(after));
    let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
    if !killed.success() {
        bail!("kill -KILL {pid} failed");
    }
    let at = Instant::now();
    loop {
        // At least: a region may split meanwhile.
        if survivors.iter().map(|h| open_regions(h)).sum::<usize>() >= regions {
            return Ok(at.elapsed().as_secs_f64());
        }
        if at.elapsed() > Duration::from_secs(300) {
            bail!("the killed server's regions were not open again 300 s after the kill");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The distinct keys `workload` writes.
fn distinct_keys(workload: &bench::workload::Workload) -> u64 {
    let keys = workload.key_source();
    let mut seen = std::collections::HashSet::new();
    let mut buf = [0u8; 32];
    for i in (0..workload.ops).filter(|i| !workload.is_read(*i)) {
        let n = keys.key(i, &mut buf);
        seen.insert(buf[..n].to_vec());
    }
    seen.len() as u64
}

/// The rows of the bench table, counted by a key-only scan through the
/// server at `thrift` (which reads every region where it is held).
fn count_rows(thrift: &str) -> anyhow::Result<u64> {
    use server::thrift::client::{THbaseSyncClient, connect, error_message};
    let fail = |e: thrift::Error| anyhow::anyhow!("counting the rows through {thrift}: {}", error_message(&e));
    let mut c = connect(thrift, false, false).map_err(fail)?;
    // (TScan::default() is Thrift's defaults: a timestamp of 0, which would
    // read nothing.)
    let filter = b"FirstKeyOnlyFilter() AND KeyOnlyFilter()".to_vec();
    let scan = server::thrift::hbase_thrift::TScan::new(None, None, None, None, None, filter, None, None, None);
    let id = c.scanner_open_with_scan(b"usertable".to_vec(), scan, Default::default()).map_err(fail)?;
    let mut rows = 0u64;
    loop {
        let got = c.scanner_get_list(id, 5000).map_err(fail)?;
        if got.is_empty() {
            break;
        }
        rows += got.len() as u64;
    }
    c.scanner_close(id).map_err(fail)?;
    Ok(rows)
}

/// The bench table, pre-split, made on the root before any server starts.
fn create_table(root: &Path, preset: &Preset, policy: &str) -> anyhow::Result<()> {
    let store = Store::open(root, StoreOptions { background: false, ..StoreOptions::default() })?;
    let mut family = FamilyDescriptor::new("f");
    family.memstore_policy = policy.to_string();
    family.inmemory_flush_share = Some(preset.inmemory_flush_share);
    family.pipeline_segments_limit = preset.pipeline_segments_limit;
    let mut desc = TableDescriptor::new("usertable", vec![family]);
    desc.durability = preset.durability;
    store.create_table(desc, &preset.split_keys())?;
    store.close()?;
    Ok(())
}

/// How many regions the server at `http` has open.
fn open_regions(http: &str) -> usize {
    bench::server_status::read_status(http).map_or(0, |s| s.open_regions().count())
}
