//! `accordion`: the one binary of Accordion KV.

mod bench;
mod counting_alloc;

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
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Insert rows into the memstore under every policy and layout.
    Memstore(bench::memstore_bench::MemstoreBenchArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench { bench: BenchCommand::Memstore(args) } => {
            bench::memstore_bench::run(&args)?;
        }
    }
    Ok(())
}
