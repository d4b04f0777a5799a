//! `accordion inspect FILE`: prints a store file's metadata and, with
//! `--cells`, its cells — for operators looking at what is on disk.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use store::fs::LocalFs;
use store::storefile::StoreFileReader;

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// A store file (`*.sf` under <data dir>/data/<table>/<region>/<family>/),
    /// or a split daughter's reference (`*.ref`: the half of its parent's
    /// file that the daughter reads).
    pub file: PathBuf,
    /// Also print the cells.
    #[arg(long)]
    pub cells: bool,
    /// At most this many cells.
    #[arg(long)]
    pub limit: Option<u64>,
}

fn printable(bytes: &[u8]) -> String {
    bytes.iter().flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect()
}

pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let fs: Arc<dyn store::fs::FileSystem> = Arc::new(LocalFs);
    let reader = StoreFileReader::open_listed(fs, &args.file, 0, None)
        .with_context(|| format!("open {}", args.file.display()))?;
    println!("{}", reader.describe());
    if args.cells {
        for (i, cell) in reader.cells().enumerate() {
            if args.limit.is_some_and(|l| i as u64 >= l) {
                break;
            }
            let c = cell.with_context(|| format!("read {}", args.file.display()))?;
            println!(
                "{} {}:{} ts={} type={:?} seq={} value={}",
                printable(&c.row),
                printable(&c.family),
                printable(&c.qualifier),
                c.timestamp,
                c.cell_type,
                c.seq,
                printable(&c.value)
            );
        }
    }
    Ok(())
}
