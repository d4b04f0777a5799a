//! `accordion`: the one binary of Accordion KV.

mod bench_cmd;
mod cluster_cmd;
mod counting_alloc;
mod inspect;
mod logging;
mod malloc_tuning;
mod master_cmd;
mod server_cmd;
mod shell;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: counting_alloc::CountingAllocator = counting_alloc::CountingAllocator;

#[derive(Parser, Debug)]
#[command(name = "accordion", version, about = "Accordion KV: an HBase-style LSM store with an in-memory LSM memstore")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: logging::LogArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load generators and experiments.
    Bench {
        #[command(subcommand)]
        bench: BenchCommand,
    },
    /// A cluster on this machine: ZooKeeper, a master and region servers.
    Cluster {
        #[command(subcommand)]
        cluster: cluster_cmd::ClusterCommand,
    },
    /// Print a store file's metadata (and cells).
    Inspect(inspect::InspectArgs),
    /// The cluster's master: elects an active master through ZooKeeper and
    /// follows the region servers.
    Master(master_cmd::MasterArgs),
    /// Serve the HBase Thrift v1 API (and HTTP metrics and status).
    Server(server_cmd::ServerArgs),
    /// HBase shell's everyday commands against a server.
    Shell(shell::ShellArgs),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Insert rows into the memstore under every policy and layout.
    Memstore(bench_cmd::memstore_bench::MemstoreBenchArgs),
    /// The paper's write-only shape through the embedded store, per policy.
    Write(bench_cmd::write_bench::WriteBenchArgs),
    /// Run presets (the papers' experiments) on the chosen engines.
    Run(bench_cmd::run_cmd::RunArgs),
    /// The write stall while a big region splits.
    Split(bench_cmd::split_bench::SplitBenchArgs),
    /// The paper's write shape through Thrift against clusters of 1, 2, 3… region servers.
    ScaleOut(bench_cmd::scale_out::ScaleOutArgs),
    /// The master and ZooKeeper against N emulated region servers and R regions.
    Scale(bench_cmd::scale_emulator::ScaleArgs),
    /// YCSB through HBase's Java client against accordion server and real HBase 2.6.4.
    Ycsb(bench_cmd::ycsb_cmd::YcsbArgs),
}

fn main() -> anyhow::Result<()> {
    malloc_tuning::fix_mmap_threshold();
    let cli = Cli::parse();
    // The trimmer is for processes that run a store (their memstores and
    // jobs free megabytes all the time); the master and the shell hold
    // little, and a trim every 100 ms was 6 % of an idle master's CPU
    // with 1,000 servers reporting (perf, issue 55).
    if !matches!(cli.command, Command::Master(_) | Command::Shell(_)) {
        malloc_tuning::start_trimmer();
    }
    // The bench prints tables on stdout: the store's info events (a line
    // per flush and WAL roll) would drown them on a terminal, so it logs
    // warnings unless asked for more.
    let default_level = if matches!(cli.command, Command::Bench { .. }) { "warn" } else { "info" };
    let log = logging::init(&cli.log, default_level)?;
    if matches!(
        cli.command,
        Command::Bench { bench: BenchCommand::Memstore(_) | BenchCommand::Write(_) | BenchCommand::Run(_) }
    ) {
        // The benches that report allocations per operation.
        counting_alloc::start();
    }
    match cli.command {
        Command::Bench { bench: BenchCommand::Memstore(args) } => {
            bench_cmd::memstore_bench::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::Write(args) } => {
            bench_cmd::write_bench::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::Run(args) } => {
            bench_cmd::run_cmd::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::Ycsb(args) } => {
            bench_cmd::ycsb_cmd::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::Split(args) } => {
            bench_cmd::split_bench::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::ScaleOut(args) } => {
            bench_cmd::scale_out::run(&args)?;
        }
        Command::Bench { bench: BenchCommand::Scale(args) } => {
            bench_cmd::scale_emulator::run(&args)?;
        }
        Command::Cluster { cluster } => cluster_cmd::run(&cluster)?,
        Command::Inspect(args) => inspect::run(&args)?,
        Command::Master(args) => master_cmd::run(&args)?,
        Command::Server(args) => server_cmd::run(&args, &log)?,
        Command::Shell(args) => shell::run(&args)?,
    }
    Ok(())
}
