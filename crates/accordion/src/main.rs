//! `accordion`: the one binary of Accordion KV.

mod bench_cmd;
mod counting_alloc;
mod inspect;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: counting_alloc::CountingAllocator = counting_alloc::CountingAllocator;

#[derive(Parser, Debug)]
#[command(name = "accordion", version, about = "Accordion KV: an HBase-style LSM store with an in-memory LSM memstore")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load generators and experiments.
    Bench {
        #[command(subcommand)]
        bench: BenchCommand,
    },
    /// Print a store file's metadata (and cells).
    Inspect(inspect::InspectArgs),
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Insert rows into the memstore under every policy and layout.
    Memstore(bench_cmd::memstore_bench::MemstoreBenchArgs),
    /// The paper's write-only shape through the embedded store, per policy.
    Write(bench_cmd::write_bench::WriteBenchArgs),
    /// Run presets (the papers' experiments) on the chosen engines.
    Run(bench_cmd::run_cmd::RunArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
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
        Command::Inspect(args) => inspect::run(&args)?,
    }
    Ok(())
}
