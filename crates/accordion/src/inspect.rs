//! `accordion inspect FILE`: prints a store file's metadata and, with
//! `--cells`, its cells — for operators looking at what is on disk.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use store::fs::LocalFs;
use store::storefile::{Reference, StoreFileReader};

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
    let is_reference = args.file.file_name().is_some_and(|n| Reference::is_reference_name(&n.to_string_lossy()));
    let reader = if is_reference {
        let reference = Reference::read(fs.as_ref(), &args.file)?;
        let family_dir = args.file.parent().context("a reference lives in a family directory")?;
        let target = reference.target(family_dir)?;
        StoreFileReader::open_half(fs, &args.file, &target, reference.half, 0, None)
    } else {
        StoreFileReader::open(fs, &args.file, 0, None)
    }
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
