//! Each embedded run of `accordion bench run` in a child process of its own
//! (the default; `--in-process` turns it off).
//!
//! Why: a run's peak RSS is compared with its memstore budget (issue 28's
//! goal is ≤ 1.3× per run). In one process a run inherits what the runs
//! before it grew — the chunk pool keeps every chunk it made, malloc's
//! arenas their free pages — so a later run's resident set says as much
//! about its predecessors as about itself. A child starts from nothing.
//!
//! How: the parent runs this binary again with its own arguments plus
//! `--child-job I --child-report FILE`; the child plans the same schedule,
//! runs only its I-th job, writes the run's report as JSON to FILE and
//! exits. Its stderr (warnings, logs) goes to the parent's.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use bench::report::RunReport;

/// The arguments only a child gets.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ChildArgs {
    /// Internal: run only this job of the schedule and write its report
    /// to --child-report (the parent passes both).
    #[arg(long, hide = true, requires = "child_report")]
    pub child_job: Option<usize>,
    #[arg(long, hide = true)]
    pub child_report: Option<PathBuf>,
}

/// Runs job `index` in a child process and returns its report.
pub fn run_in_child(index: usize) -> anyhow::Result<RunReport> {
    let exe = std::env::current_exe().context("find this binary to run a child")?;
    let report = tempfile::Builder::new().prefix("bench-run-").suffix(".json").tempfile()?.into_temp_path();
    let status = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .arg("--child-job")
        .arg(index.to_string())
        .arg("--child-report")
        .arg(&*report)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("start {}", exe.display()))?;
    if !status.success() {
        bail!("the child process running job {index} failed ({status}); its errors are above");
    }
    let text = std::fs::read_to_string(&report).with_context(|| format!("read {}", report.display()))?;
    serde_json::from_str(&text).with_context(|| format!("the child's report {}", report.display()))
}

/// In the child: runs job `index` of `jobs` with `run` and writes its
/// report where the parent asked.
pub fn serve_child(
    child: &ChildArgs,
    index: usize,
    jobs: usize,
    run: impl FnOnce(usize) -> anyhow::Result<RunReport>,
) -> anyhow::Result<Vec<RunReport>> {
    let Some(path) = &child.child_report else { bail!("--child-job needs --child-report") };
    if index >= jobs {
        bail!("--child-job {index}: the schedule has {jobs} jobs");
    }
    let report = run(index)?;
    std::fs::write(path, serde_json::to_string(&report)?).with_context(|| format!("write {}", path.display()))?;
    Ok(vec![report])
}
